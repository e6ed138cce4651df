package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/memfile"
)

// fleetOptions are the flags of `aso-bench -fleet` (make bench-fleet).
type fleetOptions struct {
	users, perUser     int
	backends           []string
	parents, maxAgents int
	aso, out           string
	interval, discover time.Duration
	timeout            time.Duration
	keep               bool
	inFlight           []int
	trace              string
}

// FleetRun is the result of one fleet benchmark run.
type FleetRun struct {
	Backend   string `json:"backend"`
	Server    string `json:"server"`
	Users     int    `json:"users"`
	Transfers int    `json:"transfers"`
	Parents   int    `json:"parents"`
	MaxAgents int    `json:"max_agents"`

	EnqueueSeconds     float64 `json:"enqueue_seconds"`
	DrainSeconds       float64 `json:"drain_seconds"`
	TransfersPerSecond float64 `json:"transfers_per_second"`
	// References are the reference writes of the same revisions on the
	// same store (see Run.References): the first one is the sequential
	// reference, Limit the fastest.
	References       []RefResult `json:"references"`
	Reference        string      `json:"reference"`
	ReferenceSeconds float64     `json:"reference_seconds"`
	Limit            string      `json:"limit"`
	LimitSeconds     float64     `json:"limit_seconds"`
	// RefShare and LimitShare are the sequential reference's and the
	// limit's time over the drain time: the share of the raw write speed
	// the fleet reaches (target: the limit's at least 0.7).
	RefShare   float64 `json:"reference_to_drain"`
	LimitShare float64 `json:"limit_to_drain"`
	// PerUserSeconds is the reference of one user's transfers a batch
	// (perUserReference, CouchDB only; also in References).
	PerUserSeconds float64 `json:"per_user_reference_seconds,omitempty"`
	// HTTP requests the parents and agents sent to CouchDB (0 on memfile).
	HTTPRequests      int     `json:"http_requests"`
	DiscoveryRequests int     `json:"discovery_requests"`
	HTTPPerTransfer   float64 `json:"http_per_transfer"`
	// MaxFirstSubmit is the longest any user waited from the start of the
	// fleets (every request already enqueued) to its first FTS submission.
	MaxFirstSubmit float64 `json:"max_first_submit_seconds"`
	// MaxSlotIdle is the longest a parent left a slot free after an agent
	// ended before it started the next one (target: one discovery round).
	MaxSlotIdle float64 `json:"max_slot_idle_seconds"`
	// MaxBacklogIdle is MaxSlotIdle over the slots a parent filled from
	// its backlog between discovery rounds (MaxSlotIdle also counts the
	// slots that waited for a round because no user was left to start).
	MaxBacklogIdle float64 `json:"max_slot_idle_backlog_seconds"`
	Agents         int     `json:"agents_started"`
	// LostRaces counts the users whose run lock a parent found taken by
	// another host when it went to take it for an agent (no agent
	// started); Locked the agents that found it so (exit 3). Their sum
	// over Agents is the share of lost races (target: under 5%).
	LostRaces int `json:"lost_lock_races"`
	Locked    int `json:"agents_locked_out"`
	Rounds    int `json:"fleet_rounds"`

	Error string `json:"error,omitempty"`
}

