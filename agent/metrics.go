package agent

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/state"
)

// Metrics are the agent's Prometheus metrics, written with WriteFile in the
// node_exporter textfile-collector format at the end of every pass.
type Metrics struct {
	reg       *prometheus.Registry
	transfers *prometheus.CounterVec
	failures  *prometheus.CounterVec
	events    *prometheus.CounterVec
	requests  *prometheus.HistogramVec
	errors    *prometheus.CounterVec
	phase     *prometheus.HistogramVec
	active    prometheus.Gauge
	passes    prometheus.Counter
}

// userLabels is the constant label every series of user's agent carries:
// node_exporter refuses the same series from two files, so the files of
// the agents of two users must differ by it.
func userLabels(user string) prometheus.Labels {
	if user == "" {
		return nil
	}
	return prometheus.Labels{"user": user}
}

// NewMetricsFor registers the agent's metrics in a fresh registry, every
// series labelled with user.
func NewMetricsFor(user string) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		transfers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aso_transfers_total", Help: "Transfers ended or sent back, by outcome (done, failed, retried, lost, killed, released; moved: found changed by another writer).",
		}, []string{"outcome"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aso_transfer_failures_total", Help: "Failures recorded (by FTS, at submission or at claim), by outcome (failed, retried) and error class.",
		}, []string{"outcome", "error_class"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aso_events_total", Help: "Agent events: claimed, settled (ended by a claim instead, also counted by outcome), submitted, progress, deleted, already_gone (a copy to delete found missing), delete_failed, taken_back.",
		}, []string{"event"}),
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "aso_request_duration_seconds", Help: "Duration of state-store and FTS requests, by service and operation.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 9),
		}, []string{"service", "op"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aso_request_errors_total", Help: "Failed state-store and FTS requests, by service and operation.",
		}, []string{"service", "op"}),
		phase: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "aso_phase_duration_seconds", Help: "Duration of each phase of a pass.",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 8),
		}, []string{"phase"}),
		active: prometheus.NewGauge(prometheus.GaugeOpts{Name: "aso_active_transfers", Help: "Transfers running in FTS at the last pass."}),
		passes: prometheus.NewCounter(prometheus.CounterOpts{Name: "aso_passes_total", Help: "Passes of the agent loop."}),
	}
	prometheus.WrapRegistererWith(userLabels(user), m.reg).MustRegister(m.transfers, m.failures, m.events, m.requests, m.errors, m.phase, m.active, m.passes)
	return m
}

// Registry returns the registry holding the metrics.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// WriteFile writes the metrics to path atomically (temporary file, rename).
func (m *Metrics) WriteFile(path string) error { return prometheus.WriteToTextfile(path, m.reg) }

// WriteMetrics writes the metrics of every gatherer to path atomically, in
// the node_exporter textfile-collector format.
func WriteMetrics(path string, gs ...prometheus.Gatherer) error {
	return prometheus.WriteToTextfile(path, prometheus.Gatherers(gs))
}

// RunMetrics describe one run of the agent and the queue it works on, for
// a fleet's monitoring: when the run started and ended and how, the queue
// by state, how long the oldest transfer has waited, and the failed
// transfers by class. The run's command sets them; they exist even when a
// run fails before its agent starts.
type RunMetrics struct {
	reg          *prometheus.Registry
	start, end   prometheus.Gauge
	exit         prometheus.Gauge
	queue        *prometheus.GaugeVec
	oldest       prometheus.Gauge
	failed       *prometheus.GaugeVec
	queueUpdated prometheus.Gauge
}

