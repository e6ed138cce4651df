// Command bench measures aso's throughput, state-store round trips, FTS
// requests and memory (make bench). For each backend and queue size it
// enqueues N requests with `aso enqueue` (timed on its own), then drains the
// queue with the agent in a child process of its own (this program run
// again with -child), against the FTS3 simulator served from this process
// on loopback with no latency and transfers that finish at once. It then
// measures the physical reference on the same store: the same number of
// document revisions written as plain _bulk_docs batches (CouchDB), or the
// same number of journal records and fsyncs appended to a file (memfile).
// It prints a table and writes the same figures as JSON.
//
// The CouchDB backend uses the Node test server of state/couch/testserver
// (in-memory PouchDB), or the real CouchDB named by ASO_TEST_COUCHDB_URL.
//
// It is a measuring tool: it asserts nothing about the figures, but it fails
// if a run did not end with every transfer done.
//
// Usage: go run ./bench [-n 10000,100000] [-backends memfile,couch] [-aso bin/aso]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// options are the flags of the parent process.
type options struct {
	sizes      []int
	backends   []string
	aso        string
	out        string
	batchSize  int
	interval   time.Duration
	logLevel   string
	profileDir string
	traceDir   string
	keep       bool
	timeout    time.Duration
	pouchMax   int
	ftsLatency time.Duration
	repeat     int
	inFlight   []int // the pipelined CouchDB references' requests in flight
	noRefs     bool  // measure no reference (-references=false)
	crowd      int   // documents of the crowded series' other users (0: no series)
	crowdUsers int   // the users they belong to
	crowdN     int   // the transfers the series drains on both databases
	crowdOnly  bool  // the crowded series alone
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-child" {
		os.Exit(childMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "-fleet" {
		os.Exit(fleetMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "-serve" {
		os.Exit(serveMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "-poll" {
		os.Exit(pollMain(os.Args[2:]))
	}
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	sizes := fs.String("n", "10000,100000", "queue sizes (transfers), comma-separated")
	backends := fs.String("backends", "memfile,couch", "state backends, comma-separated: memfile, couch")
	fs.StringVar(&o.aso, "aso", "bin/aso", "the aso binary (for aso init and aso enqueue)")
	fs.StringVar(&o.out, "out", "bench/results.json", "JSON results file")
	fs.IntVar(&o.batchSize, "batch-size", 0, "agent --batch-size (0: the agent's default)")
	fs.DurationVar(&o.interval, "interval", 10*time.Millisecond, "agent --interval between passes")
	fs.StringVar(&o.logLevel, "log-level", "warn", "agent log level (info logs a line per transfer)")
	fs.StringVar(&o.profileDir, "profile", "", "write CPU and heap profiles of each agent run into this directory")
	fs.StringVar(&o.traceDir, "trace", "", "write a line per HTTP request of each CouchDB agent run into this directory (BACKEND-N.trace.tsv)")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary directories and databases")
	fs.DurationVar(&o.timeout, "timeout", 15*time.Minute, "give up a single agent run after this long")
	fs.IntVar(&o.pouchMax, "pouch-max", 100000, "largest queue run on the PouchDB test server (single-threaded and in memory: 100,000 drain in 3 to 4 minutes and take about 2.5 GB); real CouchDB runs every size")
	fs.IntVar(&o.repeat, "repeat", 1, "runs of each backend and size; the table shows the run of median agent/ref and lists every run's")
	fs.DurationVar(&o.ftsLatency, "fts-latency", 0, "time the FTS simulator takes to answer each request (a real FTS takes from a tenth of a second to seconds to store a job)")
	fs.IntVar(&o.crowd, "crowd", 1_000_000, "documents of other users in the crowded series' database (CouchDB; 0: no crowded series; 100000 for a quicker run)")
	fs.IntVar(&o.crowdUsers, "crowd-users", 1000, "users the crowd's documents belong to")
	fs.IntVar(&o.crowdN, "crowd-n", 10000, "transfers the crowded series drains, on the empty database and on the crowded one")
	fs.BoolVar(&o.crowdOnly, "crowd-only", false, "run the crowded series alone, not the series of -n")
	refs := fs.Bool("references", true, "measure the references after each agent run (false: the agent's figures only, for a quicker run of memory or the crowded series)")
	inFlight := fs.String("in-flight", "2,4,8", "requests in flight of the pipelined CouchDB references, comma-separated (the sequential one always runs; the fastest of all is the limit)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.noRefs = !*refs
	var err error
	if o.inFlight, err = positiveInts("-in-flight", *inFlight); err != nil {
		return o, err
	}
	if o.crowd < 0 || o.crowdUsers < fleetUsersWithWk || o.crowdN < 1 {
		return o, fmt.Errorf("-crowd %d, -crowd-users %d, -crowd-n %d: want -crowd 0 or more, -crowd-users %d or more, -crowd-n 1 or more",
			o.crowd, o.crowdUsers, o.crowdN, fleetUsersWithWk)
	}
	if o.repeat < 1 {
		return o, fmt.Errorf("-repeat %d: want 1 or more", o.repeat)
	}
	if o.ftsLatency < 0 {
		return o, fmt.Errorf("-fts-latency %s: want a duration of 0 or more", o.ftsLatency)
	}
	if o.sizes, err = positiveInts("-n", *sizes); err != nil {
		return o, err
	}
	if o.backends, err = parseBackends(*backends); err != nil {
		return o, err
	}
	o.aso, err = asoBinary(o.aso)
	return o, err
}

// positiveInts parses the value of flag name: positive integers separated
// by commas.
func positiveInts(name, list string) ([]int, error) {
	var out []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%s %q: want positive integers separated by commas", name, list)
		}
		out = append(out, n)
	}
	return out, nil
}

func run(ctx context.Context, o options) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	res := Results{Machine: machine(), Started: time.Now().UTC().Format(time.RFC3339)}
	var couchSrv *couchServer
	defer func() {
		if couchSrv != nil {
			couchSrv.stop()
		}
	}()
	if slices.Contains(o.backends, "couch") {
		if couchSrv, err = startCouch(ctx, nodeHeapMB(o)); err != nil {
			return err
		}
	}
	if !o.crowdOnly {
		if err := runSizes(ctx, o, self, &res, couchSrv); err != nil {
			return err
		}
	}
	if couchSrv != nil && o.crowd > 0 {
		cs := crowdSeries(ctx, o, self, couchSrv)
		res.Crowd = &cs
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	res.Growth = growth(res.Runs)
	printTable(os.Stdout, res)
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(o.out, append(b, '\n'), 0o644)
}

// nodeHeapMB is the heap limit of the CouchDB test server: 6 GiB, which
// 100,000 transfers fit (about 2.5 GB), and more for a crowd of over
// 100,000 documents, which take about 6 KB each in the in-memory server
// with their indexes.
func nodeHeapMB(o options) int {
	if o.crowd <= 100_000 {
		return 6144
	}
	return 6144 + o.crowd/1000*6
}

// runSizes runs every backend at every size of -n, -repeat times each,
// into res.
func runSizes(ctx context.Context, o options, self string, res *Results, couchSrv *couchServer) error {
	for _, b := range o.backends {
		for _, n := range o.sizes {
			if b == "couch" && couchSrv.cmd != nil && n > o.pouchMax {
				res.Runs = append(res.Runs, Run{Backend: b, N: n, Server: couchSrv.name,
					Error: fmt.Sprintf("skipped: over -pouch-max %d on the PouchDB test server (set ASO_TEST_COUCHDB_URL for a real CouchDB)", o.pouchMax)})
				continue
			}
			var rs []Run
			for k := range o.repeat {
				fmt.Fprintf(os.Stderr, "bench: %s, %d transfers (run %d of %d)...\n", b, n, k+1, o.repeat)
				r, err := runOne(ctx, o, self, b, n, couchSrv, k)
				if err != nil {
					r.Error = err.Error()
					fmt.Fprintf(os.Stderr, "bench: %s %d: %v\n", b, n, err)
				}
				rs = append(rs, r)
				if err != nil || ctx.Err() != nil {
					break
				}
			}
			res.Runs = append(res.Runs, medianRun(rs))
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	return nil
}
