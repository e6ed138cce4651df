package main

import (
	"context"
	"net/http"
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

// phaseOf maps a state-store call to the phase of a transfer's life it
// belongs to; "upkeep" is the run lock, lease renewal and the drain check.
var phaseOf = map[string]string{
	"NewTransfers":      "claim",
	"PrepareSubmit":     "submit",
	"SetTransferID":     "submit",
	"AbortTransfers":    "submit",
	"ActiveTransfers":   "monitor",
	"ActiveJobs":        "monitor",
	"ActiveTransfersOf": "monitor",
	"SetTransientState": "monitor",
	"SetTerminalState":  "record",
	"AcquireLock":       "upkeep",
	"RenewLock":         "upkeep",
	"ReleaseLock":       "upkeep",
	"RenewLeases":       "upkeep",
	"List":              "upkeep",
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

// do runs one store call named name on n items.
func (c *counter) do(ctx context.Context, name string, n func() int, f func(ctx context.Context) error) error {
	ctx = context.WithValue(ctx, callKey{}, name)
	var before memfile.Stats
	if c.mf != nil {
		c.mfMu.Lock()
		defer c.mfMu.Unlock()
		before = c.mf.Stats()
	}
	t0 := time.Now()
	err := f(ctx)
	took := time.Since(t0)
	c.mu.Lock()
	defer c.mu.Unlock()
	cc := c.get(name)
	cc.Calls++
	cc.Items += int64(n())
	cc.Seconds += took.Seconds()
	if c.mf != nil {
		after := c.mf.Stats()
		cc.RoundTrips += after.Fsyncs - before.Fsyncs
		cc.Records += after.JournalRecords - before.JournalRecords
	}
	return err
}

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

// RoundTrip counts one HTTP request against the call in its context.
func (c *counter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		name, _ := r.Context().Value(callKey{}).(string)
		if name == "" {
			name = "open"
		}
		c.mu.Lock()
		c.get(name).RoundTrips++
		c.mu.Unlock()
		return rt.RoundTrip(r)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// countingStore is the agent's store with every call counted.
type countingStore struct {
	s agent.Store
	c *counter
}

var _ agent.Store = countingStore{}

func results(rs *[]state.Result) func() int { return func() int { return len(*rs) } }

func (w countingStore) NewTransfers(ctx context.Context, limit int) (ts []state.Transfer, err error) {
	err = w.c.do(ctx, "NewTransfers", func() int { return len(ts) }, func(ctx context.Context) error {
		ts, err = w.s.NewTransfers(ctx, limit)
		return err
	})
	return ts, err
}

func (w countingStore) PrepareSubmit(ctx context.Context, ts []state.Transfer, sid string) (rs []state.Result, err error) {
	err = w.c.do(ctx, "PrepareSubmit", results(&rs), func(ctx context.Context) error {
		rs, err = w.s.PrepareSubmit(ctx, ts, sid)
		return err
	})
	return rs, err
}

func (w countingStore) RenewLeases(ctx context.Context, ts []state.Transfer) (rs []state.Result, err error) {
	err = w.c.do(ctx, "RenewLeases", results(&rs), func(ctx context.Context) error {
		rs, err = w.s.RenewLeases(ctx, ts)
		return err
	})
	return rs, err
}

func (w countingStore) SetTransferID(ctx context.Context, cs []state.Commit, job string) (rs []state.Result, err error) {
	err = w.c.do(ctx, "SetTransferID", results(&rs), func(ctx context.Context) error {
		rs, err = w.s.SetTransferID(ctx, cs, job)
		return err
	})
	return rs, err
}

func (w countingStore) AbortTransfers(ctx context.Context, as []state.Abort) (rs []state.Result, err error) {
	err = w.c.do(ctx, "AbortTransfers", results(&rs), func(ctx context.Context) error {
		rs, err = w.s.AbortTransfers(ctx, as)
		return err
	})
	return rs, err
}

func (w countingStore) SetTransientState(ctx context.Context, items []state.Transient) (rs []state.Result, err error) {
	err = w.c.do(ctx, "SetTransientState", results(&rs), func(ctx context.Context) error {
		rs, err = w.s.SetTransientState(ctx, items)
		return err
	})
	return rs, err
}

// transfersIn counts the transfers of the jobs *js once the call is done.
func transfersIn(js *[]state.Job) func() int {
	return func() int {
		k := 0
		for _, j := range *js {
			k += len(j.Transfers)
		}
		return k
	}
}

func (w countingStore) ActiveTransfers(ctx context.Context, user string) (js []state.Job, err error) {
	err = w.c.do(ctx, "ActiveTransfers", transfersIn(&js), func(ctx context.Context) error {
		js, err = w.s.ActiveTransfers(ctx, user)
		return err
	})
	return js, err
}

func (w countingStore) SetTerminalState(ctx context.Context, os []state.Terminal) (rs []state.Result, err error) {
	err = w.c.do(ctx, "SetTerminalState", results(&rs), func(ctx context.Context) error {
		rs, err = w.s.SetTerminalState(ctx, os)
		return err
	})
	return rs, err
}

func (w countingStore) List(ctx context.Context, f state.Filter) (ts []state.Transfer, err error) {
	err = w.c.do(ctx, "List", func() int { return len(ts) }, func(ctx context.Context) error {
		ts, err = w.s.List(ctx, f)
		return err
	})
	return ts, err
}

func (w countingStore) AcquireLock(ctx context.Context, user, holder string, ttl time.Duration) (l state.Lock, err error) {
	err = w.c.do(ctx, "AcquireLock", func() int { return 0 }, func(ctx context.Context) error {
		l, err = w.s.AcquireLock(ctx, user, holder, ttl)
		return err
	})
	return l, err
}

func (w countingStore) RenewLock(ctx context.Context, l state.Lock, ttl time.Duration) (nl state.Lock, err error) {
	err = w.c.do(ctx, "RenewLock", func() int { return 0 }, func(ctx context.Context) error {
		nl, err = w.s.RenewLock(ctx, l, ttl)
		return err
	})
	return nl, err
}

func (w countingStore) ReleaseLock(ctx context.Context, l state.Lock) error {
	return w.c.do(ctx, "ReleaseLock", func() int { return 0 }, func(ctx context.Context) error {
		return w.s.ReleaseLock(ctx, l)
	})
}

// countingMulti is a countingStore whose store writes several jobs'
// submissions at once (state.MultiSubmitter), which the agent then uses.
type countingMulti struct {
	countingStore
	m state.MultiSubmitter
}

// countingPaged counts the paged listing of a store that has it
// (state.ActivePager); the counted stores below embed it.
type countingPaged struct {
	p state.ActivePager
	c *counter
}

// countingPager is a countingStore whose store lists active transfers a
// few jobs at a time.
type countingPager struct {
	countingStore
	countingPaged
}

// countingMultiPager has both abilities.
type countingMultiPager struct {
	countingMulti
	countingPaged
}

// counted returns s counted by c, keeping its optional abilities.
func counted(s agent.Store, c *counter) agent.Store {
	cs := countingStore{s, c}
	m, multi := s.(state.MultiSubmitter)
	p, paged := s.(state.ActivePager)
	switch {
	case multi && paged:
		return countingMultiPager{countingMulti{cs, m}, countingPaged{p, c}}
	case multi:
		return countingMulti{cs, m}
	case paged:
		return countingPager{cs, countingPaged{p, c}}
	}
	return cs
}

func (w countingPaged) ActiveJobs(ctx context.Context, user string) (js []state.JobRef, err error) {
	err = w.c.do(ctx, "ActiveJobs", func() int { return 0 }, func(ctx context.Context) error {
		js, err = w.p.ActiveJobs(ctx, user)
		return err
	})
	return js, err
}

func (w countingPaged) ActiveTransfersOf(ctx context.Context, user string, jobs []string) (js []state.Job, err error) {
	err = w.c.do(ctx, "ActiveTransfersOf", transfersIn(&js), func(ctx context.Context) error {
		js, err = w.p.ActiveTransfersOf(ctx, user, jobs)
		return err
	})
	return js, err
}

func jobItems[T any](jobs []T, size func(T) int) func() int {
	return func() int {
		n := 0
		for _, j := range jobs {
			n += size(j)
		}
		return n
	}
}

func (w countingMulti) PrepareSubmits(ctx context.Context, jobs []state.PrepareJob) (rs [][]state.Result, err error) {
	n := jobItems(jobs, func(j state.PrepareJob) int { return len(j.Transfers) })
	err = w.c.do(ctx, "PrepareSubmit", n, func(ctx context.Context) error {
		rs, err = w.m.PrepareSubmits(ctx, jobs)
		return err
	})
	return rs, err
}

func (w countingMulti) SetTransferIDs(ctx context.Context, jobs []state.CommitJob) (rs [][]state.Result, err error) {
	n := jobItems(jobs, func(j state.CommitJob) int { return len(j.Commits) })
	err = w.c.do(ctx, "SetTransferID", n, func(ctx context.Context) error {
		rs, err = w.m.SetTransferIDs(ctx, jobs)
		return err
	})
	return rs, err
}
