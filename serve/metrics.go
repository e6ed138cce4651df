package serve

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/asyncstageout/aso/state"
)

// The fleet-wide metrics (prefix aso_fleet_, apart from the per-agent
// aso_ series of aso run --metrics-file), each read from the cached
// snapshot of every user.
var (
	descUp = prometheus.NewDesc("aso_fleet_up",
		"1 if the last read of the state store succeeded, 0 if it failed (the other series are then left out).", nil, nil)
	descSnapshot = prometheus.NewDesc("aso_fleet_snapshot_time_seconds",
		"When the counts were read from the store, seconds since the epoch (they are cached for --cache-ttl).", nil, nil)
	descTransfers = prometheus.NewDesc("aso_fleet_transfers",
		"Transfers by user, state, link and error class (failed transfers without one: unknown; a transfer waiting to retry keeps its failure's class).",
		[]string{"user", "state", "link", "error_class"}, nil)
	descOldest = prometheus.NewDesc("aso_fleet_oldest_waiting_seconds",
		"Age of the user's oldest waiting (new) transfer, by its last update; 0 if none.", []string{"user"}, nil)
	descLockHeld = prometheus.NewDesc("aso_fleet_run_lock_held",
		"1 while an agent holds the user's run lock (not released, not expired), with the holder's host; 0 otherwise.", []string{"user", "host"}, nil)
	descLastExit = prometheus.NewDesc("aso_fleet_last_run_exit_code",
		"Exit code of the user's last agent run that released its lock (-1: unknown, released by aso unlock).", []string{"user"}, nil)
	descLastEnd = prometheus.NewDesc("aso_fleet_last_run_end_time_seconds",
		"End of the user's last agent run, seconds since the epoch.", []string{"user"}, nil)
	descInvalidUser = prometheus.NewDesc("aso_fleet_invalid_user_transfers",
		"Transfers whose user is not a user name ("+state.UserRule+"): no agent runs for them, a fleet skips their user, and aso status --all-users lists them as invalid documents. They are left out of the series by user.", nil, nil)
	descVerified = prometheus.NewDesc("aso_fleet_verified_transfers",
		"Transfers by user and what their last verification (aso verify) found: present, missing, differs, unreadable; a transfer retried since is not counted.",
		[]string{"user", "result"}, nil)
	descVerifiedLast = prometheus.NewDesc("aso_fleet_last_verification_time_seconds",
		"When the user's newest verification (aso verify) that still holds was made, seconds since the epoch.", []string{"user"}, nil)
	descFinished = prometheus.NewDesc("aso_fleet_finished_last_hour",
		"Transfers that became done or failed over the last hour (to the minute), by link and state.", []string{"link", "state"}, nil)
)

// collector is the Prometheus collector of a Server: each scrape reads the
// cached snapshot of every user (Counts and Locks: two store calls per
// --cache-ttl, whatever the number of scrapes, users and transfers).
type collector struct{ s *Server }

// Describe sends the descriptions of every metric.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descUp, descSnapshot, descTransfers, descOldest, descLockHeld, descLastExit, descLastEnd, descFinished, descInvalidUser, descVerified, descVerifiedLast} {
		ch <- d
	}
}

// Collect sends the metrics of the current snapshot.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), loadTimeout)
	defer cancel()
	snap, err := c.s.snapshot(ctx, "")
	if err != nil {
		ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, 0)
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(descUp, 1)
	gauge(descSnapshot, float64(snap.At.UnixNano())/1e9)
	type key struct{ user, state, link, class string }
	transfers := map[key]int{}
	oldest := map[string]time.Time{}
	links := map[string]bool{}
	invalid := 0
	for _, g := range snap.Counts.Groups {
		if state.CheckUser(g.User) != nil {
			invalid += g.Count
			continue
		}
		transfers[key{g.User, string(g.State), g.Link, g.ErrorClass}] += g.Count
		links[g.Link] = true
		o, seen := oldest[g.User]
		if !seen {
			oldest[g.User] = time.Time{} // 0 unless a new group says otherwise
		}
		if g.State == state.StateNew && (o.IsZero() || g.Oldest.Before(o)) {
			oldest[g.User] = g.Oldest
		}
	}
	gauge(descInvalidUser, float64(invalid))
	for k, n := range transfers {
		gauge(descTransfers, float64(n), k.user, k.state, k.link, k.class)
	}
	for u, o := range oldest {
		age := 0.0
		if !o.IsZero() {
			age = max(0, snap.At.Sub(o).Seconds())
		}
		gauge(descOldest, age, u)
	}
	for _, l := range snap.Locks {
		held := 0.0
		if l.Held {
			held = 1
		}
		gauge(descLockHeld, held, l.User, l.Host)
		if r := l.LastRun; r != nil {
			gauge(descLastExit, float64(r.ExitCode), l.User)
			gauge(descLastEnd, float64(r.Ended.UnixNano())/1e9, l.User)
		}
	}
	newest := map[string]time.Time{}
	for _, v := range snap.Counts.Verified {
		if state.CheckUser(v.User) != nil {
			continue
		}
		gauge(descVerified, float64(v.Count), v.User, string(v.Result))
		if v.Last.After(newest[v.User]) {
			newest[v.User] = v.Last
		}
	}
	for u, at := range newest {
		gauge(descVerifiedLast, float64(at.UnixNano())/1e9, u)
	}
	last := lastHour(snap.Counts.Minutes, snap.At)
	for link := range links {
		for _, st := range []state.State{state.StateDone, state.StateFailed} {
			gauge(descFinished, float64(last[linkState{link, st}]), link, string(st))
		}
	}
}

type linkState struct {
	link  string
	state state.State
}

// lastHour sums the finished counts by minute of the hour before now.
func lastHour(minutes []state.FinishedCount, now time.Time) map[linkState]int {
	out := map[linkState]int{}
	from := now.Add(-rateWindow).Truncate(time.Minute)
	for _, m := range minutes {
		if !m.At.Before(from) {
			out[linkState{m.Link, m.State}] += m.Count
		}
	}
	return out
}
