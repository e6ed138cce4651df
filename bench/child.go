package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/memfile"
)

// childResult is what the agent process reports to the parent on stdout.
type childResult struct {
	DrainSeconds float64              `json:"drain_seconds"`
	Passes       int                  `json:"passes"`
	Jobs         int                  `json:"jobs"`
	Done         int                  `json:"done"`
	NotDone      int                  `json:"not_done"` // transfers of the user not done at the end
	Calls        map[string]CallCount `json:"calls"`
	Fsyncs       int64                `json:"fsyncs,omitempty"`
	Records      int64                `json:"journal_records,omitempty"`
	OpenSeconds  float64              `json:"open_seconds"` // opening the store: reading the file (memfile)
	// PeakRSSKiB is the process's own high-water mark of resident memory
	// (VmHWM), read at the end of the run.
	PeakRSSKiB int64 `json:"peak_rss_kib"`
}

// childMain runs the agent in this process, the way `aso run` does, with its
// store calls counted, and prints a childResult.
func childMain(args []string) int {
	fs := flag.NewFlagSet("bench -child", flag.ContinueOnError)
	ftsURL := fs.String("fts", "", "FTS simulator URL")
	token := fs.String("token-file", "", "bearer token file")
	sites := fs.String("sites", "", "sites file")
	user := fs.String("user", "bench", "user")
	batch := fs.Int("batch-size", 0, "agent batch size")
	interval := fs.Duration("interval", 10*time.Millisecond, "agent interval")
	level := fs.String("log-level", "warn", "log level")
	prof := fs.String("profile", "", "CPU and heap profile prefix")
	trace := fs.String("trace", "", "file for a line per HTTP request of the agent (CouchDB)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := child(os.Getenv(envState), *ftsURL, *token, *sites, *user, *batch, *interval, *level, *prof, *trace); err != nil {
		fmt.Fprintln(os.Stderr, "bench agent:", err)
		return 1
	}
	return 0
}

func child(st, ftsURL, token, sitesFile, user string, batch int, interval time.Duration, level, prof, trace string) error {
	ctx := context.Background()
	owner := fmt.Sprintf("bench:%d", os.Getpid())
	cfg := state.Config{Agent: state.Agent{User: user, Owner: owner}}
	var tl *traceLog
	if trace != "" {
		f, err := os.Create(trace)
		if err != nil {
			return err
		}
		defer f.Close()
		bw := bufio.NewWriter(f)
		defer bw.Flush()
		tl = newTraceLog(bw)
	}
	var r childResult
	t0 := time.Now()
	store, cnt, mf, err := openStore(ctx, st, cfg, tl)
	if err != nil {
		return err
	}
	r.OpenSeconds = time.Since(t0).Seconds()
	defer store.Close()
	client, err := fts.New(fts.Config{Endpoint: ftsURL, TokenFile: token})
	if err != nil {
		return err
	}
	sites, err := srm.LoadSites(sitesFile)
	if err != nil {
		return err
	}
	log := logrus.New()
	log.SetOutput(os.Stderr)
	if log.Level, err = logrus.ParseLevel(level); err != nil {
		return err
	}
	acfg := agent.Config{User: user, Owner: owner, BatchSize: batch, Interval: interval,
		OnPass: func(ps agent.PassStats) { r.Passes++; r.Done += ps.Done; r.Jobs += ps.Jobs }}
	ag, err := agent.New(acfg, counted(store, cnt), client, sites, &srm.Deleter{Command: "gfal-rm", Timeout: time.Minute}, log)
	if err != nil {
		return err
	}

	stopProf, err := startProfile(prof)
	if err != nil {
		return err
	}
	t0 = time.Now()
	err = ag.Run(ctx)
	r.DrainSeconds = time.Since(t0).Seconds()
	stopProf()
	if err != nil {
		return err
	}
	r.Calls = cnt.snapshot()
	if mf != nil {
		s := mf.Stats()
		r.Fsyncs, r.Records = s.Fsyncs, s.JournalRecords
	}
	// what aso status --user reads: a count of the user's transfers by
	// state (a List of them went through an index whose first key is not
	// the user, and timed out on a crowded database)
	sum, err := store.Summary(ctx, state.SummaryOptions{User: user})
	if err != nil {
		return err
	}
	r.NotDone = sum.Total - sum.ByState[state.StateDone]
	if r.PeakRSSKiB, err = peakRSS(); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

// peakRSS returns VmHWM of this process in KiB. The parent cannot take it
// from the rusage of the child: on Linux a child's ru_maxrss starts at the
// resident size of the parent when the child was started, since exec
// accounts the memory it replaces, and the parent (the simulator of every
// earlier run) may be larger than the agent.
func peakRSS() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/self/status")
}

// openStore opens the store at st with its calls counted.
func openStore(ctx context.Context, st string, cfg state.Config, trace *traceLog) (state.Store, *counter, *memfile.Store, error) {
	if path, ok := strings.CutPrefix(st, "file:"); ok {
		mf, err := memfile.Open(path, cfg)
		if err != nil {
			return nil, nil, nil, err
		}
		return mf, newCounter(mf), mf, nil
	}
	cnt := newCounter(nil)
	cnt.trace = trace
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 8
	s, err := couch.Open(ctx, couch.Options{URL: st, Transport: cnt.wrap(tr)}, cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	return s, cnt, nil, nil
}

// startProfile starts a CPU profile to prefix+".cpu.pprof" and keeps the
// heap near its peak in prefix+".heap-peak.pprof" (heapPeak); the returned
// function stops both and writes the heap profile at the end to
// prefix+".heap.pprof".
func startProfile(prefix string) (func(), error) {
	if prefix == "" {
		return func() {}, nil
	}
	if err := os.MkdirAll(filepath.Dir(prefix), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(prefix + ".cpu.pprof")
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	stopPeak := heapPeak(prefix + ".heap-peak.pprof")
	return func() {
		stopPeak()
		pprof.StopCPUProfile()
		f.Close()
		h, err := os.Create(prefix + ".heap.pprof")
		if err != nil {
			return
		}
		defer h.Close()
		runtime.GC()
		_ = pprof.Lookup("allocs").WriteTo(h, 0)
	}, nil
}
