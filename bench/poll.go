package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/asyncstageout/aso/agent"
)

// pollOptions are the flags of -poll.
type pollOptions struct {
	aso       string
	tourSize  int
	interval  time.Duration
	firstPoll time.Duration
	fixedTour bool
}

// pollRow is one line of the polling table.
type pollRow struct {
	scenario, wait string
	passes         int
	status         int // FTS status requests
	fixedStatus    int // those of the fixed wait in the same scenario (0: not compared)
	took           time.Duration
}

// pollMain measures how often the agent polls (-poll): the README's tour
// drained by `aso run` with its default flags, and with a fixed wait as
// before; then the status requests a job that runs an hour on a real FTS
// costs, by the agent's own policy (agent.Poller), against a fixed wait.
func pollMain(args []string) int {
	var o pollOptions
	fs := flag.NewFlagSet("bench -poll", flag.ContinueOnError)
	fs.StringVar(&o.aso, "aso", "bin/aso", "the aso binary")
	fs.IntVar(&o.tourSize, "tour-size", 20, "the tour's N (go run ./internal/demo DIR N; 20 makes 52 requests)")
	fs.DurationVar(&o.interval, "interval", agent.DefaultInterval, "--interval of aso run")
	fs.DurationVar(&o.firstPoll, "first-poll", agent.DefaultFirstPoll, "--first-poll of aso run")
	fs.BoolVar(&o.fixedTour, "fixed-tour", true, "also drain the tour with a fixed wait (--first-poll equal to --interval: two minutes)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	aso, err := asoBinary(o.aso)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	o.aso = aso
	var rows []pollRow
	waits := []time.Duration{o.firstPoll}
	if o.fixedTour {
		waits = append([]time.Duration{o.interval}, waits...)
	}
	for _, first := range waits {
		r, err := tourRun(context.Background(), o, first)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: the tour:", err)
			return 1
		}
		rows = append(rows, r)
	}
	if len(rows) == 2 {
		rows[1].fixedStatus = rows[0].status
	}
	rows = append(rows, hourRows(o.firstPoll, o.interval)...)
	printPollTable(os.Stdout, rows)
	return 0
}

// waitName names the policy of first and interval.
func waitName(first, interval time.Duration) string {
	if first >= interval {
		return "fixed " + interval.String()
	}
	return fmt.Sprintf("%s to %s", first, interval)
}

// tourRun runs the README's tour in a fresh directory, as a user types it,
// and times its `aso run` with --first-poll first.
func tourRun(ctx context.Context, o pollOptions, first time.Duration) (pollRow, error) {
	dir, err := os.MkdirTemp("", "aso-bench-tour.")
	if err != nil {
		return pollRow{}, err
	}
	defer os.RemoveAll(dir)
	env := append(os.Environ(), "ASO_STATE=file:"+filepath.Join(dir, "state.aso"), "ASO_USER=demo",
		"ASO_SITES="+filepath.Join(dir, "sites.yaml"))
	run := func(name string, args ...string) error {
		c := exec.CommandContext(ctx, name, args...)
		c.Env = env
		if out, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("%s %v: %w: %s", name, args, err, out)
		}
		return nil
	}
	if err := run("go", "run", "./internal/demo", dir, fmt.Sprint(o.tourSize)); err != nil {
		return pollRow{}, err
	}
	if err := run(o.aso, "init"); err != nil {
		return pollRow{}, err
	}
	if err := run(o.aso, "enqueue", "-f", filepath.Join(dir, "requests.jsonl")); err != nil {
		return pollRow{}, err
	}
	report := filepath.Join(dir, "report.json")
	start := time.Now()
	if err := run(o.aso, "run", "--report", report, "--interval", o.interval.String(), "--first-poll", first.String()); err != nil {
		return pollRow{}, err
	}
	took := time.Since(start)
	var rep struct {
		Passes         int `json:"passes"`
		FTSStatusCalls int `json:"fts_status_calls"`
	}
	b, err := os.ReadFile(report)
	if err == nil {
		err = json.Unmarshal(b, &rep)
	}
	if err != nil {
		return pollRow{}, fmt.Errorf("the run's report: %w", err)
	}
	return pollRow{scenario: "README tour, --fts local", wait: waitName(first, o.interval),
		passes: rep.Passes, status: rep.FTSStatusCalls, took: took}, nil
}

// hourRows counts the status requests of one job that runs an hour on a
// real FTS, by the agent's policy, and by a fixed wait: its files ending
// together at the end, or one by one all along the hour.
func hourRows(first, interval time.Duration) []pollRow {
	var rows []pollRow
	for _, files := range []int{1, 200} {
		name := "1 h job, files end together"
		if files > 1 {
			name = fmt.Sprintf("1 h job, %d files end in turn", files)
		}
		fixed := hourJob(interval, interval, files)
		adaptive := hourJob(first, interval, files)
		rows = append(rows,
			pollRow{scenario: name, wait: waitName(interval, interval), passes: fixed, status: fixed, took: time.Hour},
			pollRow{scenario: name, wait: waitName(first, interval), passes: adaptive, status: adaptive, fixedStatus: fixed, took: time.Hour})
	}
	return rows
}

// hourJob counts the passes, one status request each, from the submission
// of a job whose files end evenly over an hour (files 1: at its end) to the
// pass that sees it end, waiting as agent.Poller says.
func hourJob(first, interval time.Duration, files int) int {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := agent.NewPoller(first, interval, start)
	now, ended, passes, changed := start, 0, 0, true
	for now.Sub(start) < time.Hour {
		now = now.Add(p.Next(changed, now))
		passes++
		due := min(files, int(int64(files)*int64(now.Sub(start))/int64(time.Hour)))
		changed, ended = due > ended, due
	}
	return passes
}

// printPollTable prints rows as a table.
func printPollTable(w io.Writer, rows []pollRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\twait\tpasses\tFTS status requests\tvs fixed\ttime\t")
	for _, r := range rows {
		vs := ""
		if r.fixedStatus > 0 {
			vs = fmt.Sprintf("%+.1f%%", 100*float64(r.status-r.fixedStatus)/float64(r.fixedStatus))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t\n", r.scenario, r.wait, r.passes, r.status, vs, r.took.Round(100*time.Millisecond))
	}
	tw.Flush()
}
