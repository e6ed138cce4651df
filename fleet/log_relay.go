package fleet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/asyncstageout/aso/agent"
)

// logRelay turns the output of an agent into lines of the fleet's log,
// each carrying the agent's user. The agent logs JSON (see slots.args):
// each line keeps its level, message, time and fields; other lines (the
// queue summary, an error message) are logged at info.
type logRelay struct {
	log  *logrus.Logger
	user string
	mu   sync.Mutex
	buf  []byte
	// last is the agent's last error: its final "aso: ..." line (kept for
	// the fleet's report of the agent's end, not logged on its own), else
	// its last log line at error.
	last      string
	finalLine bool
}

// lastError returns the agent's last error, "" if none.
func (r *logRelay) lastError() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// maxRelayLine bounds a line kept whole; a longer one is logged in pieces.
const maxRelayLine = 1 << 20

func (r *logRelay) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, p...)
	for {
		i := bytes.IndexByte(r.buf, '\n')
		if i < 0 {
			if len(r.buf) > maxRelayLine {
				r.line(r.buf)
				r.buf = r.buf[:0]
			}
			return len(p), nil
		}
		r.line(r.buf[:i])
		r.buf = r.buf[i+1:]
	}
}

func (r *logRelay) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.buf) > 0 {
		r.line(r.buf)
		r.buf = nil
	}
}

func (r *logRelay) line(b []byte) {
	b = bytes.TrimRight(b, "\r")
	if len(bytes.TrimSpace(b)) == 0 {
		return
	}
	var fields map[string]any
	if json.Unmarshal(b, &fields) != nil || fields == nil {
		if msg, ok := strings.CutPrefix(string(b), "aso: "); ok {
			r.last, r.finalLine = msg, true // the agent's exit: see fleet.reap
			return
		}
		if r.finalLine { // the rest of a message of several lines
			r.last += " " + strings.TrimSpace(string(b))
			return
		}
		r.log.WithField(agent.FieldUser, r.user).Info(string(b))
		return
	}
	lvl, err := logrus.ParseLevel(fmt.Sprint(fields["level"]))
	if err != nil {
		lvl = logrus.InfoLevel
	}
	msg, _ := fields["msg"].(string)
	e := r.log.WithFields(nil)
	if ts, ok := fields["time"].(string); ok {
		if t, err := time.Parse(time.RFC3339Nano, ts); err == nil {
			e = e.WithTime(t)
		}
	}
	for _, k := range []string{"level", "msg", "time"} {
		delete(fields, k)
	}
	if lvl <= logrus.ErrorLevel && !r.finalLine {
		r.last = msg
	}
	if s, ok := fields[logrus.ErrorKey].(string); ok {
		delete(fields, logrus.ErrorKey)
		e = e.WithError(errors.New(s))
		if lvl <= logrus.ErrorLevel && !r.finalLine {
			r.last += ": " + s
		}
	}
	fields[agent.FieldUser] = r.user
	e.WithFields(fields).Log(lvl, msg)
}
