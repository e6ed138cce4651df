package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
)

// CrowdSeries compares one user's drain, idle start and status on an
// empty database and on one crowded with other users' documents (the
// crowd), and measures a fleet round on the crowded one.
type CrowdSeries struct {
	Server string `json:"server"`
	Docs   int    `json:"crowd_documents"`
	Users  int    `json:"crowd_users"`
	// Built is false when the crowd of a kept database was used again;
	// WriteSeconds and IndexSeconds are then 0.
	Built        bool    `json:"crowd_built"`
	WriteSeconds float64 `json:"crowd_write_seconds"`
	IndexSeconds float64 `json:"crowd_index_seconds"`
	N            int     `json:"transfers"`
	Repeat       int     `json:"repeat"`

	Empty   CrowdSide   `json:"empty"`
	Crowded CrowdSide   `json:"crowded"`
	Fleet   *FleetRound `json:"fleet_round,omitempty"`
	Error   string      `json:"error,omitempty"`
}

// CrowdSide is what one database measured: the medians of the drains (every
// run listed), and the best of three idle starts and three `aso status
// --user` of each run, with their HTTP requests (the most any made).
type CrowdSide struct {
	DrainSeconds   float64   `json:"drain_seconds"`
	Drains         []float64 `json:"drain_seconds_runs"`
	PeakRSSMiB     float64   `json:"peak_rss_mib"`
	IdleSeconds    float64   `json:"idle_start_seconds"`
	IdleRuns       []float64 `json:"idle_start_seconds_runs"`
	IdleRequests   int       `json:"idle_start_requests"`
	StatusSeconds  float64   `json:"status_user_seconds"`
	StatusRuns     []float64 `json:"status_user_seconds_runs"`
	StatusRequests int       `json:"status_user_requests"`
}

// FleetRound is one `aso run --all-users` over the crowd, of whose users
// UsersWithWork have PerUser due transfers each.
type FleetRound struct {
	UsersWithWork int     `json:"users_with_work"`
	PerUser       int     `json:"transfers_per_user"`
	Seconds       float64 `json:"seconds"`
	// Requests are those of the parent and its agents (which the parent
	// hands its --state).
	Requests  int    `json:"http_requests"`
	Discovery int    `json:"discovery_queries"`
	Agents    int    `json:"agents_started"`
	Error     string `json:"error,omitempty"`
}

// The targets of the crowded series.
const (
	crowdRatioTarget  = 1.1 // crowded/empty, for the drain, the idle start and status --user
	idleRequestTarget = 6   // an idle start's HTTP requests
	fleetUsersWithWk  = 10
	fleetPerUser      = 100
	fleetRounds       = 2 // of a fleet whose users with work all start at once: the round that starts them, the one that finds nothing left
)

// crowdSeries runs the crowded series on the CouchDB server cs.
func crowdSeries(ctx context.Context, o options, self string, cs *couchServer) CrowdSeries {
	c := crowd{docs: o.crowd, users: o.crowdUsers}
	res := CrowdSeries{Server: cs.name, Docs: c.docs, Users: c.users, N: o.crowdN, Repeat: o.repeat}
	if err := res.run(ctx, o, self, cs, c); err != nil {
		res.Error = err.Error()
		fmt.Fprintf(os.Stderr, "bench: crowded series: %v\n", err)
	}
	return res
}

// seriesPlace is what every measurement of the series shares: its files,
// the FTS simulator and the counting proxy in front of the server.
type seriesPlace struct {
	dir, sites, token string
	sim               *ftstest.Server
	proxy             *countingProxy
}

