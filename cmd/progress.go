package cmd

import (
	"fmt"
	"os"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/term"

	"github.com/asyncstageout/aso/agent"
)

// progressView shows a live line per pass on a terminal, and a summary of
// the whole run at the end.
type progressView struct {
	g     *Globals
	live  bool
	start time.Time
	total agent.PassStats
}

func newProgressView(g *Globals, mode string) *progressView {
	live := mode == "always"
	if mode == "auto" {
		if f, ok := g.Stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			live = true
		}
	}
	return &progressView{g: g, live: live, start: time.Now()}
}

func (v *progressView) pass(ps agent.PassStats) {
	v.total.Add(ps)
	t := &v.total
	if v.live {
		fmt.Fprintf(v.g.Stderr, "\r\033[Kpass %d: submitted %d (%d jobs), active %d, done %d, failed %d, retried %d, killed %d",
			t.Pass, t.Submitted, t.Jobs, t.Active, t.Done, t.Failed, t.Retried, t.Killed)
	}
}

// finish logs the summary of the run as one record (stdout stays free of
// it: a cron job that sends both streams to a JSON log gets only JSON).
func (v *progressView) finish() {
	if v.live {
		fmt.Fprintln(v.g.Stderr)
	}
	t := v.total
	v.g.Log.WithFields(logrus.Fields{
		"passes": t.Pass, "duration": time.Since(v.start).Round(time.Millisecond).String(),
		"claimed": t.Claimed, "settled": t.Settled, "submitted": t.Submitted, "fts_jobs": t.Jobs, "done": t.Done,
		"failed": t.Failed, "retried": t.Retried, "lost": t.Lost, "killed": t.Killed, "released": t.Released,
		"moved": t.Moved, "deleted": t.Deleted, "existing": t.Existing,
	}).Info("run summary")
}
