package proctest

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"sync"
	"time"
)

// logTail reads a process's log as it grows: it keeps its offset and
// decodes each new line once, so that a waiter for the Nth line of a kind
// looks at each line once, and wakes its waiters when the file is written.
type logTail struct {
	path  string
	watch *fileWatch

	mu     sync.Mutex
	off    int64
	rest   []byte           // a line begun but not ended
	texts  []string         // every complete line, in order
	fields []map[string]any // the same lines decoded; {"raw": text} when not JSON
}

func newLogTail(path string) (*logTail, error) {
	w, err := watchFile(path)
	if err != nil {
		return nil, err
	}
	return &logTail{path: path, watch: w}, nil
}

// lines reads what was written since the last call and returns every line
// so far. ended says the writer has exited: a last line without its
// newline then counts too.
func (l *logTail) lines(ended bool) ([]string, []map[string]any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f, err := os.Open(l.path); err == nil {
		b, _ := io.ReadAll(io.NewSectionReader(f, l.off, 1<<62))
		f.Close()
		l.off += int64(len(b))
		l.rest = append(l.rest, b...)
	}
	for {
		i := bytes.IndexByte(l.rest, '\n')
		if i < 0 {
			break
		}
		l.add(l.rest[:i])
		l.rest = l.rest[i+1:]
	}
	if ended && len(l.rest) > 0 {
		l.add(l.rest)
		l.rest = nil
	}
	return l.texts[:len(l.texts):len(l.texts)], l.fields[:len(l.fields):len(l.fields)]
}

func (l *logTail) add(line []byte) {
	m := map[string]any{}
	if err := json.Unmarshal(line, &m); err != nil {
		m = map[string]any{"raw": string(line)}
	}
	l.texts, l.fields = append(l.texts, string(line)), append(l.fields, m)
}

// scan calls see on each line of the log in order, each once, as they are
// written, until see returns true (scan returns true), or the writer has
// exited (ended is closed) and every line was seen, or d passed (false).
// With d <= 0 it looks at the lines written so far and does not wait.
func (l *logTail) scan(ended <-chan struct{}, d time.Duration, see func(text string, fields map[string]any) bool) bool {
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	last := d <= 0
	for i := 0; ; {
		exited := closed(ended)
		changed := l.watch.changed() // before the read: no write goes unnoticed
		texts, fields := l.lines(exited)
		for ; i < len(texts); i++ {
			if see(texts[i], fields[i]) {
				return true
			}
		}
		if exited || last {
			return false
		}
		select {
		case <-changed:
		case <-ended:
		case <-timeout:
			last = true // one more look at what came meanwhile
		}
	}
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
