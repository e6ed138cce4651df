package cmd

import (
	"fmt"
	"io"
	"math"
	"os"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"
)

// Modes of the progress display (--progress).
const (
	progressOff   = iota // nothing: the log alone
	progressPlain        // a plain line per update, without control characters
	progressLive         // live lines redrawn at the bottom of the terminal
)

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// console is what a command shows while it works. Live, on a terminal, it
// keeps a few lines (liveLine) at the bottom of standard error and prints
// the log, and standard output when it is the same terminal, above them
// (mpb redraws the lines below what was printed). Plain, it prints a
// progress line now and then. Off, it shows nothing.
type console struct {
	g    *Globals
	mode int

	mu      sync.Mutex
	p       *mpb.Progress // nil until shown, and once closed
	lines   []*liveLine
	timer   *time.Timer
	closed  bool
	log     *switchWriter // the log's output while the console is open
	stdout  *switchWriter // standard output, when it is the terminal
	restore func()
}

// sameTerminal reports whether a and b are both terminals (the same one,
// as far as a command can tell: an operator's shell gives both).
func sameTerminal(a, b io.Writer) bool { return isTerminal(a) && isTerminal(b) }

// live reports whether the console draws live lines.
func (c *console) live() bool { return c.mode == progressLive }

// plain reports whether the console prints plain progress lines.
func (c *console) plain() bool { return c.mode == progressPlain }

// printf prints a plain progress line (in plain mode only).
func (c *console) printf(format string, args ...any) {
	if c.plain() {
		fmt.Fprintf(c.g.Stderr, format+"\n", args...)
	}
}

// show starts drawing the live lines, if not yet drawn: from now on what
// is written to the log, and to standard output on the terminal, is
// printed above them.
func (c *console) show() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.live() || c.p != nil || c.closed {
		return
	}
	out := c.g.Stderr
	c.p = mpb.New(mpb.WithOutput(out), mpb.WithRefreshRate(200*time.Millisecond), mpb.WithWidth(40))
	c.log.set(c.p)
	if c.stdout != nil {
		c.stdout.set(c.p)
	}
	for _, l := range c.lines {
		l.draw(c.p)
	}
}

// line adds a live line named name: text gives its words at each redraw;
// with bar, the line has a bar filled to set's current of total.
func (c *console) line(name string, bar bool, text func() string) *liveLine {
	l := &liveLine{name: name, text: text, withBar: bar, priority: len(c.lines)}
	if !c.live() {
		return l
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, l)
	if c.p != nil {
		l.draw(c.p)
	}
	return l
}

// footer adds a live line with a bar that stays below every other line.
func (c *console) footer(name string, text func() string) *liveLine {
	l := c.line(name, true, text)
	l.priority = math.MaxInt32 // drawn at the next show
	return l
}

// close draws the lines a last time, leaves them on the screen, and gives
// the log and standard output their streams back.
func (c *console) close() {
	if !c.live() {
		return
	}
	if c.timer != nil {
		c.timer.Stop()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	if c.p != nil {
		for _, l := range c.lines {
			l.end(false)
		}
		// writes wait while the last frame is drawn, then go straight out
		c.log.hold()
		if c.stdout != nil {
			c.stdout.hold()
		}
		c.p.Wait()
		c.log.release(c.g.Stderr)
		if c.stdout != nil {
			c.stdout.release(c.stdout.orig)
		}
	}
	c.restore()
}

// liveLine is one line of the live display.
type liveLine struct {
	name     string
	text     func() string
	withBar  bool
	priority int

	mu             sync.Mutex
	bar            *mpb.Bar
	current, total int64
	ended          bool
}

// draw adds the line to p.
func (l *liveLine) draw(p *mpb.Progress) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return
	}
	var style mpb.BarFillerBuilder = mpb.NopStyle()
	if l.withBar {
		style = mpb.BarStyle()
	}
	l.bar = p.New(0, style, mpb.BarPriority(l.priority),
		mpb.PrependDecorators(decor.Name(l.name, decor.WCSyncSpaceR)),
		mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return l.text() })))
	if l.total > 0 {
		l.bar.SetTotal(l.total, false)
		l.bar.SetCurrent(l.current)
	}
}

// set fills the line's bar to current of total.
func (l *liveLine) set(current, total int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.current, l.total = current, total
	if l.bar != nil && !l.ended {
		l.bar.SetTotal(max(total, 1), false)
		l.bar.SetCurrent(current)
	}
}

// end stops the line: drop removes it from the display, else its last
// frame stays.
func (l *liveLine) end(drop bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return
	}
	l.ended = true
	if l.bar != nil {
		l.bar.Abort(drop)
	}
}

// switchWriter sends writes to w, which the console changes: the terminal,
// then the live display (which prints them above its lines), then the
// terminal again. hold makes writers wait while the last frame is drawn.
type switchWriter struct {
	mu   sync.Mutex
	w    io.Writer
	orig io.Writer
}

func (s *switchWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

func (s *switchWriter) set(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.orig == nil {
		s.orig = s.w
	}
	s.w = w
}

func (s *switchWriter) hold() { s.mu.Lock() }

func (s *switchWriter) release(w io.Writer) {
	s.w = w
	s.mu.Unlock()
}