func (res *CrowdSeries) run(ctx context.Context, o options, self string, cs *couchServer, c crowd) error {
	fmt.Fprintf(os.Stderr, "bench: crowded series: the crowd of %d documents of %d users...\n", c.docs, c.users)
	crowdDB, built, write, index, err := cs.crowdDB(ctx, o.aso, c)
	if err != nil {
		return err
	}
	res.Built, res.WriteSeconds, res.IndexSeconds = built, write, index
	if !o.keep {
		defer cs.dropDB(crowdDB)
	}
	p, err := newSeriesPlace(cs)
	if err != nil {
		return err
	}
	defer p.close(o.keep)
	var empty, crowded []sideRun
	for k := range o.repeat {
		// the order alternates, so that each database runs as often first
		// as second while the machine's load drifts
		for _, crowdedFirst := range []bool{k%2 == 1, k%2 == 0} {
			if crowdedFirst {
				fmt.Fprintf(os.Stderr, "bench: crowded series: crowded database (run %d of %d)...\n", k+1, o.repeat)
				r, err := p.side(ctx, o, self, cs, crowdDB, "crowded")
				if err != nil {
					return fmt.Errorf("crowded: %w", err)
				}
				crowded = append(crowded, r)
				continue
			}
			fmt.Fprintf(os.Stderr, "bench: crowded series: empty database (run %d of %d)...\n", k+1, o.repeat)
			db, drop, err := cs.freshDB(ctx, o.aso, o.keep)
			if err != nil {
				return err
			}
			r, err := p.side(ctx, o, self, cs, db, "empty")
			drop()
			if err != nil {
				return fmt.Errorf("empty: %w", err)
			}
			empty = append(empty, r)
		}
	}
	res.Empty, res.Crowded = sideOf(empty), sideOf(crowded)
	fmt.Fprintf(os.Stderr, "bench: crowded series: a fleet round over the crowd's %d users, %d with work...\n", c.users, fleetUsersWithWk)
	fr := p.fleetRound(ctx, o, cs, crowdDB, c)
	res.Fleet = &fr
	return nil
}

func newSeriesPlace(cs *couchServer) (*seriesPlace, error) {
	dir, err := os.MkdirTemp("", "aso-bench-crowd-")
	if err != nil {
		return nil, err
	}
	p := &seriesPlace{dir: dir, sites: filepath.Join(dir, "sites.yaml"), token: filepath.Join(dir, "series.token")}
	if err := writeSites(p.sites); err != nil {
		return nil, err
	}
	var tok [16]byte
	_, _ = rand.Read(tok[:])
	if err := os.WriteFile(p.token, []byte(hex.EncodeToString(tok[:])), 0o600); err != nil {
		return nil, err
	}
	if p.sim, err = ftstest.Start("127.0.0.1:0", ftstest.Options{Seed: 1, Tokens: []string{hex.EncodeToString(tok[:])}}); err != nil {
		return nil, err
	}
	if p.proxy, err = startCountingProxy(cs.base, ""); err != nil {
		p.sim.Close()
		return nil, err
	}
	return p, nil
}

func (p *seriesPlace) close(keep bool) {
	p.proxy.close()
	p.sim.Close()
	if !keep {
		os.RemoveAll(p.dir)
	}
}

// sideRun is one run of the series on one database.
type sideRun struct {
	drain, rss     float64
	idle, status   []float64
	idleN, statusN int
}

// side enqueues o.crowdN transfers of a new user into db, drains them with
// the agent (label names its profile and trace files), then times three idle starts of that user and three `aso
// status --user`, counting their requests.
func (p *seriesPlace) side(ctx context.Context, o options, self string, cs *couchServer, db, label string) (sideRun, error) {
	var r sideRun
	var b [3]byte
	_, _ = rand.Read(b[:])
	user := "bench-" + hex.EncodeToString(b[:])
	reqs := filepath.Join(p.dir, user+".jsonl")
	if err := writeRequestsOf(reqs, user, o.crowdN); err != nil {
		return r, err
	}
	st := cs.dbURL(db)
	if out, err := asoCommand(ctx, o.aso, st, "enqueue", "-f", reqs, "--user", user, "--log-level", "warn").CombinedOutput(); err != nil {
		return r, fmt.Errorf("aso enqueue: %v: %s", err, tail(out))
	}
	cr, _, _, err := drain(ctx, o, self, p.dir, st, p.sites, user, label, o.crowdN)
	if err != nil {
		return r, err
	}
	r.drain, r.rss = cr.DrainSeconds, float64(cr.PeakRSSKiB)/1024
	via := p.proxy.url + db
	for range 3 {
		secs, n, err := p.timed(ctx, o.aso, via, "run", "--user", user, "--sites", p.sites, "--fts", p.sim.URL,
			"--token-file", p.token, "--progress", "never", "--log-level", "warn")
		if err != nil {
			return r, fmt.Errorf("idle start: %w", err)
		}
		r.idle, r.idleN = append(r.idle, secs), max(r.idleN, n)
		if secs, n, err = p.timed(ctx, o.aso, via, "status", "--user", user, "--log-level", "warn"); err != nil {
			return r, fmt.Errorf("status --user: %w", err)
		}
		r.status, r.statusN = append(r.status, secs), max(r.statusN, n)
	}
	return r, nil
}

