package cmd

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/internal/eta"
	"github.com/asyncstageout/aso/state"
)

// runProgress is where one agent's run stands, as the display shows it:
// the sum of its passes (agent.PassStats, the counts the log's run
// summary, --report and the metrics read too) and the user's queue.
type runProgress struct {
	total agent.PassStats
	// queued counts the user's new and acquired transfers (queueUnknown:
	// not read; queueNoneDue: none of them is due now)
	queued int
	rate   *eta.Meter // of the run's finished transfers since it started
}

// Values of runProgress.queued that are not counts.
const (
	queueUnknown = -1
	queueNoneDue = -2
)

// newRunProgress is the progress of a run that started at start.
func newRunProgress(start time.Time) runProgress {
	return runProgress{queued: queueUnknown, rate: eta.New(start, 0)}
}

// add folds a pass into the run's sum.
func (r *runProgress) add(ps agent.PassStats, now time.Time) {
	r.total.Add(ps)
	r.rate.Observe(r.finished())
}

// finished counts the transfers the run ended for good.
func (r *runProgress) finished() int { return r.total.Done + r.total.Failed + r.total.Killed }

// left counts what is still to do: active in FTS, and queued (when known).
func (r *runProgress) left() int { return r.total.Active + max(r.queued, 0) }

// text says where the run stands: "120 done, 3 failed, 40 active of 200
// claimed · 800 queued · 2.1/s · ETA 6m20s", the rate of the whole run
// since it started, "–" until a transfer has finished (settled: ended by a claim
// instead of claimed, as a failed dependency; counted in failed or killed).
func (r *runProgress) text(now time.Time) string {
	t := &r.total
	var b strings.Builder
	fmt.Fprintf(&b, "%s done, %s failed, %s active of %s claimed", thousands(t.Done), thousands(t.Failed), thousands(t.Active), thousands(t.Claimed))
	if t.Settled > 0 {
		fmt.Fprintf(&b, " + %s settled", thousands(t.Settled))
	}
	if back := t.Retried + t.Lost + t.Released; back > 0 {
		fmt.Fprintf(&b, " (%s back to the queue)", thousands(back))
	}
	if t.Killed > 0 {
		fmt.Fprintf(&b, ", %s killed", thousands(t.Killed))
	}
	switch {
	case r.queued >= 0:
		fmt.Fprintf(&b, " · %s queued", thousands(r.queued))
	case r.queued == queueNoneDue:
		b.WriteString(" · none due in the queue")
	}
	b.WriteString(" · " + r.rate.Text(now, r.left()))
	return b.String()
}

// progressView shows an agent's run: a live line on a terminal, a plain
// line per pass with --progress always elsewhere, and the summary of the
// whole run in the log at the end.
type progressView struct {
	g     *Globals
	con   *console
	line  *liveLine
	start time.Time
	queue *queueCounter // nil: the queue is not read

	mu  sync.Mutex
	run runProgress
}

func newProgressView(g *Globals, con *console, user string) *progressView {
	v := &progressView{g: g, con: con, start: time.Now(), run: newRunProgress(time.Now())}
	if con.live() {
		v.line = con.line(user, true, v.text)
	}
	return v
}

func (v *progressView) text() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.run.text(time.Now())
}

// pass adds a pass to the display, with the queue read again (at most once
// a pass, and not more often than queueReadEvery).
func (v *progressView) pass(ctx context.Context, ps agent.PassStats) {
	queued := queueUnknown
	if v.queue != nil && (v.con.live() || v.con.plain()) {
		// a pass that found nothing to do may be the last: read the queue
		// that it ends with
		queued = v.queue.read(ctx, ps.Active == 0 && ps.Claimed == 0)
	}
	v.mu.Lock()
	v.run.add(ps, time.Now())
	if queued != queueUnknown {
		v.run.queued = queued
	}
	fin, left := v.run.finished(), v.run.left()
	text := v.run.text(time.Now())
	v.mu.Unlock()
	if v.line != nil {
		v.line.set(int64(fin), int64(fin+left))
	}
	v.con.show()
	v.con.printf("progress: %s", text)
}

// finish closes the display and logs the summary of the run as one
// record (stdout stays free of it: a cron job that sends both streams to
// a JSON log gets only JSON).
func (v *progressView) finish() {
	v.con.close()
	v.mu.Lock()
	t := v.run.total
	v.mu.Unlock()
	v.g.Log.WithFields(logrus.Fields{
		"passes": t.Pass, "duration": time.Since(v.start).Round(time.Millisecond).String(),
		"claimed": t.Claimed, "settled": t.Settled, "submitted": t.Submitted, "fts_jobs": t.Jobs, "done": t.Done,
		"failed": t.Failed, "retried": t.Retried, "lost": t.Lost, "killed": t.Killed, "released": t.Released,
		"moved": t.Moved, "deleted": t.Deleted, "already_gone": t.AlreadyGone, "existing": t.Existing,
	}).Info("run summary")
}

// queueReadEvery bounds how often the display reads the queue while passes
// follow each other at once (a backlog claimed a full batch at a time).
const queueReadEvery = 2 * time.Second

// queueCounter reads how many transfers of a user wait in the queue: one
// DueUsers query (one row per user and kind on CouchDB, whatever the
// number of transfers), at most once a pass, and not within queueReadEvery
// of the last read unless now is set.
// A user that DueUsers leaves out has nothing due (queueNoneDue).
type queueCounter struct {
	g      *Globals
	store  state.Admin
	user   string
	last   time.Time
	queued int
}

func (q *queueCounter) read(ctx context.Context, now bool) int {
	if !now && !q.last.IsZero() && time.Since(q.last) < queueReadEvery {
		return q.queued
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	due, err := q.store.DueUsers(ctx, time.Now())
	if err != nil {
		q.g.Log.WithError(err).Debug("progress: cannot read the queue")
		return queueUnknown
	}
	q.last, q.queued = time.Now(), queueNoneDue
	for _, u := range due {
		if u.User == q.user {
			q.queued = u.Queued
		}
	}
	return q.queued
}
