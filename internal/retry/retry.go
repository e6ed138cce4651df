// Package retry runs an operation again after it failed, with waits that
// grow exponentially with jitter up to a cap, bounded by a number of tries,
// by the time elapsed and by the caller's context. It decides when to try
// again, never whether: the caller marks an error that another try cannot
// mend with Permanent, and Do returns it at once.
package retry

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Policy says how often and for how long an operation is tried.
type Policy struct {
	// Attempts bounds the tries, the first included (0: no bound).
	Attempts int
	// Initial is the first wait; each next one is 1.5 times longer, and
	// each is drawn at random within ±50% of that (default 500 ms).
	Initial time.Duration
	// Max caps a wait before its jitter (default one minute).
	Max time.Duration
	// Elapsed stops the retries when the next try would start later than
	// this after the first one (0: no bound).
	Elapsed time.Duration
	// Notify, if set, is called before each wait with the error that
	// caused it, the wait, and the time elapsed since the first try.
	Notify func(err error, wait, elapsed time.Duration)
}

// permanent marks an error that another try cannot mend.
type permanent struct{ err error }

func (p *permanent) Error() string { return p.err.Error() }
func (p *permanent) Unwrap() error { return p.err }

// Permanent marks err so that Do returns it without another try. The mark
// is transparent: the error reads and unwraps as err. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanent{err: err}
}

// IsPermanent reports whether err, or an error it wraps, was marked by
// Permanent.
func IsPermanent(err error) bool {
	var p *permanent
	return errors.As(err, &p)
}

// Do runs op until it returns nil or a Permanent error (returned without
// its mark), or until the policy has no try left: it then returns op's last
// error. Once ctx has ended, Do returns ctx's error instead of trying again
// (op itself is expected to honour ctx).
func (p Policy) Do(ctx context.Context, op func() error) error {
	wait, max := p.Initial, p.Max
	if wait <= 0 {
		wait = 500 * time.Millisecond
	}
	if max <= 0 {
		max = time.Minute
	}
	wait = min(wait, max)
	start := time.Now()
	for try := 1; ; try++ {
		err := op()
		if err == nil {
			return nil
		}
		if IsPermanent(err) {
			return unmark(err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		d, elapsed := jitter(wait), time.Since(start)
		if p.Attempts > 0 && try >= p.Attempts || p.Elapsed > 0 && elapsed+d > p.Elapsed {
			return err
		}
		if p.Notify != nil {
			p.Notify(err, d, elapsed)
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(wait*3/2, max)
	}
}

// unmark removes the Permanent marks around err.
func unmark(err error) error {
	for {
		p, ok := err.(*permanent)
		if !ok {
			return err
		}
		err = p.err
	}
}

// jitter returns a duration drawn uniformly within ±50% of d, so that
// clients that failed together do not retry together.
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d+1)
}
