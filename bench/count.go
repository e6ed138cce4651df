package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
)

// CallCount is what one kind of state-store call cost.
type CallCount struct {
	Calls      int64   `json:"calls"`
	Items      int64   `json:"items"`       // transfers passed in or returned
	RoundTrips int64   `json:"round_trips"` // HTTP requests (CouchDB) or fsyncs (memfile)
	Records    int64   `json:"records"`     // journal records appended (memfile)
	Seconds    float64 `json:"seconds"`     // time spent in the calls
}

// phaseOf maps a state-store call (state.Op's name) to the phase of a
// transfer's life it belongs to; "upkeep" is the run lock, lease renewal
// and the drain check.
var phaseOf = map[string]string{
	state.OpNewTransfers.String():      "claim",
	state.OpPrepareSubmits.String():    "submit",
	state.OpSetTransferIDs.String():    "submit",
	state.OpAbortTransfers.String():    "submit",
	state.OpActiveJobs.String():        "monitor",
	state.OpActiveTransfersOf.String(): "monitor",
	state.OpSetTransientState.String(): "monitor",
	state.OpSetTerminalState.String():  "record",
	state.OpAcquireLock.String():       "upkeep",
	state.OpRenewLock.String():         "upkeep",
	state.OpReleaseLock.String():       "upkeep",
	state.OpRenewLeases.String():       "upkeep",
	state.OpList.String():              "upkeep",
	state.OpTakeBack.String():          "upkeep",
	state.OpDestinationRefs.String():   "record",
}

// Phases lists the phases in table order.
var Phases = []string{"claim", "submit", "monitor", "record", "upkeep"}

// counter attributes round trips to the call that made them: the counting
// store puts the call's name in the context, and the counting transport
// (CouchDB) reads it from each request; for memfile the store's fsync and
// record counters are read around each call, one call at a time.
type counter struct {
	mu    sync.Mutex
	calls map[string]*CallCount
	mf    *memfile.Store // nil for CouchDB
	mfMu  sync.Mutex     // serialises memfile calls so the Stats deltas are exact
	trace *traceLog      // nil: no trace (-trace)
}

type callKey struct{}

func newCounter(mf *memfile.Store) *counter {
	return &counter{calls: map[string]*CallCount{}, mf: mf}
}

func (c *counter) get(name string) *CallCount {
	cc := c.calls[name]
	if cc == nil {
		cc = &CallCount{}
		c.calls[name] = cc
	}
	return cc
}

// callStart is what the counting hooks know of a call in progress, in its
// context.
type callStart struct {
	name   string
	before memfile.Stats
}

// hooks count every call of a store (state.Wrap) and its items, time and,
// for memfile, the fsyncs and journal records it made.
func (c *counter) hooks() state.Hooks {
	return state.Hooks{
		Before: func(ctx context.Context, op state.Op) (context.Context, error) {
			cs := &callStart{name: op.String()}
			if c.mf != nil {
				c.mfMu.Lock() // released in After
				cs.before = c.mf.Stats()
			}
			return context.WithValue(ctx, callKey{}, cs), nil
		},
		After: func(ctx context.Context, _ state.Op, call state.Call) {
			cs := ctx.Value(callKey{}).(*callStart)
			c.mu.Lock()
			defer c.mu.Unlock()
			cc := c.get(cs.name)
			cc.Calls++
			cc.Items += int64(call.Items)
			cc.Seconds += call.Took.Seconds()
			if c.mf != nil {
				after := c.mf.Stats()
				c.mfMu.Unlock()
				cc.RoundTrips += after.Fsyncs - cs.before.Fsyncs
				cc.Records += after.JournalRecords - cs.before.JournalRecords
			}
		},
	}
}

// counted returns s counted by c.
func counted(s agent.Store, c *counter) agent.Store { return state.Wrap(s, c.hooks()) }

// snapshot returns a copy of the counts.
func (c *counter) snapshot() map[string]CallCount {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]CallCount, len(c.calls))
	for k, v := range c.calls {
		out[k] = *v
	}
	return out
}

// wrap returns rt counting each HTTP request against the store call in
// its context, and against "open" outside any call.
func (c *counter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		name := "open"
		if cs, ok := r.Context().Value(callKey{}).(*callStart); ok {
			name = cs.name
		}
		c.mu.Lock()
		c.get(name).RoundTrips++
		c.mu.Unlock()
		if c.trace == nil {
			return rt.RoundTrip(r)
		}
		start := time.Now()
		resp, err := rt.RoundTrip(r)
		headers := time.Now()
		if resp == nil || resp.Body == nil {
			c.trace.add(start, headers, headers, name, r, 0)
			return resp, err
		}
		resp.Body = &tracedBody{ReadCloser: resp.Body, done: func() {
			c.trace.add(start, headers, time.Now(), name, r, resp.StatusCode)
		}}
		return resp, err
	})
}

// tracedBody calls done once, when its body has been read to the end or
// closed, whichever comes first.
type tracedBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *tracedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.once.Do(b.done)
	}
	return n, err
}

func (b *tracedBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.done)
	return err
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// traceLog writes one line per HTTP request of the agent (-trace): when it
// started (seconds since the trace began), the store call, the method, the
// path without the database and query, whether documents were asked for,
// the reply's status, the seconds until its headers and the seconds until
// its body was read to the end (or closed). A server that streams its
// reply (CouchDB's views and _all_docs with documents) sends the headers
// first and works on while the body arrives: the second figure is the
// server's time, the gap between the two is not the client's. A line is
// written when its body ends: sort by start_s for the order requests began.
type traceLog struct {
	mu    sync.Mutex
	w     io.Writer
	begin time.Time
}

func newTraceLog(w io.Writer) *traceLog {
	fmt.Fprintln(w, "start_s\tcall\tmethod\tpath\tdocs\tstatus\tseconds\tbody_s")
	return &traceLog{w: w, begin: time.Now()}
}

// add writes the line of request r, started at start, whose reply's
// headers came at headers and whose body was read by end.
func (t *traceLog) add(start, headers, end time.Time, call string, r *http.Request, status int) {
	path := r.URL.Path
	if _, rest, ok := strings.Cut(strings.TrimPrefix(path, "/"), "/"); ok {
		path = "/" + rest // without the database's name
	} else {
		path = "/"
	}
	docs := strings.Contains(r.URL.RawQuery, "include_docs=true")
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, "%.3f\t%s\t%s\t%s\t%t\t%d\t%.4f\t%.4f\n", start.Sub(t.begin).Seconds(), call, r.Method, path, docs, status,
		headers.Sub(start).Seconds(), end.Sub(start).Seconds())
}
