package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/state"
)

// queueCountEvery bounds how often the metrics file's queue gauges are
// counted from the store: each count reads the user's queue summary and
// pages through the failed transfers.
const queueCountEvery = 30 * time.Second

// metricsFile writes `aso run --metrics-file`: the agent's metrics and the
// run's (start, end, exit code, queue), every series labelled with the
// user. It is written at the end of every pass and when the run ends, even
// when it fails before the agent starts.
type metricsFile struct {
	path    string
	g       *Globals
	user    string
	run     *agent.RunMetrics
	store   state.Store    // nil until opened
	agent   *agent.Metrics // nil until the agent exists
	counted time.Time
	ended   bool
}

// newMetricsFile returns the writer of path ("": none) for user's run, its
// start recorded.
func newMetricsFile(path string, g *Globals, user string) *metricsFile {
	if path == "" {
		return nil
	}
	m := &metricsFile{path: path, g: g, user: user, run: agent.NewRunMetrics(user)}
	m.run.Started(time.Now())
	return m
}

// pass writes the file after a pass, counting the queue again when the
// last count is older than queueCountEvery.
func (m *metricsFile) pass(ctx context.Context) {
	if m == nil {
		return
	}
	if time.Since(m.counted) >= queueCountEvery {
		m.count(ctx)
	}
	m.write()
}

// end writes the file with the run's end and exit code, counting the
// queue first when count is set; only its first call counts.
func (m *metricsFile) end(ctx context.Context, err error, count bool) {
	if m == nil || m.ended {
		return
	}
	m.ended = true
	if count {
		m.count(ctx)
	}
	m.run.Ended(time.Now(), ExitCode(err))
	m.write()
}

// count reads the queue from the store, if open, into the run metrics.
func (m *metricsFile) count(ctx context.Context) {
	if m.store == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	now := time.Now()
	sum, err := m.store.Summary(ctx, state.SummaryOptions{User: m.user})
	if err != nil {
		m.g.Log.WithError(err).Warn("metrics: cannot count the queue")
		return
	}
	m.run.Queue(sum, sum.ByErrorClass, now)
	m.counted = now
}

func (m *metricsFile) write() {
	gs := []prometheus.Gatherer{m.run.Gatherer()}
	if m.agent != nil {
		gs = append(gs, m.agent.Gatherer())
	}
	if err := agent.WriteMetrics(m.path, gs...); err != nil {
		if m.g.Log == nil { // the configuration could not be loaded
			fmt.Fprintf(m.g.Stderr, "aso: writing the metrics file failed: %v\n", err)
			return
		}
		m.g.Log.WithError(err).Warn("writing the metrics file failed")
	}
}
