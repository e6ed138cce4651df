package retry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/asyncstageout/aso/internal/retry"
)

var errBusy = errors.New("busy")

// failing returns an op that fails with errBusy until it has been called
// n times, then succeeds (n < 0: never), and the count of its calls.
func failing(n int) (func() error, *int) {
	calls := 0
	return func() error {
		calls++
		if n < 0 || calls <= n {
			return errBusy
		}
		return nil
	}, &calls
}

// wait is one wait Do announced through Notify.
type wait struct {
	err        error
	d, elapsed time.Duration
}

func recording(p *retry.Policy) *[]wait {
	var ws []wait
	p.Notify = func(err error, d, elapsed time.Duration) { ws = append(ws, wait{err, d, elapsed}) }
	return &ws
}

func TestDo_SucceedsAfterTransientFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		op, calls := failing(2)
		p := retry.Policy{Attempts: 5, Initial: time.Second}
		ws := recording(&p)
		if err := p.Do(context.Background(), op); err != nil {
			t.Fatalf("Do = %v, want success on the third try", err)
		}
		if *calls != 3 || len(*ws) != 2 {
			t.Errorf("%d calls and %d waits, want 3 and 2", *calls, len(*ws))
		}
	})
}

func TestDo_StopsAtAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		op, calls := failing(-1)
		p := retry.Policy{Attempts: 4, Initial: time.Second}
		ws := recording(&p)
		if err := p.Do(context.Background(), op); !errors.Is(err, errBusy) {
			t.Fatalf("Do = %v, want the last error", err)
		}
		if *calls != 4 || len(*ws) != 3 {
			t.Errorf("%d calls and %d waits, want 4 and 3", *calls, len(*ws))
		}
	})
}

// The waits grow by half each time, each drawn within ±50% of its nominal
// value, and stop growing at Max; a wait is announced with the time
// elapsed since the first try.
func TestDo_WaitsGrowWithJitterUpToMax(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		op, _ := failing(-1)
		p := retry.Policy{Attempts: 12, Initial: time.Second, Max: 4 * time.Second}
		ws := recording(&p)
		_ = p.Do(context.Background(), op)
		nominal, spent := time.Second, time.Duration(0)
		distinct := map[time.Duration]bool{}
		for i, w := range *ws {
			if w.d < nominal/2 || w.d > nominal*3/2 {
				t.Errorf("wait %d is %v, want within ±50%% of %v", i, w.d, nominal)
			}
			if w.elapsed != spent {
				t.Errorf("wait %d announced at %v elapsed, want %v (the waits before)", i, w.elapsed, spent)
			}
			spent += w.d
			distinct[w.d] = true
			nominal = min(nominal*3/2, p.Max)
		}
		if len(*ws) != 11 || len(distinct) < 6 {
			t.Errorf("%d waits, %d distinct: %v; want 11 with jitter", len(*ws), len(distinct), *ws)
		}
	})
}

// No try starts later than Elapsed after the first one.
func TestDo_StopsAtElapsed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		op, calls := failing(-1)
		p := retry.Policy{Initial: time.Second, Max: 10 * time.Second, Elapsed: time.Minute}
		ws := recording(&p)
		start := time.Now()
		if err := p.Do(context.Background(), op); !errors.Is(err, errBusy) {
			t.Fatalf("Do = %v, want the last error", err)
		}
		if len(*ws) == 0 || *calls != len(*ws)+1 {
			t.Fatalf("%d calls, %d waits; want retries, one call more than waits", *calls, len(*ws))
		}
		last := (*ws)[len(*ws)-1]
		if end := last.elapsed + last.d; end > p.Elapsed || time.Since(start) != end {
			t.Errorf("last try at %v (Do returned at %v), want at most %v", end, time.Since(start), p.Elapsed)
		}
		if time.Since(start)+p.Max*3/2 < p.Elapsed {
			t.Errorf("gave up at %v, before another wait could have fitted in %v", time.Since(start), p.Elapsed)
		}
	})
}

func TestDo_Permanent(t *testing.T) {
	bad := errors.New("bad request")
	for name, tc := range map[string]struct {
		err, want error
	}{
		"marked":                 {retry.Permanent(bad), bad},
		"marked twice":           {retry.Permanent(retry.Permanent(bad)), bad},
		"marked, then wrapped":   {fmt.Errorf("build: %w", retry.Permanent(bad)), nil},
		"wrapped, then marked":   {retry.Permanent(fmt.Errorf("build: %w", bad)), nil},
		"marked nil is no error": {retry.Permanent(nil), nil},
	} {
		t.Run(name, func(t *testing.T) {
			calls := 0
			err := retry.Policy{Attempts: 5, Initial: time.Hour}.Do(context.Background(), func() error {
				calls++
				return tc.err
			})
			if calls != 1 {
				t.Errorf("%d calls, want 1", calls)
			}
			if tc.err == nil {
				if err != nil {
					t.Errorf("Do = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, bad) || !retry.IsPermanent(tc.err) {
				t.Errorf("Do = %v; want it to wrap %v, and the op's error to be permanent", err, bad)
			}
			if tc.want != nil && err != tc.want {
				t.Errorf("Do = %#v, want the error without its mark", err)
			}
			if err.Error() != tc.err.Error() {
				t.Errorf("Do = %q, want the text %q", err, tc.err)
			}
		})
	}
	if retry.IsPermanent(bad) || retry.IsPermanent(nil) {
		t.Error("an unmarked error is permanent")
	}
}

// A context that ends during a wait ends Do at once with its error, and
// one that has ended stops the retries.
func TestDo_HonoursContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		op, calls := failing(-1)
		p := retry.Policy{Initial: time.Hour}
		p.Notify = func(error, time.Duration, time.Duration) {
			go func() { time.Sleep(time.Second); cancel() }() // the bubble's clock: the context ends a second into the wait
		}
		start := time.Now()
		if err := p.Do(ctx, op); !errors.Is(err, context.Canceled) {
			t.Errorf("Do = %v, want context.Canceled", err)
		}
		if *calls != 1 || time.Since(start) != time.Second {
			t.Errorf("%d calls, returned after %v; want 1 call, returned when ctx ended", *calls, time.Since(start))
		}

		ctx, cancel = context.WithCancel(context.Background())
		calls2 := 0
		err := retry.Policy{Attempts: 3}.Do(ctx, func() error { calls2++; cancel(); return errBusy })
		if !errors.Is(err, context.Canceled) || calls2 != 1 {
			t.Errorf("Do = %v after %d calls, want context.Canceled after 1", err, calls2)
		}
	})
}