// NewRunMetrics registers the run metrics of user's run in a fresh registry.
func NewRunMetrics(user string) *RunMetrics {
	g := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	r := &RunMetrics{
		reg:   prometheus.NewRegistry(),
		start: g("aso_run_start_time_seconds", "Start of the run, in seconds since the epoch."),
		end:   g("aso_run_end_time_seconds", "End of the run, in seconds since the epoch (0 while it runs)."),
		exit:  g("aso_run_exit_code", "Exit code of the run (-1 while it runs)."),
		queue: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "aso_queue_transfers", Help: "The user's transfers by state, as last counted.",
		}, []string{"state"}),
		oldest: g("aso_oldest_waiting_seconds", "Age of the user's oldest waiting (new) transfer, 0 if none, as last counted."),
		failed: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "aso_failed_transfers", Help: "The user's failed transfers by error class (docs/operators.md, Error classes), as last counted.",
		}, []string{"error_class"}),
		queueUpdated: g("aso_queue_updated_time_seconds", "When the queue gauges were last counted, in seconds since the epoch."),
	}
	r.exit.Set(-1)
	prometheus.WrapRegistererWith(userLabels(user), r.reg).MustRegister(r.start, r.end, r.exit, r.queue, r.oldest, r.failed, r.queueUpdated)
	return r
}

// Gatherer returns what WriteMetrics writes of r.
func (r *RunMetrics) Gatherer() prometheus.Gatherer { return r.reg }

// Gatherer returns what WriteMetrics writes of m.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.reg }

// Started records the start of the run.
func (r *RunMetrics) Started(t time.Time) { r.start.Set(seconds(t)) }

// Ended records the end of the run and its exit code.
func (r *RunMetrics) Ended(t time.Time, code int) {
	r.end.Set(seconds(t))
	r.exit.Set(float64(code))
}

// Queue records the counts of a summary of the user's queue taken at now,
// and the failed transfers by class.
func (r *RunMetrics) Queue(sum state.Summary, failed map[string]int, now time.Time) {
	for _, st := range state.States {
		r.queue.WithLabelValues(string(st)).Set(float64(sum.ByState[st]))
	}
	age := 0.0
	if w := sum.OldestWaiting; w != nil && !w.LastUpdate.IsZero() {
		age = max(0, now.Sub(w.LastUpdate.Time).Seconds())
	}
	r.oldest.Set(age)
	r.failed.Reset()
	for class, n := range failed {
		r.failed.WithLabelValues(class).Set(float64(n))
	}
	r.queueUpdated.Set(seconds(now))
}

func seconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func (m *Metrics) count(event string, n int) {
	if n > 0 {
		m.events.WithLabelValues(event).Add(float64(n))
	}
}

func (m *Metrics) observePass(ps PassStats) {
	m.passes.Inc()
	m.active.Set(float64(ps.Active))
	m.phase.WithLabelValues("submit").Observe(ps.Submit.Seconds())
	m.phase.WithLabelValues("monitor").Observe(ps.Monitor.Seconds())
	m.phase.WithLabelValues("record").Observe(ps.Record.Seconds())
}

func (m *Metrics) observe(service, op string, start time.Time, err error) {
	m.took(service, op, time.Since(start), err)
}

func (m *Metrics) took(service, op string, d time.Duration, err error) {
	m.requests.WithLabelValues(service, op).Observe(d.Seconds())
	if err != nil {
		m.errors.WithLabelValues(service, op).Inc()
	}
}

// instrumentedFTS times every FTS call.
type instrumentedFTS struct {
	FTS
	m *Metrics
}

func (f instrumentedFTS) Submit(ctx context.Context, s fts.Submission) (id string, err error) {
	defer func(t time.Time) { f.m.observe("fts", "submit", t, err) }(time.Now())
	return f.FTS.Submit(ctx, s)
}

func (f instrumentedFTS) Status(ctx context.Context, ids []string) (st []fts.JobStatus, err error) {
	defer func(t time.Time) { f.m.observe("fts", "status", t, err) }(time.Now())
	return f.FTS.Status(ctx, ids)
}

func (f instrumentedFTS) CancelFiles(ctx context.Context, job string, fids []int64) (s []string, err error) {
	defer func(t time.Time) { f.m.observe("fts", "cancel", t, err) }(time.Now())
	return f.FTS.CancelFiles(ctx, job, fids)
}

// storeHooks time every state-store call, labelled by its op.
func (m *Metrics) storeHooks() state.Hooks {
	return state.Hooks{After: func(_ context.Context, op state.Op, c state.Call) {
		m.took("state", op.String(), c.Took, c.Err)
	}}
}
