package state

import (
	"context"
	"time"
)

// AgentStore is what an agent needs of a store: the TransferState
// contract, the run lock and List. Wrap decorates it.
type AgentStore interface {
	TransferState
	Locker
	List(ctx context.Context, f Filter) ([]Transfer, error)
}

// Hooks run around every call of a decorated store (Wrap). Either may be
// nil.
type Hooks struct {
	// Before runs before the call op (the method's name, e.g.
	// "PrepareSubmits"). An error is returned instead of making the call,
	// and After does not run. The context it returns is the call's.
	Before func(ctx context.Context, op string) (context.Context, error)
	// After runs once the call op that Before let through has returned,
	// with the context Before returned.
	After func(ctx context.Context, op string, c Call)
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

// Wrap returns s with h run around each of its calls, and around each call
// of every optional ability of s (MultiSubmitter, ActivePager, Confirmer,
// Recoverer, RunRecorder, LinkClaimer, QueueEnder, UserLister, LockAdmin,
// Purger).
//
// The decorator has the methods of AgentStore only; it forwards the
// abilities of s through As, the way errors.As sees through wrapped
// errors: As[MultiSubmitter](Wrap(s, h)) finds the ability exactly when s
// has it (directly or through its own decorators), and returns it with h
// around its calls. One decorator type thus serves every combination of
// abilities, where one type per combination would be 2^9 types, and
// none of them claims an ability its store lacks. Code that may hold a
// decorated store finds abilities with As, never with a type assertion.
func Wrap(s AgentStore, h Hooks) AgentStore { return &decorated{s: s, h: h} }

// As returns the optional ability T of s (an interface such as
// MultiSubmitter): s itself if it has the methods, else the ability a
// decorator (Wrap) forwards from the store it wraps. ok is false if
// neither has it.
func As[T any](s any) (ability T, ok bool) {
	if t, ok := s.(T); ok {
		return t, true
	}
	if f, isDecorator := s.(forwarder); isDecorator {
		ok = f.forward(&ability)
	}
	return ability, ok
}

// forwarder is implemented by the decorator only.
type forwarder interface {
	// forward sets *target (a pointer to an ability interface) to the
	// ability of the wrapped store, decorated, and reports whether the
	// store has it.
	forward(target any) bool
}

type decorated struct {
	s AgentStore
	h Hooks
}

// find sets *p to the ability T of d's store, decorated by mk.
func find[T any](d *decorated, p *T, mk func(T) T) bool {
	a, ok := As[T](d.s)
	if ok {
		*p = mk(a)
	}
	return ok
}

func (d *decorated) forward(target any) bool {
	switch p := target.(type) {
	case *MultiSubmitter:
		return find(d, p, func(a MultiSubmitter) MultiSubmitter { return multiHooked{d, a} })
	case *ActivePager:
		return find(d, p, func(a ActivePager) ActivePager { return pagerHooked{d, a} })
	case *Confirmer:
		return find(d, p, func(a Confirmer) Confirmer { return confirmerHooked{d, a} })
	case *Recoverer:
		return find(d, p, func(a Recoverer) Recoverer { return recovererHooked{d, a} })
	case *RunRecorder:
		return find(d, p, func(a RunRecorder) RunRecorder { return recorderHooked{d, a} })
	case *LinkClaimer:
		return find(d, p, func(a LinkClaimer) LinkClaimer { return linksHooked{d, a} })
	case *QueueEnder:
		return find(d, p, func(a QueueEnder) QueueEnder { return enderHooked{d, a} })
	case *UserLister:
		return find(d, p, func(a UserLister) UserLister { return usersHooked{d, a} })
	case *LockAdmin:
		return find(d, p, func(a LockAdmin) LockAdmin { return lockAdminHooked{d, a} })
	case *Purger:
		return find(d, p, func(a Purger) Purger { return purgerHooked{d, a} })
	case *Configured: // no I/O: nothing to hook
		return find(d, p, func(a Configured) Configured { return a })
	}
	return false
}

// call runs f as the call op with d's hooks around it; items counts what
// it returned.
func call[T any](d *decorated, ctx context.Context, op string, items func(T) int, f func(context.Context) (T, error)) (T, error) {
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
func call0(d *decorated, ctx context.Context, op string, f func(context.Context) error) error {
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

func (d *decorated) NewTransfers(ctx context.Context, limit int) ([]Transfer, error) {
	return call(d, ctx, "NewTransfers", count[Transfer], func(ctx context.Context) ([]Transfer, error) {
		return d.s.NewTransfers(ctx, limit)
	})
}

func (d *decorated) PrepareSubmit(ctx context.Context, ts []Transfer, sid string) ([]Result, error) {
	return call(d, ctx, "PrepareSubmit", count[Result], func(ctx context.Context) ([]Result, error) {
		return d.s.PrepareSubmit(ctx, ts, sid)
	})
}

func (d *decorated) RenewLeases(ctx context.Context, ts []Transfer) ([]Result, error) {
	return call(d, ctx, "RenewLeases", count[Result], func(ctx context.Context) ([]Result, error) {
		return d.s.RenewLeases(ctx, ts)
	})
}

func (d *decorated) SetTransferID(ctx context.Context, cs []Commit, job string) ([]Result, error) {
	return call(d, ctx, "SetTransferID", count[Result], func(ctx context.Context) ([]Result, error) {
		return d.s.SetTransferID(ctx, cs, job)
	})
}

func (d *decorated) AbortTransfers(ctx context.Context, ab []Abort) ([]Result, error) {
	return call(d, ctx, "AbortTransfers", count[Result], func(ctx context.Context) ([]Result, error) {
		return d.s.AbortTransfers(ctx, ab)
	})
}

func (d *decorated) SetTransientState(ctx context.Context, it []Transient) ([]Result, error) {
	return call(d, ctx, "SetTransientState", count[Result], func(ctx context.Context) ([]Result, error) {
		return d.s.SetTransientState(ctx, it)
	})
}

func (d *decorated) ActiveTransfers(ctx context.Context, user string) ([]Job, error) {
	return call(d, ctx, "ActiveTransfers", jobTransfers, func(ctx context.Context) ([]Job, error) {
		return d.s.ActiveTransfers(ctx, user)
	})
}

func (d *decorated) SetTerminalState(ctx context.Context, o []Terminal) ([]Result, error) {
	return call(d, ctx, "SetTerminalState", count[Result], func(ctx context.Context) ([]Result, error) {
		return d.s.SetTerminalState(ctx, o)
	})
}

func (d *decorated) List(ctx context.Context, f Filter) ([]Transfer, error) {
	return call(d, ctx, "List", count[Transfer], func(ctx context.Context) ([]Transfer, error) {
		return d.s.List(ctx, f)
	})
}

func (d *decorated) AcquireLock(ctx context.Context, user, holder string, ttl time.Duration) (Lock, error) {
	return call(d, ctx, "AcquireLock", nil, func(ctx context.Context) (Lock, error) {
		return d.s.AcquireLock(ctx, user, holder, ttl)
	})
}

func (d *decorated) RenewLock(ctx context.Context, l Lock, ttl time.Duration) (Lock, error) {
	return call(d, ctx, "RenewLock", nil, func(ctx context.Context) (Lock, error) {
		return d.s.RenewLock(ctx, l, ttl)
	})
}

func (d *decorated) ReleaseLock(ctx context.Context, l Lock) error {
	return call0(d, ctx, "ReleaseLock", func(ctx context.Context) error { return d.s.ReleaseLock(ctx, l) })
}
