package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
)

const (
	benchUser = "bench"
	srcSite   = "T2_XX_BenchSource"
	dstSite   = "T1_XX_BenchHome"
)

// Run is the result of one backend at one queue size.
type Run struct {
	Backend    string  `json:"backend"`
	Server     string  `json:"server"`
	N          int     `json:"transfers"`
	FTSLatency float64 `json:"fts_latency_seconds"` // added to every FTS answer (-fts-latency)

	EnqueueSeconds   float64 `json:"enqueue_seconds"`
	EnqueuePerSecond float64 `json:"enqueue_per_second"`

	DrainSeconds       float64 `json:"drain_seconds"`
	TransfersPerSecond float64 `json:"transfers_per_second"`
	Passes             int     `json:"passes"`
	PeakRSSMiB         float64 `json:"peak_rss_mib"`
	CPUSeconds         float64 `json:"agent_cpu_seconds"` // user + system time of the agent process

	Calls                 map[string]CallCount `json:"calls"`
	PhaseRoundTrips       map[string]float64   `json:"round_trips_per_transfer_by_phase"`
	RoundTripsPerTransfer float64              `json:"round_trips_per_transfer"`
	RoundTripUnit         string               `json:"round_trip_unit"` // "http" or "fsync"
	Fsyncs                int64                `json:"fsyncs,omitempty"`
	JournalRecords        int64                `json:"journal_records,omitempty"`
	// OpenSeconds is the agent's opening of the store (memfile: reading
	// the file into memory), before the drain.
	OpenSeconds float64 `json:"open_seconds"`

	FTSRequests        map[string]int `json:"fts_requests"`
	Jobs               int            `json:"fts_jobs"`
	FilesPerSubmit     float64        `json:"files_per_submit"`
	JobsPerStatus      float64        `json:"jobs_per_status"`
	SubmitsPerTransfer float64        `json:"submits_per_transfer"`
	StatusPerTransfer  float64        `json:"status_per_transfer"`

	// References are the reference writes measured on the same store
	// after the agent's run, in a fixed order (the first one is the
	// sequential reference); Limit is the fastest of them.
	References       []RefResult `json:"references"`
	Reference        string      `json:"reference"` // the sequential reference
	ReferenceSeconds float64     `json:"reference_seconds"`
	Ratio            float64     `json:"agent_to_reference"`
	Limit            string      `json:"limit"`
	LimitSeconds     float64     `json:"limit_seconds"`
	LimitRatio       float64     `json:"agent_to_limit"`
	// With -repeat, the drain time, agent/ref and agent/limit of every run
	// in the order they ran; the figures above are then the medians of
	// each series (drain, CPU, RSS, every reference), the limit the
	// fastest median reference and the ratios those of the medians.
	Drains      []float64 `json:"drain_seconds_runs,omitempty"`
	Ratios      []float64 `json:"agent_to_reference_runs,omitempty"`
	LimitRatios []float64 `json:"agent_to_limit_runs,omitempty"`

	Error string `json:"error,omitempty"`
}

// runOne measures backend b at n transfers.
//
// rot rotates the order in which the references run, so that over
// repeated runs each one runs as often early as late while the machine's
// load drifts.
func runOne(ctx context.Context, o options, self, b string, n int, cs *couchServer, rot int) (Run, error) {
	r := Run{Backend: b, N: n, Server: "memfile (local file)", FTSLatency: o.ftsLatency.Seconds()}
	dir, err := os.MkdirTemp("", "aso-bench-")
	if err != nil {
		return r, err
	}
	if !o.keep {
		defer os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "bench: files in %s\n", dir)
	}
	sites, reqs := filepath.Join(dir, "sites.yaml"), filepath.Join(dir, "requests.jsonl")
	if err := writeSites(sites); err != nil {
		return r, err
	}
	if err := writeRequestsOf(reqs, benchUser, n); err != nil {
		return r, err
	}
	var st string
	if b == "couch" {
		r.Server = cs.name
		db, drop, err := cs.freshDB(ctx, o.aso, o.keep)
		if err != nil {
			return r, err
		}
		defer drop()
		st = cs.dbURL(db)
	} else if st, err = newFileStore(ctx, o.aso, dir); err != nil {
		return r, err
	}

	t0 := time.Now()
	if out, err := asoCommand(ctx, o.aso, st, "enqueue", "-f", reqs, "--user", benchUser, "--log-level", "warn").CombinedOutput(); err != nil {
		return r, fmt.Errorf("aso enqueue: %v: %s", err, tail(out))
	}
	r.EnqueueSeconds = time.Since(t0).Seconds()
	r.EnqueuePerSecond = float64(n) / r.EnqueueSeconds

	cr, ru, sim, err := drain(ctx, o, self, dir, st, sites, benchUser, b, n)
	if err != nil {
		return r, err
	}
	r.fill(cr, ru, sim)
	if o.noRefs {
		return r, nil
	}
	if b == "couch" {
		r.References, err = couchReferences(ctx, cs, o.aso, n, batchOf(o), o.inFlight, rot)
	} else {
		r.References, err = journalReferences(dir, n, batchOf(o), cr.Records, cr.Fsyncs, rot)
	}
	if err != nil {
		return r, fmt.Errorf("reference: %w", err)
	}
	r.setLimit()
	return r, nil
}