// timed runs aso with args on the store st (through the proxy) and
// returns its wall time and the HTTP requests it sent.
func (p *seriesPlace) timed(ctx context.Context, aso, st string, args ...string) (float64, int, error) {
	before, _ := p.proxy.counts()
	cmd := asoCommand(ctx, aso, st, args...)
	t0 := time.Now()
	out, err := cmd.CombinedOutput()
	secs := time.Since(t0).Seconds()
	if err != nil {
		return 0, 0, fmt.Errorf("aso %s: %v: %s", args[0], err, tail(out))
	}
	after, _ := p.proxy.counts()
	return secs, after - before, nil
}

// sideOf sums the runs of one database up: the median drain and peak
// RSS, the best idle start and status of all runs.
func sideOf(rs []sideRun) CrowdSide {
	var s CrowdSide
	var rss []float64
	for _, r := range rs {
		s.Drains, rss = append(s.Drains, r.drain), append(rss, r.rss)
		s.IdleRuns, s.StatusRuns = append(s.IdleRuns, r.idle...), append(s.StatusRuns, r.status...)
		s.IdleRequests, s.StatusRequests = max(s.IdleRequests, r.idleN), max(s.StatusRequests, r.statusN)
	}
	if len(rs) == 0 {
		return s
	}
	s.DrainSeconds, s.PeakRSSMiB = median(s.Drains), median(rss)
	s.IdleSeconds, s.StatusSeconds = slices.Min(s.IdleRuns), slices.Min(s.StatusRuns)
	return s
}

// fleetRound gives fleetUsersWithWk of the crowd's users fleetPerUser due
// transfers each, and runs one `aso run --all-users` through the proxy
// until they are done, counting its requests and discovery queries and,
// from its log, the agents it started.
func (p *seriesPlace) fleetRound(ctx context.Context, o options, cs *couchServer, db string, c crowd) FleetRound {
	fr := FleetRound{UsersWithWork: min(fleetUsersWithWk, c.users), PerUser: fleetPerUser}
	if err := fr.run(ctx, o, p, cs, db); err != nil {
		fr.Error = err.Error()
		fmt.Fprintf(os.Stderr, "bench: fleet round: %v\n", err)
	}
	return fr
}

func (fr *FleetRound) run(ctx context.Context, o options, p *seriesPlace, cs *couchServer, db string) error {
	var b [3]byte
	_, _ = rand.Read(b[:])
	round := hex.EncodeToString(b[:])
	now := time.Now()
	var docs []state.Transfer
	for u := range fr.UsersWithWork {
		user := crowdUser(u)
		for i := range fr.PerUser {
			r := state.Request{User: user, Source: srcSite, Destination: dstSite,
				SourceLFN:      fmt.Sprintf("/store/temp/user/%s/round%s/out_%04d.root", user, round, i),
				DestinationLFN: fmt.Sprintf("/store/user/%s/round%s/out_%04d.root", user, round, i),
				Size:           1_000_000}
			t := state.NewTransfer(r, now, "producer@crab:cli")
			t.Type = state.DocType
			docs = append(docs, t)
		}
	}
	body, err := json.Marshal(map[string]any{"docs": docs})
	if err != nil {
		return err
	}
	if _, err := cs.do(ctx, http.MethodPost, db+"/_bulk_docs", body); err != nil {
		return fmt.Errorf("write the round's transfers: %w", err)
	}
	logPath := filepath.Join(p.dir, "fleet-round.log")
	lf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer lf.Close()
	before, disc0 := p.proxy.counts()
	cmd := asoCommand(ctx, o.aso, p.proxy.url+db, "run", "--all-users", "--sites", p.sites,
		"--fts", p.sim.URL, "--token-file", p.token, "--interval", "100ms", "--discover-interval", "10m",
		"--log-format", "json", "--log-level", "info", "--progress", "never")
	cmd.Stdout, cmd.Stderr = lf, lf
	t0 := time.Now()
	err = cmd.Run()
	fr.Seconds = time.Since(t0).Seconds()
	after, disc1 := p.proxy.counts()
	fr.Requests, fr.Discovery = after-before, disc1-disc0
	if err != nil {
		return fmt.Errorf("aso run --all-users: %v (log %s)", exitOf(err), logPath)
	}
	ev, err := readFleetLogs([]string{logPath})
	if err != nil {
		return err
	}
	fr.Agents = ev.agents
	return nil
}

func exitOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return fmt.Sprintf("exit %d", ee.ExitCode())
	}
	return err.Error()
}
