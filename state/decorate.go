package state

import (
	"context"
	"time"
)

// Op names one call of AgentStore, for the hooks of a decorated store
// (Wrap): the write fence, metrics and the bench's counters all decide by
// it, so they cannot disagree about which calls write.
type Op uint8

// The calls of AgentStore.
const (
	OpNewTransfers Op = iota
	OpPrepareSubmits
	OpSetTransferIDs
	OpAbortTransfers
	OpRenewLeases
	OpSetTransientState
	OpSetTerminalState
	OpActiveJobs
	OpActiveTransfersOf
	OpTakeBack
	OpList
	OpAcquireLock
	OpRenewLock
	OpReleaseLock
	OpDestinationRefs
	numOps
)

// opInfo says, per Op, its name in metrics and whether it writes on the
// agent's behalf (the lock calls do not: they are how ownership is kept
// and given up).
var opInfo = [numOps]struct {
	label  string
	writes bool
}{
	OpNewTransfers:      {"new_transfers", true},
	OpPrepareSubmits:    {"prepare_submit", true},
	OpSetTransferIDs:    {"set_transfer_id", true},
	OpAbortTransfers:    {"abort_transfers", true},
	OpRenewLeases:       {"renew_leases", true},
	OpSetTransientState: {"set_transient_state", true},
	OpSetTerminalState:  {"set_terminal_state", true},
	OpActiveJobs:        {"active_jobs", false},
	OpActiveTransfersOf: {"active_transfers_of", false},
	OpTakeBack:          {"take_back", true},
	OpList:              {"list", false},
	OpAcquireLock:       {"acquire_lock", false},
	OpRenewLock:         {"renew_lock", false},
	OpReleaseLock:       {"release_lock", false},
	OpDestinationRefs:   {"destination_refs", false},
}

// Ops returns every Op, in order.
func Ops() []Op {
	out := make([]Op, numOps)
	for i := range out {
		out[i] = Op(i)
	}
	return out
}

// String is the op's name in metrics, e.g. "set_terminal_state".
func (o Op) String() string {
	if o >= numOps {
		return "unknown"
	}
	return opInfo[o].label
}

// Writes reports whether the call writes transfers on the agent's behalf,
// and so must pass the agent's write fence.
func (o Op) Writes() bool { return o < numOps && opInfo[o].writes }

// Hooks run around every call of a decorated store (Wrap). Either may be
// nil.
type Hooks struct {
	// Before runs before the call op. An error is returned instead of
	// making the call, and After does not run. The context it returns is
	// the call's.
	Before func(ctx context.Context, op Op) (context.Context, error)
	// After runs once the call op that Before let through has returned,
	// with the context Before returned.
	After func(ctx context.Context, op Op, c Call)
}

// Call is what After learns of one call.
type Call struct {
	// Items is the number of transfers the call returned or wrote: its
	// results, the transfers it returned or those of the jobs it
	// returned; 0 for the lock calls and ActiveJobs.
	Items int
	Took  time.Duration
	Err   error
}

// Wrap returns s with h run around each of its calls.
func Wrap(s AgentStore, h Hooks) AgentStore { return &decorated{s: s, h: h} }

type decorated struct {
	s AgentStore
	h Hooks
}

// call runs f as the call op with d's hooks around it; items counts what
// it returned.
func call[T any](d *decorated, ctx context.Context, op Op, items func(T) int, f func(context.Context) (T, error)) (T, error) {
	if d.h.Before != nil {
		c, err := d.h.Before(ctx, op)
		if err != nil {
			var zero T
			return zero, err
		}
		ctx = c
	}
	start := time.Now()
	v, err := f(ctx)
	if d.h.After != nil {
		n := 0
		if items != nil {
			n = items(v)
		}
		d.h.After(ctx, op, Call{Items: n, Took: time.Since(start), Err: err})
	}
	return v, err
}

// call0 is call of a method that returns only an error.
func call0(d *decorated, ctx context.Context, op Op, f func(context.Context) error) error {
	_, err := call(d, ctx, op, nil, func(ctx context.Context) (struct{}, error) { return struct{}{}, f(ctx) })
	return err
}

func count[E any](v []E) int { return len(v) }

func jobTransfers(js []Job) int {
	n := 0
	for _, j := range js {
		n += len(j.Transfers)
	}
	return n
}

func resultItems(rs [][]Result) int {
	n := 0
	for _, r := range rs {
		n += len(r)
	}
	return n
}