func batchOf(o options) int {
	if o.batchSize > 0 {
		return o.batchSize
	}
	return agent.DefaultBatchSize
}

// drain serves the simulator and runs the agent process until the queue
// has drained; it returns the agent's report, its resource usage and the
// simulator's request counts.
//
// The agent works for user; label names its profile and trace files.
func drain(ctx context.Context, o options, self, dir, st, sites, user, label string, n int) (childResult, syscall.Rusage, map[string]int, error) {
	var ru syscall.Rusage
	var cr childResult
	var tok [16]byte
	_, _ = rand.Read(tok[:])
	token := hex.EncodeToString(tok[:])
	tf := filepath.Join(dir, "token")
	if err := os.WriteFile(tf, []byte(token), 0o600); err != nil {
		return cr, ru, nil, err
	}
	sim, err := ftstest.Start("127.0.0.1:0", ftstest.Options{Seed: 1, Tokens: []string{token}, Latency: o.ftsLatency})
	if err != nil {
		return cr, ru, nil, err
	}
	defer sim.Close()
	args := []string{"-child", "-fts", sim.URL, "-token-file", tf, "-sites", sites, "-user", user,
		"-batch-size", fmt.Sprint(o.batchSize), "-interval", o.interval.String(), "-log-level", o.logLevel}
	if o.profileDir != "" {
		args = append(args, "-profile", filepath.Join(o.profileDir, fmt.Sprintf("%s-%d", label, n)))
	}
	if o.traceDir != "" && !strings.HasPrefix(st, "file:") {
		if err := os.MkdirAll(o.traceDir, 0o755); err != nil {
			return cr, ru, nil, err
		}
		args = append(args, "-trace", filepath.Join(o.traceDir, fmt.Sprintf("%s-%d.trace.tsv", label, n)))
	}
	cctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, self, args...)
	cmd.Env = append(os.Environ(), envState+"="+st) // a CouchDB URL may hold a password: never in argv
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	stopProf := func() {}
	if o.profileDir != "" {
		// the simulator's side, in this process
		if stopProf, err = startProfile(filepath.Join(o.profileDir, fmt.Sprintf("sim-%s-%d", label, n))); err != nil {
			return cr, ru, nil, err
		}
	}
	err = cmd.Run()
	stopProf()
	if err != nil {
		return cr, ru, nil, fmt.Errorf("agent: %w", err)
	}
	if err := json.Unmarshal(out.Bytes(), &cr); err != nil {
		return cr, ru, nil, fmt.Errorf("agent report: %w: %s", err, tail(out.Bytes()))
	}
	if cr.NotDone != 0 || cr.Done != n {
		return cr, ru, nil, fmt.Errorf("agent left %d of %d transfers not done (%d recorded done)", cr.NotDone, n, cr.Done)
	}
	if u, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		ru = *u
	}
	return cr, ru, sim.Requests(), nil
}

func (r *Run) fill(cr childResult, ru syscall.Rusage, sim map[string]int) {
	n := float64(r.N)
	r.DrainSeconds = cr.DrainSeconds
	r.TransfersPerSecond = n / cr.DrainSeconds
	r.Passes = cr.Passes
	r.PeakRSSMiB = float64(cr.PeakRSSKiB) / 1024
	r.CPUSeconds = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	r.Calls = cr.Calls
	r.Fsyncs, r.JournalRecords, r.OpenSeconds = cr.Fsyncs, cr.Records, cr.OpenSeconds
	r.RoundTripUnit = "http"
	if r.Backend == "memfile" {
		r.RoundTripUnit = "fsync"
	}
	r.PhaseRoundTrips = map[string]float64{}
	var total int64
	for name, c := range cr.Calls {
		ph := phaseOf[name]
		if ph == "" {
			ph = "upkeep"
		}
		r.PhaseRoundTrips[ph] += float64(c.RoundTrips) / n
		total += c.RoundTrips
	}
	r.RoundTripsPerTransfer = float64(total) / n
	r.FTSRequests = sim
	r.Jobs = cr.Jobs
	if s := sim["submit"]; s > 0 {
		r.FilesPerSubmit = n / float64(s)
	}
	if s := sim["status"]; s > 0 {
		r.JobsPerStatus = float64(cr.Jobs) / float64(s)
	}
	r.SubmitsPerTransfer = float64(sim["submit"]) / n
	r.StatusPerTransfer = float64(sim["status"]) / n
}

// The storage of the two sites, before the LFN.
const (
	srcPrefix = "davs://source.example.org:2880"
	dstPrefix = "davs://home.example.org:2880"
)

