package cmd

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asyncstageout/aso/internal/eta"
)

// largeAfter is how long an operator command runs before it shows its
// progress: a small one ends first and draws nothing.
const largeAfter = time.Second

// plainEvery bounds how often an operator command prints a plain progress
// line (--progress always, not on a terminal).
const plainEvery = 5 * time.Second

// opView shows the progress of an operator command (enqueue, kill, retry,
// purge): how far it is (done of total, total 0 when not known), a rate
// and an ETA, and what it did so far.
type opView struct {
	con  *console
	line *liveLine
	name string
	unit func(int64) string // how an amount is written: records, bytes

	mu        sync.Mutex
	done      int64
	total     int64
	detail    string
	rate      *eta.Meter
	lastPlain time.Time
}

func newOpView(g *Globals, name string, total int64, unit func(int64) string, progress string) *opView {
	v := &opView{con: g.openConsole(progress, largeAfter), name: name, total: total, unit: unit, rate: eta.New(time.Now(), 0)}
	if v.con.live() {
		v.line = v.con.line(name, total > 0, v.text)
	}
	return v
}

// update records that done (of total) is done, and what was done.
func (v *opView) update(done int64, detail string) {
	now := time.Now()
	v.mu.Lock()
	v.done, v.detail = done, detail
	v.rate.Observe(int(done))
	plain := v.con.plain() && now.Sub(v.lastPlain) >= plainEvery
	if plain {
		v.lastPlain = now
	}
	total := v.total
	v.mu.Unlock()
	if v.line != nil && total > 0 {
		v.line.set(done, total)
	}
	if plain {
		v.con.printf("progress: %s: %s", v.name, v.text())
	}
}

func (v *opView) text() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := time.Now()
	s := v.unit(v.done)
	if v.total > 0 {
		s = fmt.Sprintf("%d%% of %s", v.done*100/v.total, v.unit(v.total))
	}
	if v.detail != "" {
		s += " · " + v.detail
	}
	r, ok := v.rate.PerSecond(now)
	if !ok {
		return s
	}
	s += " · " + v.unit(int64(r)) + "/s"
	if left, ok := v.rate.Left(now, int(v.total-v.done)); ok && v.total > 0 {
		s += " · ETA " + left.String()
	}
	return s
}

// close ends the display (its last frame stays on the terminal).
func (v *opView) close() {
	if v != nil {
		v.con.close()
	}
}

// transfers writes an amount of transfers: "1,234 transfers".
func transfers(n int64) string { return plural(int(n), "transfer") }

// records writes an amount of input records.
func records(n int64) string { return plural(int(n), "record") }

// documents writes an amount of stored documents.
func documents(n int64) string { return plural(int(n), "document") }

// byteSize writes an amount of bytes: "12.3 MiB".
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// enqueueView shows a large enqueue: of a file, the share of it read; of
// a stream, the records read; and what became of them.
type enqueueView struct {
	*opView
	read atomic.Int64 // bytes read from the input
}

// newEnqueueView returns the view of an enqueue of an input of size bytes
// (0: a stream of unknown size); typed: the input is typed on the
// terminal, which shows nothing else.
func newEnqueueView(g *Globals, size int64, typed bool) *enqueueView {
	unit := records
	if size > 0 {
		unit = byteSize
	}
	flag := g.Progress
	if typed {
		flag = "never"
	}
	return &enqueueView{opView: newOpView(g, "enqueue", size, unit, flag)}
}

// count returns r, counting the bytes read from it.
func (v *enqueueView) count(r io.Reader) io.Reader { return &countingReader{r: r, n: &v.read} }

// update shows the tally after a batch was stored.
func (v *enqueueView) update(t enqueueTally) {
	if v == nil {
		return
	}
	done := int64(t.stored + t.queued + t.rejected)
	detail := fmt.Sprintf("%s stored, %s already queued, %s rejected", thousands(t.stored), thousands(t.queued), thousands(t.rejected))
	if v.total > 0 {
		done = v.read.Load()
	}
	v.opView.update(done, detail)
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
