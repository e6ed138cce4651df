package agent_test

import (
	"testing"
	"time"

	"github.com/asyncstageout/aso/agent"
)

var pollStart = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// waits drives p from now through changes (one per pass, in order) and
// returns the waits it gave.
func waits(p *agent.Poller, now time.Time, changes ...bool) []time.Duration {
	var out []time.Duration
	for _, c := range changes {
		w := p.Next(c, now)
		out = append(out, w)
		now = now.Add(w)
	}
	return out
}

func sameWaits(t *testing.T, got []time.Duration, want ...time.Duration) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("waits %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("waits %v, want %v", got, want)
		}
	}
}

const sec = time.Second

func TestPoller_LengthensWhileNothingChanges(t *testing.T) {
	p := agent.NewPoller(2*sec, time.Minute, pollStart)
	got := waits(p, pollStart, true, false, false, false, false, false, false)
	sameWaits(t, got, 2*sec, 4*sec, 8*sec, 16*sec, 32*sec, 60*sec, 60*sec)
}

func TestPoller_ShortensWhenTransfersEnd(t *testing.T) {
	p := agent.NewPoller(2*sec, time.Minute, pollStart)
	got := waits(p, pollStart, false, false, true, false, true)
	sameWaits(t, got, 60*sec, 60*sec, 2*sec, 4*sec, 2*sec)
}

func TestPoller_FixedWhenFirstIsTheInterval(t *testing.T) {
	for _, first := range []time.Duration{0, time.Minute, time.Hour} {
		p := agent.NewPoller(first, time.Minute, pollStart)
		got := waits(p, pollStart, true, false, true)
		sameWaits(t, got, 60*sec, 60*sec, 60*sec)
	}
}

// TestPoller_BudgetOfEarlyPasses: changes at every pass get five waits
// shorter than the interval at once, then one per ten intervals since the
// start, never more.
func TestPoller_BudgetOfEarlyPasses(t *testing.T) {
	p := agent.NewPoller(2*sec, time.Minute, pollStart)
	got := waits(p, pollStart, true, true, true, true, true, true, true)
	sameWaits(t, got, 2*sec, 2*sec, 2*sec, 2*sec, 2*sec, 60*sec, 60*sec)
	// 70 intervals after the start, the budget is 7 passes: two more
	now := pollStart.Add(70 * time.Minute)
	got = waits(p, now, true, true, true)
	sameWaits(t, got, 2*sec, 2*sec, 60*sec)
}

// TestPoller_HourCostsAtMostTenPercentMore: the status requests of a job
// that runs an hour, counted as the passes from its submission to its end,
// against those of a fixed one-minute wait (60), whether its files end
// together at the end or one by one all along the hour.
func TestPoller_HourCostsAtMostTenPercentMore(t *testing.T) {
	const hour = time.Hour
	for _, tc := range []struct {
		name  string
		files int // ending evenly over the hour; 1: at its end
	}{{"together", 1}, {"one by one", 200}, {"every few seconds", 1000}} {
		t.Run(tc.name, func(t *testing.T) {
			p := agent.NewPoller(2*sec, time.Minute, pollStart)
			now, ended, passes := pollStart, 0, 0
			changed := true // the pass that submitted it
			for now.Sub(pollStart) < hour {
				now = now.Add(p.Next(changed, now))
				passes++
				due := int(int64(tc.files) * int64(now.Sub(pollStart)) / int64(hour))
				changed = due > ended
				ended = max(ended, min(due, tc.files))
			}
			if limit := 66; passes > limit || passes <= 60 {
				t.Fatalf("%d status requests over the hour, want more than the fixed wait's 60 and at most %d", passes, limit)
			}
		})
	}
}
