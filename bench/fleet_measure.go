package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/asyncstageout/aso/fts/ftstest"
)

// countingProxy is a reverse proxy in front of the CouchDB server that
// counts every request the fleets send, discovery queries (the users
// view) apart. A request its client gave up (an agent stopped by a
// signal) is not reported.
type countingProxy struct {
	url       string // ends in "/"
	srv       *http.Server
	requests  atomic.Int64
	discovery atomic.Int64
	trace     *requestTrace // nil: none
}

// requestTrace writes a line per request the proxy passed on: seconds
// since the start, method, path and query, status, duration in
// milliseconds (see -trace of aso-bench -fleet).
type requestTrace struct {
	mu    sync.Mutex
	w     *bufio.Writer
	f     *os.File
	start time.Time
}

func newRequestTrace(path string) (*requestTrace, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	t := &requestTrace{f: f, w: bufio.NewWriter(f), start: time.Now()}
	fmt.Fprintln(t.w, "t_s\tmethod\turl\tstatus\tms")
	return t, nil
}

func (t *requestTrace) line(r *http.Request, status int, began time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, "%.3f\t%s\t%s\t%d\t%.1f\n", began.Sub(t.start).Seconds(), r.Method, r.URL.RequestURI(), status,
		float64(time.Since(began).Microseconds())/1000)
}

func (t *requestTrace) close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.w.Flush(); err != nil {
		t.f.Close()
		return err
	}
	return t.f.Close()
}

// statusWriter keeps the status code a handler sent.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// startCountingProxy starts the proxy in front of base; with a trace
// path it writes a line per request there (see requestTrace).
func startCountingProxy(base, tracePath string) (*countingProxy, error) {
	target, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	var trace *requestTrace
	if tracePath != "" {
		if trace, err = newRequestTrace(tracePath); err != nil {
			return nil, err
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		if trace != nil {
			_ = trace.close()
		}
		return nil, err
	}
	p := &countingProxy{url: "http://" + l.Addr().String() + "/", trace: trace}
	rp := &httputil.ReverseProxy{ErrorLog: log.New(io.Discard, "", 0), Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = target.Host
		if target.User != nil {
			pw, _ := target.User.Password()
			r.Out.SetBasicAuth(target.User.Username(), pw)
		}
	}}
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		if strings.Contains(r.URL.Path, "/_view/users") {
			p.discovery.Add(1)
		}
		if p.trace == nil {
			rp.ServeHTTP(w, r)
			return
		}
		began, sw := time.Now(), &statusWriter{ResponseWriter: w, status: http.StatusOK}
		rp.ServeHTTP(sw, r)
		p.trace.line(r, sw.status, began)
	}), ReadHeaderTimeout: time.Minute}
	go func() { _ = p.srv.Serve(l) }()
	return p, nil
}

func (p *countingProxy) counts() (requests, discovery int) {
	return int(p.requests.Load()), int(p.discovery.Load())
}

func (p *countingProxy) close() {
	_ = p.srv.Close()
	if p.trace != nil {
		_ = p.trace.close()
	}
}

// maxFirstSubmit is the longest time from start to the first submission
// of a user's file, over every user (the user read from the source URL,
// .../user/USER/...).
func maxFirstSubmit(files []ftstest.SimFile, start time.Time) time.Duration {
	first := map[string]time.Time{}
	for _, f := range files {
		_, rest, ok := strings.Cut(f.Source, "/user/")
		if !ok {
			continue
		}
		u, _, _ := strings.Cut(rest, "/")
		if t, seen := first[u]; !seen || f.Submitted.Before(t) {
			first[u] = f.Submitted
		}
	}
	var worst time.Duration
	for _, t := range first {
		worst = max(worst, t.Sub(start))
	}
	return worst
}

// fleetEvents is what the parents' logs say.
type fleetEvents struct {
	agents, locked, lostRaces int
	maxSlotIdle               time.Duration
	maxBacklogIdle            time.Duration
}

// readFleetLogs reads the parents' own lines (those with a "fleet"
// field) from their log files.
func readFleetLogs(paths []string) (fleetEvents, error) {
	var ev fleetEvents
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return ev, err
		}
		err = scanFleetLog(f, &ev)
		f.Close()
		if err != nil {
			return ev, fmt.Errorf("%s: %w", p, err)
		}
	}
	return ev, nil
}