// fleetMain is `aso-bench -fleet`: see bench/README.md.
func fleetMain(args []string) int {
	o, err := parseFleetFlags(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var runs []FleetRun
	var cs *couchServer
	defer func() {
		if cs != nil {
			cs.stop()
		}
	}()
	for _, b := range o.backends {
		if b == "couch" && cs == nil {
			if cs, err = startCouch(ctx, 6144); err != nil {
				fmt.Fprintln(os.Stderr, "bench:", err)
				return 1
			}
		}
		fmt.Fprintf(os.Stderr, "bench: fleet on %s, %d users x %d transfers...\n", b, o.users, o.perUser)
		r, err := fleetRun(ctx, o, b, cs)
		if err != nil {
			r.Error = err.Error()
			fmt.Fprintf(os.Stderr, "bench: fleet on %s: %v\n", b, err)
		}
		runs = append(runs, r)
		if ctx.Err() != nil {
			break
		}
	}
	printFleetTable(os.Stdout, runs, o.discover)
	if err := writeJSON(o.out, runs); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	for _, r := range runs {
		if r.Error != "" {
			return 1
		}
	}
	return 0
}

func parseFleetFlags(args []string) (fleetOptions, error) {
	o := fleetOptions{}
	fs := flag.NewFlagSet("bench -fleet", flag.ContinueOnError)
	fs.IntVar(&o.users, "users", 1000, "users")
	fs.IntVar(&o.perUser, "per-user", 100, "transfers per user")
	backends := fs.String("backends", "couch,memfile", "state backends, comma-separated: couch (with -parents fleets), memfile (with one)")
	fs.IntVar(&o.parents, "parents", 4, "aso run --all-users processes on CouchDB (hosts); memfile runs one")
	fs.IntVar(&o.maxAgents, "max-agents", 8, "--max-agents of each parent")
	fs.StringVar(&o.aso, "aso", "bin/aso", "the aso binary")
	fs.StringVar(&o.out, "out", "bench/fleet-results.json", "JSON results file")
	fs.DurationVar(&o.interval, "interval", 100*time.Millisecond, "agent --interval between passes")
	fs.DurationVar(&o.discover, "discover-interval", 5*time.Second, "--discover-interval of the parents")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Minute, "give up a run's enqueue and drain after this long, and its references after as long again")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary directories and databases")
	fs.StringVar(&o.trace, "trace", "", "write a line per CouchDB request of the parents and agents into this file (tab-separated)")
	inFlight := fs.String("in-flight", "2,4,8", "requests in flight of the pipelined CouchDB references (the fastest reference is the limit)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var err error
	if o.inFlight, err = positiveInts("-in-flight", *inFlight); err != nil {
		return o, err
	}
	if o.users <= 0 || o.perUser <= 0 || o.parents <= 0 || o.maxAgents <= 0 {
		return o, fmt.Errorf("-users, -per-user, -parents and -max-agents must be positive")
	}
	if o.backends, err = parseBackends(*backends); err != nil {
		return o, err
	}
	o.aso, err = asoBinary(o.aso)
	return o, err
}

// fleetUser is the name of user i of the benchmark.
func fleetUser(i int) string { return fmt.Sprintf("u%04d", i) }

// fleetRun enqueues the requests of every user, runs the fleets until
// every transfer is done, and measures the reference. The enqueue and the
// drain have -timeout, and the references as long again: on a real
// CouchDB the references of a full-scale run take as long as its drain,
// and a run whose references overran would otherwise lose its drain.
func fleetRun(ctx context.Context, o fleetOptions, b string, cs *couchServer) (FleetRun, error) {
	n := o.users * o.perUser
	r := FleetRun{Backend: b, Server: "memfile (local file)", Users: o.users, Transfers: n, Parents: 1, MaxAgents: o.maxAgents}
	refCtx := ctx
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "aso-bench-fleet-")
	if err != nil {
		return r, err
	}
	if o.keep {
		fmt.Fprintf(os.Stderr, "bench: files in %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	sites, reqs := filepath.Join(dir, "sites.yaml"), filepath.Join(dir, "requests.jsonl")
	if err := writeSites(sites); err != nil {
		return r, err
	}
	if err := writeFleetRequests(reqs, o.users, o.perUser); err != nil {
		return r, err
	}
	var st, agentsState string
	var proxy *countingProxy
	if b == "couch" {
		r.Server, r.Parents = cs.name, o.parents
		db, drop, err := cs.freshDB(ctx, o.aso, o.keep)
		if err != nil {
			return r, err
		}
		defer drop()
		st = cs.dbURL(db)
		if proxy, err = startCountingProxy(cs.base, o.trace); err != nil {
			return r, err
		}
		defer proxy.close()
		agentsState = proxy.url + db
	} else {
		if st, err = newFileStore(ctx, o.aso, dir); err != nil {
			return r, err
		}
		agentsState = st
	}

	t0 := time.Now()
	if out, err := asoCommand(ctx, o.aso, st, "enqueue", "-f", reqs, "--log-level", "warn").CombinedOutput(); err != nil {
		return r, fmt.Errorf("aso enqueue: %v: %s", err, tail(out))
	}
	r.EnqueueSeconds = time.Since(t0).Seconds()

	sim, tokens, err := fleetSimulator(dir, o.users)
	if err != nil {
		return r, err
	}
	defer sim.Close()
	start := time.Now()
	logs, err := drainFleets(ctx, o, &r, fleetPlaces{dir: dir, agentsState: agentsState, state: st, sites: sites, sim: sim.URL, tokens: tokens})
	if err != nil {
		return r, err
	}
	r.DrainSeconds = time.Since(start).Seconds()
	r.TransfersPerSecond = float64(n) / r.DrainSeconds
	if proxy != nil {
		r.HTTPRequests, r.DiscoveryRequests = proxy.counts()
		r.HTTPPerTransfer = float64(r.HTTPRequests) / float64(n)
	}
	r.MaxFirstSubmit = maxFirstSubmit(sim.Files(), start).Seconds()
	ev, err := readFleetLogs(logs)
	if err != nil {
		return r, err
	}
	r.MaxSlotIdle, r.MaxBacklogIdle = ev.maxSlotIdle.Seconds(), ev.maxBacklogIdle.Seconds()
	r.Agents, r.Locked, r.LostRaces = ev.agents, ev.locked, ev.lostRaces

	if err := fleetReference(refCtx, o, cs, dir, &r); err != nil {
		return r, fmt.Errorf("reference: %w", err)
	}
	return r, nil
}

// fleetPlaces are where a fleet run's inputs are: its directory, the
// state store (as the agents reach it, and directly), the sites file, the
// simulator's URL and the users' token files.
type fleetPlaces struct {
	dir, agentsState, state, sites, sim, tokens string
}

// drainFleets runs rounds of fleets until every transfer is done, three
// rounds at most, and returns their logs.
func drainFleets(ctx context.Context, o fleetOptions, r *FleetRun, p fleetPlaces) ([]string, error) {
	var logs []string
	for round := 1; ; round++ {
		r.Rounds = round
		ls, err := runParents(ctx, o, p.dir, p.agentsState, p.sites, p.sim, p.tokens, r.Parents, round)
		logs = append(logs, ls...)
		if err != nil {
			return logs, err
		}
		left, err := notDone(ctx, p.state)
		if err != nil {
			return logs, err
		}
		if left == 0 {
			return logs, nil
		}
		if round == 3 {
			return logs, fmt.Errorf("%d of %d transfers not done after %d rounds of fleets", left, r.Transfers, round)
		}
	}
}

// fleetReference measures the references of r: the same revisions, in
// the batches of the agent, straight to the backend (see runOne); on
// memfile the agents' records are those of four writes per user. They
// have -timeout of their own (see fleetRun).
func fleetReference(ctx context.Context, o fleetOptions, cs *couchServer, dir string, r *FleetRun) error {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	n, batch := r.Transfers, agent.DefaultBatchSize
	var err error
	if r.Backend == "couch" {
		r.References, err = couchReferences(ctx, cs, o.aso, n, batch, o.inFlight, 0)
		if err == nil {
			err = perUserReference(ctx, o, cs, r)
		}
	} else {
		recs := int64(4 * r.Users)
		r.References, err = journalReferences(dir, n, batch, recs, recs, 0)
	}
	if err != nil {
		return err
	}
	r.setLimit()
	return nil
}

// setLimit sets r's sequential reference, its limit (the fastest
// reference) and their shares of the drain time from r.References, as
// Run.setLimit does for a single agent's run.
func (r *FleetRun) setLimit() {
	run := Run{References: r.References, DrainSeconds: r.DrainSeconds}
	run.setLimit()
	r.Reference, r.ReferenceSeconds, r.Limit, r.LimitSeconds = run.Reference, run.ReferenceSeconds, run.Limit, run.LimitSeconds
	r.RefShare, r.LimitShare = 1/run.Ratio, 1/run.LimitRatio
}

// perUserReference adds to r's references the same revisions written as
// a fleet of per-user writers would at best: each user's transfers in
// _bulk_docs batches of their own, four in all, one after another, and as
// many users side by side as the fleets have agents. The agents cannot
// batch the transfers of several users together, which the other
// references do; the share of this one tells how much of the gap to the
// limit is the fleet's own work (locks, discovery, starts, reads, the
// views) and how much the requests that one writer per user takes.
func perUserReference(ctx context.Context, o fleetOptions, cs *couchServer, r *FleetRun) error {
	k := r.Parents * r.MaxAgents
	secs, err := cs.reference(ctx, o.aso, r.Transfers, o.perUser, k)
	if err != nil {
		return fmt.Errorf("one user a batch: %w", err)
	}
	r.PerUserSeconds = secs
	r.References = append(r.References, RefResult{Name: fmt.Sprintf(
		"the same, one user's %d transfers a batch, %d in flight as the fleets' agents", o.perUser, k), InFlight: k, Seconds: secs})
	return nil
}

// writeFleetRequests writes perUser requests for each of users users.
func writeFleetRequests(path string, users, perUser int) error {
	return writeRequests(path, users*perUser, func(k int) state.Request {
		u, i := k/perUser, k%perUser
		user := fleetUser(u)
		return state.Request{
			User: user, Source: srcSite, Destination: dstSite,
			SourceLFN:      fmt.Sprintf("/store/temp/user/%s/task/out_%05d.root", user, i),
			DestinationLFN: fmt.Sprintf("/store/user/%s/task/out_%05d.root", user, i),
			Size:           2_000_000 + int64(i)*1000,
			Checksums:      map[string]string{"adler32": fmt.Sprintf("%08x", uint32(k)*2654435761)},
		}
	})
}

// fleetSimulator serves the FTS3 simulator and writes one token file per
// user (tokens/USER.tok), for the --token-file template of the fleets.
func fleetSimulator(dir string, users int) (*ftstest.Server, string, error) {
	var tok [16]byte
	_, _ = rand.Read(tok[:])
	token := hex.EncodeToString(tok[:])
	tdir := filepath.Join(dir, "tokens")
	if err := os.MkdirAll(tdir, 0o700); err != nil {
		return nil, "", err
	}
	for u := range users {
		if err := os.WriteFile(filepath.Join(tdir, fleetUser(u)+".tok"), []byte(token), 0o600); err != nil {
			return nil, "", err
		}
	}
	sim, err := ftstest.Start("127.0.0.1:0", ftstest.Options{Seed: 1, Tokens: []string{token}})
	if err != nil {
		return nil, "", err
	}
	return sim, filepath.Join(tdir, "{user}.tok"), nil
}

// runParents runs parents `aso run --all-users` processes at once and
// waits for them; it returns their log files. Exit 0 and 3 are success.
func runParents(ctx context.Context, o fleetOptions, dir, st, sites, ftsURL, tokens string, parents, round int) ([]string, error) {
	type result struct {
		log string
		err error
	}
	done := make(chan result, parents)
	for p := range parents {
		logPath := filepath.Join(dir, fmt.Sprintf("fleet-%d-%d.log", round, p))
		go func() {
			done <- result{logPath, runParent(ctx, o, logPath, st, sites, ftsURL, tokens)}
		}()
	}
	var logs []string
	var first error
	for range parents {
		res := <-done
		logs = append(logs, res.log)
		if res.err != nil && first == nil {
			first = res.err
		}
	}
	return logs, first
}

func runParent(ctx context.Context, o fleetOptions, logPath, st, sites, ftsURL, tokens string) error {
	lf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer lf.Close()
	cmd := asoCommand(ctx, o.aso, st, "run", "--all-users", "--max-agents", fmt.Sprint(o.maxAgents),
		"--discover-interval", o.discover.String(), "--sites", sites, "--fts", ftsURL, "--token-file", tokens,
		"--interval", o.interval.String(), "--log-format", "json", "--log-level", "info", "--progress", "never")
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = time.Minute
	err = cmd.Run()
	if code := cmd.ProcessState.ExitCode(); err != nil && code != 3 {
		return fmt.Errorf("aso run --all-users exited %d (log %s): %v", code, logPath, err)
	}
	return nil
}

// notDone counts the transfers of the store that are not done.
func notDone(ctx context.Context, st string) (int, error) {
	cfg := state.Config{Agent: state.Agent{Owner: "bench"}}
	var s state.Store
	var err error
	if path, ok := strings.CutPrefix(st, "file:"); ok {
		s, err = memfile.Open(path, cfg)
	} else {
		s, err = couch.Open(ctx, couch.Options{URL: st}, cfg)
	}
	if err != nil {
		return 0, err
	}
	defer s.Close()
	sum, err := s.Summary(ctx, state.SummaryOptions{})
	if err != nil {
		return 0, err
	}
	return sum.Total - sum.ByState[state.StateDone], nil
}

// lostShare is the share of agent starts that lost the race for a lock:
// the parents' lost races and the agents locked out, over agents started.
func (r FleetRun) lostShare() float64 {
	if r.Agents == 0 {
		return 0
	}
	return float64(r.LostRaces+r.Locked) / float64(r.Agents)
}