// writeSites writes a sites file of the two sites.
func writeSites(sitesFile string) error {
	sites := fmt.Sprintf(`%s:
  protocol: davs
  rules:
    - path-match: /store/(.*)
      result: %s/store/$1
%s:
  protocol: davs
  rules:
    - path-match: /store/(.*)
      result: %s/store/$1
`, srcSite, srcPrefix, dstSite, dstPrefix)
	return os.WriteFile(sitesFile, []byte(sites), 0o644)
}

// writeRequestsOf writes n requests of user between the two sites.
func writeRequestsOf(reqFile, user string, n int) error {
	rs := requestsOf(user, n)
	return writeRequests(reqFile, n, func(i int) state.Request { return rs[i] })
}

// requests returns n distinct requests of the bench user.
func requests(n int) []state.Request { return requestsOf(benchUser, n) }

// requestsOf returns n distinct requests of user.
func requestsOf(user string, n int) []state.Request {
	out := make([]state.Request, n)
	for i := range out {
		out[i] = state.Request{
			User: user, Source: srcSite, Destination: dstSite,
			SourceLFN:      fmt.Sprintf("/store/temp/user/%s/task/out_%07d.root", user, i),
			DestinationLFN: fmt.Sprintf("/store/user/%s/task/out_%07d.root", user, i),
			Size:           2_000_000 + int64(i%1000)*1000,
			Checksums:      map[string]string{"adler32": fmt.Sprintf("%08x", uint32(i)*2654435761)},
		}
	}
	return out
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// envState passes the state store (a CouchDB URL may hold credentials) to
// the agent process through its environment, not its command line.
const envState = "ASO_BENCH_STATE"

// asoCommand runs aso with --state st given as ASO_STATE, out of argv.
// newFileStore creates a file store in dir with `aso init`, as a user
// does, and returns its --state URL.
func newFileStore(ctx context.Context, aso, dir string) (string, error) {
	st := "file:" + filepath.Join(dir, "state.aso")
	if out, err := asoCommand(ctx, aso, st, "init", "--log-level", "warn").CombinedOutput(); err != nil {
		return "", fmt.Errorf("aso init: %v: %s", err, tail(out))
	}
	return st, nil
}

func asoCommand(ctx context.Context, aso, st string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, aso, args...)
	cmd.Env = append(os.Environ(), "ASO_STATE="+st)
	return cmd
}

// medianRun returns, of the runs of one backend and size, the first that
// failed, or else the run of median drain time (the lower of the two
// middle ones for an even count) with the medians of every series (drain,
// agent CPU, peak RSS, each reference), the limit and ratios of those
// medians, and every run's drain, agent/ref and agent/limit in run order.
func medianRun(rs []Run) Run {
	for _, r := range rs {
		if r.Error != "" {
			return r
		}
	}
	if len(rs) == 1 {
		return rs[0]
	}
	col := func(f func(Run) float64) []float64 {
		out := make([]float64, len(rs))
		for i, r := range rs {
			out[i] = f(r)
		}
		return out
	}
	drains := col(func(r Run) float64 { return r.DrainSeconds })
	byDrain := slices.Clone(rs)
	slices.SortStableFunc(byDrain, func(a, b Run) int { return cmp.Compare(a.DrainSeconds, b.DrainSeconds) })
	m := byDrain[(len(byDrain)-1)/2]
	m.Drains = drains
	m.DrainSeconds = median(drains)
	m.TransfersPerSecond = float64(m.N) / m.DrainSeconds
	m.Ratios = col(func(r Run) float64 { return r.Ratio })
	m.LimitRatios = col(func(r Run) float64 { return r.LimitRatio })
	m.CPUSeconds = median(col(func(r Run) float64 { return r.CPUSeconds }))
	m.PeakRSSMiB = median(col(func(r Run) float64 { return r.PeakRSSMiB }))
	m.References = slices.Clone(m.References)
	for i := range m.References {
		m.References[i].Seconds = median(col(func(r Run) float64 { return r.References[i].Seconds }))
	}
	m.setLimit()
	return m
}

// median is the median of xs (the mean of the two middle ones for an
// even count).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	k := len(s) / 2
	if len(s)%2 == 1 {
		return s[k]
	}
	return (s[k-1] + s[k]) / 2
}

// setLimit sets the sequential reference (the first), the limit (the
// fastest reference) and the agent's ratios to both.
func (r *Run) setLimit() {
	if len(r.References) == 0 {
		return
	}
	seq, lim := r.References[0], r.References[0]
	for _, x := range r.References[1:] {
		if x.Seconds < lim.Seconds {
			lim = x
		}
	}
	r.Reference, r.ReferenceSeconds = seq.Name, seq.Seconds
	r.Limit, r.LimitSeconds = lim.Name, lim.Seconds
	r.Ratio = r.DrainSeconds / r.ReferenceSeconds
	r.LimitRatio = r.DrainSeconds / r.LimitSeconds
}