func scanFleetLog(r io.Reader, ev *fleetEvents) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var l struct {
			Fleet    string   `json:"fleet"`
			Msg      string   `json:"msg"`
			ExitCode *int     `json:"exit_code"`
			MaxWait  *float64 `json:"max_slot_wait_s"`
			Backlog  float64  `json:"max_slot_wait_backlog_s"`
			Lost     int      `json:"lost_lock_races"`
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Fleet == "" {
			continue
		}
		switch {
		case l.Msg == "agent started":
			ev.agents++
		case l.Msg == "fleet finished" && l.MaxWait != nil:
			ev.maxSlotIdle = max(ev.maxSlotIdle, time.Duration(*l.MaxWait*float64(time.Second)))
			ev.maxBacklogIdle = max(ev.maxBacklogIdle, time.Duration(l.Backlog*float64(time.Second)))
			ev.lostRaces += l.Lost
		case l.ExitCode != nil && *l.ExitCode == 3: // an agent's end
			ev.locked++
		}
	}
	return sc.Err()
}

// printFleetTable prints one line per run.
func printFleetTable(w io.Writer, runs []FleetRun, discover time.Duration) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "backend\tusers\ttransfers\tparents x agents\tdrain s\ttransfers/s\treference s\tlimit s\tref/drain\tlimit/drain\tHTTP/transfer\tdiscovery queries\tmax first submit s\tmax slot idle s\tfrom backlog s\tagents\tlost races\tlocked out\tlost/agents\t")
	for _, r := range runs {
		if r.Error != "" && r.DrainSeconds == 0 {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%dx%d\terror: %s\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\n", r.Backend, r.Users, r.Transfers, r.Parents, r.MaxAgents, r.Error)
			continue
		}
		httpPer, disc := "-", "-"
		if r.HTTPRequests > 0 {
			httpPer, disc = fmt.Sprintf("%.2f", r.HTTPPerTransfer), fmt.Sprint(r.DiscoveryRequests)
		}
		ref, limit, refShare, limitShare := "-", "-", "-", "-"
		if r.LimitSeconds > 0 {
			ref, limit = fmt.Sprintf("%.1f", r.ReferenceSeconds), fmt.Sprintf("%.1f", r.LimitSeconds)
			refShare, limitShare = fmt.Sprintf("%.0f%%", 100*r.RefShare), fmt.Sprintf("%.0f%%", 100*r.LimitShare)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%dx%d\t%.1f\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%.2f\t%.2f\t%d\t%d\t%d\t%.1f%%\t\n",
			r.Backend, r.Users, r.Transfers, r.Parents, r.MaxAgents, r.DrainSeconds, r.TransfersPerSecond,
			ref, limit, refShare, limitShare, httpPer, disc, r.MaxFirstSubmit, r.MaxSlotIdle, r.MaxBacklogIdle,
			r.Agents, r.LostRaces, r.Locked, 100*r.lostShare())
	}
	tw.Flush()
	for _, r := range runs {
		if r.Error != "" && r.DrainSeconds > 0 {
			fmt.Fprintf(w, "%s: the drain was measured, then: %s\n", r.Backend, r.Error)
		}
	}
	fmt.Fprintf(w, "limit/drain: the fastest reference's time over the drain time (target >= 70%%); lost/agents: lost races and locked-out agents over agents started (target < 5%%); max slot idle: longest a parent left a freed slot empty from the agent's exit (target: one discovery round, %s), from backlog: of the slots filled between rounds\n", discover)
	for _, r := range runs {
		if r.PerUserSeconds > 0 {
			fmt.Fprintf(w, "%s: one user a batch (the best one writer per user does): %.1f s, %.0f%% of the drain time\n", r.Backend, r.PerUserSeconds, 100*r.PerUserSeconds/r.DrainSeconds)
		}
	}
	for _, r := range runs {
		if r.Error == "" {
			fmt.Fprintf(w, "\n%s references:\n", r.Backend)
			printRefs(w, r.References)
		}
	}
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