func (d *decorated) NewTransfers(ctx context.Context, r ClaimRequest) (Claimed, error) {
	return call(d, ctx, OpNewTransfers, func(c Claimed) int { return len(c.Transfers) + len(c.Settled) }, func(ctx context.Context) (Claimed, error) {
		return d.s.NewTransfers(ctx, r)
	})
}

func (d *decorated) PrepareSubmits(ctx context.Context, jobs []PrepareJob) ([][]Result, error) {
	return call(d, ctx, OpPrepareSubmits, resultItems, func(ctx context.Context) ([][]Result, error) {
		return d.s.PrepareSubmits(ctx, jobs)
	})
}

func (d *decorated) SetTransferIDs(ctx context.Context, jobs []CommitJob) ([][]Result, error) {
	return call(d, ctx, OpSetTransferIDs, resultItems, func(ctx context.Context) ([][]Result, error) {
		return d.s.SetTransferIDs(ctx, jobs)
	})
}

func (d *decorated) AbortTransfers(ctx context.Context, ab []Abort) ([]Result, error) {
	return call(d, ctx, OpAbortTransfers, count[Result], func(ctx context.Context) ([]Result, error) {
		return d.s.AbortTransfers(ctx, ab)
	})
}

func (d *decorated) RenewLeases(ctx context.Context, ts []Transfer) ([]Result, error) {
	return call(d, ctx, OpRenewLeases, count[Result], func(ctx context.Context) ([]Result, error) {
		return d.s.RenewLeases(ctx, ts)
	})
}

func (d *decorated) SetTransientState(ctx context.Context, it []Transient) ([]Result, error) {
	return call(d, ctx, OpSetTransientState, count[Result], func(ctx context.Context) ([]Result, error) {
		return d.s.SetTransientState(ctx, it)
	})
}

func (d *decorated) SetTerminalState(ctx context.Context, o []Terminal) ([]Result, error) {
	return call(d, ctx, OpSetTerminalState, count[Result], func(ctx context.Context) ([]Result, error) {
		return d.s.SetTerminalState(ctx, o)
	})
}

func (d *decorated) ActiveJobs(ctx context.Context, user string) ([]JobRef, error) {
	return call(d, ctx, OpActiveJobs, nil, func(ctx context.Context) ([]JobRef, error) {
		return d.s.ActiveJobs(ctx, user)
	})
}

func (d *decorated) ActiveTransfersOf(ctx context.Context, user string, jobs []string) ([]Job, error) {
	return call(d, ctx, OpActiveTransfersOf, jobTransfers, func(ctx context.Context) ([]Job, error) {
		return d.s.ActiveTransfersOf(ctx, user, jobs)
	})
}

func (d *decorated) TakeBack(ctx context.Context, l Lock) ([]Transfer, error) {
	return call(d, ctx, OpTakeBack, count[Transfer], func(ctx context.Context) ([]Transfer, error) {
		return d.s.TakeBack(ctx, l)
	})
}

func (d *decorated) List(ctx context.Context, f Filter) ([]Transfer, error) {
	return call(d, ctx, OpList, count[Transfer], func(ctx context.Context) ([]Transfer, error) {
		return d.s.List(ctx, f)
	})
}

func (d *decorated) AcquireLock(ctx context.Context, user, holder string, ttl time.Duration) (Lock, error) {
	return call(d, ctx, OpAcquireLock, nil, func(ctx context.Context) (Lock, error) {
		return d.s.AcquireLock(ctx, user, holder, ttl)
	})
}

func (d *decorated) RenewLock(ctx context.Context, l Lock, ttl time.Duration) (Lock, error) {
	return call(d, ctx, OpRenewLock, nil, func(ctx context.Context) (Lock, error) {
		return d.s.RenewLock(ctx, l, ttl)
	})
}

func (d *decorated) ReleaseLock(ctx context.Context, l Lock, run *RunRecord) error {
	return call0(d, ctx, OpReleaseLock, func(ctx context.Context) error { return d.s.ReleaseLock(ctx, l, run) })
}

func (d *decorated) DestinationRefs(ctx context.Context, dests []Destination) (map[Destination][]DestRef, error) {
	return call(d, ctx, OpDestinationRefs, nil, func(ctx context.Context) (map[Destination][]DestRef, error) {
		return d.s.DestinationRefs(ctx, dests)
	})
}
