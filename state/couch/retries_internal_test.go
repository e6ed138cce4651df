package couch

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cenkalti/backoff/v4"
)

var errBusy = errors.New("busy")

// failing returns an op that fails with errBusy until it has been called
// n times, then succeeds (n < 0: never), and the times of its calls.
func failing(n int) (func() error, *[]time.Time) {
	var calls []time.Time
	return func() error {
		calls = append(calls, time.Now())
		if n < 0 || len(calls) <= n {
			return errBusy
		}
		return nil
	}, &calls
}

func TestRetries_SucceedsAfterTransientFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		op, calls := failing(2)
		if err := retries(context.Background(), httpTries, op); err != nil {
			t.Fatalf("retries = %v, want success on the third try", err)
		}
		if len(*calls) != 3 {
			t.Errorf("%d calls, want 3", len(*calls))
		}
	})
}

// A request is tried httpTries times, a conflict round conflictTries
// times; then the last error comes back.
func TestRetries_StopsAtTries(t *testing.T) {
	for _, tries := range []uint64{httpTries, conflictTries} {
		synctest.Test(t, func(t *testing.T) {
			op, calls := failing(-1)
			if err := retries(context.Background(), tries, op); !errors.Is(err, errBusy) {
				t.Fatalf("retries = %v, want the last error", err)
			}
			if len(*calls) != int(tries) {
				t.Errorf("%d calls, want %d", len(*calls), tries)
			}
		})
	}
}

// The waits grow by half each time from 50 ms, each drawn within ±50% of
// its nominal value, and stop growing at 2 s.
func TestRetries_WaitsGrowWithJitterUpToMax(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		op, calls := failing(-1)
		_ = retries(context.Background(), 13, op)
		nominal, max := 50*time.Millisecond, 2*time.Second
		distinct := map[time.Duration]bool{}
		for i := 1; i < len(*calls); i++ {
			w := (*calls)[i].Sub((*calls)[i-1])
			if w < nominal/2 || w > nominal*3/2 {
				t.Errorf("wait %d is %v, want within ±50%% of %v", i, w, nominal)
			}
			distinct[w] = true
			nominal = min(nominal*3/2, max)
		}
		if len(*calls) != 13 || len(distinct) < 6 || nominal != max {
			t.Errorf("%d calls, %d distinct waits, last nominal %v; want 13 with jitter, up to %v", len(*calls), len(distinct), nominal, max)
		}
	})
}

// An error marked backoff.Permanent is not tried again, and comes back
// without its mark.
func TestRetries_Permanent(t *testing.T) {
	bad := errors.New("bad request")
	for name, tc := range map[string]struct{ err, want error }{
		"marked":                 {backoff.Permanent(bad), bad},
		"wrapped, then marked":   {backoff.Permanent(fmt.Errorf("build: %w", bad)), nil},
		"marked nil is no error": {backoff.Permanent(nil), nil},
	} {
		t.Run(name, func(t *testing.T) {
			calls := 0
			err := retries(context.Background(), httpTries, func() error { calls++; return tc.err })
			if calls != 1 {
				t.Errorf("%d calls, want 1", calls)
			}
			switch {
			case tc.err == nil && err != nil:
				t.Errorf("retries = %v, want nil", err)
			case tc.err != nil && (!errors.Is(err, bad) || err.Error() != tc.err.Error()):
				t.Errorf("retries = %v; want %v", err, tc.err)
			case tc.want != nil && err != tc.want:
				t.Errorf("retries = %#v, want the error without its mark", err)
			}
		})
	}
}

// A context that ends during a wait ends the retries at once with its
// error, and one that has ended stops them.
func TestRetries_HonoursContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		op, calls := failing(-1)
		go func() { time.Sleep(10 * time.Millisecond); cancel() }() // during the first wait (25 ms at least)
		start := time.Now()
		if err := retries(ctx, 1000, op); !errors.Is(err, context.Canceled) {
			t.Errorf("retries = %v, want context.Canceled", err)
		}
		if len(*calls) != 1 || time.Since(start) != 10*time.Millisecond {
			t.Errorf("%d calls, returned after %v; want 1 call, returned when ctx ended", len(*calls), time.Since(start))
		}

		ctx, cancel = context.WithCancel(context.Background())
		n := 0
		err := retries(ctx, conflictTries, func() error { n++; cancel(); return errBusy })
		if !errors.Is(err, context.Canceled) || n != 1 {
			t.Errorf("retries = %v after %d calls, want context.Canceled after 1", err, n)
		}
	})
}
