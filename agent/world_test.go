package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/adler32"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
	"github.com/asyncstageout/aso/state/statetest"
)

const (
	testUser = "alice"
	srcSite  = "T2_XX_Source"
	dstSite  = "T1_XX_Home"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// world is a complete offline installation: a state store (a memfile, or a
// CouchDB database), the FTS3 simulator over HTTP copying file:// URLs for
// real, two file:// sites, and the real gfal-rm, all on one injected clock.
type world struct {
	t        testing.TB
	dir      string
	clk      *statetest.Clock
	opener   func(cfg state.Config) (state.Store, error)
	path     string // the state file of a memfile world ("" on CouchDB)
	store    state.Store
	sim      *ftstest.Server
	client   *fts.Client
	sites    *srm.Sites
	deleter  *srm.Deleter
	src, dst string
	rng      *rand.Rand
	log      *logrus.Logger
	// wrap, if set, wraps the store of an agent built without one.
	wrap func(agent.Store) agent.Store
	// monitorGroup is the MonitorGroup of config (0: the default).
	monitorGroup int
}

func requireGfalRm(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("gfal-rm"); err != nil {
		t.Fatalf("gfal-rm not found: %s", srm.GfalRmInstallHint())
	}
}

// newWorld builds a world on a memfile store.
func newWorld(t testing.TB, simOpts ftstest.Options) *world {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.aso")
	w := newWorldOn(t, simOpts, func(cfg state.Config) (state.Store, error) { return memfile.Open(path, cfg) })
	w.path = path
	return w
}

// useSites writes sites to the file name in w's directory and makes it
// the world's sites.
func (w *world) useSites(name, sites string) {
	w.t.Helper()
	p := filepath.Join(w.dir, name)
	must(w.t, os.WriteFile(p, []byte(sites), 0o644))
	var err error
	w.sites, err = srm.LoadSites(p)
	must(w.t, err)
}

// newWorldOn builds a world on the stores opener opens (one per agent).
func newWorldOn(t testing.TB, simOpts ftstest.Options, opener func(cfg state.Config) (state.Store, error)) *world {
	t.Helper()
	requireGfalRm(t)
	w := &world{t: t, dir: t.TempDir(), clk: statetest.NewClock(epoch), opener: opener, rng: rand.New(rand.NewPCG(1, 2))}
	w.src, w.dst = filepath.Join(w.dir, srcSite), filepath.Join(w.dir, dstSite)
	sites := fmt.Sprintf("%s:\n  protocol: file\n  rules:\n    - path-match: /store/(.*)\n      result: file://%s/store/$1\n"+
		"%s:\n  protocol: file\n  rules:\n    - path-match: /store/(.*)\n      result: file://%s/store/$1\n", srcSite, w.src, dstSite, w.dst)
	w.useSites("sites.yaml", sites)
	w.store = w.open("setup")
	var err error

	token := "token-for-tests"
	tf := filepath.Join(w.dir, "token")
	must(t, os.WriteFile(tf, []byte(token), 0o600))
	simOpts.Now = w.clk.Now
	simOpts.LocalFiles = true
	simOpts.Tokens = []string{token}
	w.sim = ftstest.NewServer(t, simOpts)
	w.client, err = fts.New(fts.Config{Endpoint: w.sim.URL, TokenFile: tf, Timeout: 5 * time.Second, MaxElapsed: 10 * time.Second})
	must(t, err)
	w.deleter = &srm.Deleter{Timeout: 30 * time.Second}
	w.log = logrus.New()
	w.log.SetLevel(logrus.WarnLevel)
	w.log.SetOutput(testWriter{t})
	return w
}

// open returns another handle on the world's state store.
func (w *world) open(owner string) state.Store {
	w.t.Helper()
	s, err := w.opener(state.Config{
		Agent:  state.Agent{User: testUser, Owner: owner},
		Policy: state.Policy{CoolOff: 5 * time.Minute, MaxAttempts: 3, LeaseTTL: 15 * time.Minute},
		Now:    w.clk.Now,
	})
	must(w.t, err)
	w.t.Cleanup(func() { s.Close() })
	return s
}

// config is an agent configuration on the world's clock: sleeping between
// passes moves the clock instead.
func (w *world) config(owner string) agent.Config {
	return agent.Config{
		User: testUser, Owner: owner,
		Policy:         state.Policy{CoolOff: 5 * time.Minute, MaxAttempts: 3, LeaseTTL: 15 * time.Minute},
		BatchSize:      40,
		MaxFilesPerJob: 15,
		Interval:       time.Minute,
		VerifyChecksum: true,
		FTSRetry:       -1, // aso retries, not FTS
		PhaseTimeout:   20 * time.Second,
		DeleteTimeout:  30 * time.Second,
		MonitorGroup:   w.monitorGroup,
		Now:            w.clk.Now,
		Sleep:          func(d time.Duration, _ <-chan struct{}) { w.clk.Advance(d) },
	}
}

// testAgent is an agent whose OnPass a test may set after building it.
type testAgent struct {
	*agent.Agent
	OnPass func(agent.PassStats)
}

func (w *world) agent(cfg agent.Config, store agent.Store) *testAgent {
	w.t.Helper()
	if store == nil {
		store = w.open(cfg.Owner)
		if w.wrap != nil {
			store = w.wrap(store)
		}
	}
	ta := &testAgent{}
	if cfg.OnPass == nil {
		cfg.OnPass = func(ps agent.PassStats) {
			if ta.OnPass != nil {
				ta.OnPass(ps)
			}
		}
	}
	a, err := agent.New(cfg, store, w.client, w.sites, w.deleter, w.log)
	must(w.t, err)
	ta.Agent = a
	return ta
}

// request makes the request of a file; with a source, it writes the source
// file and returns its content.
func (w *world) request(kind string, i int, withSource bool) (state.Request, []byte) {
	r := state.Request{
		User: testUser, Source: srcSite, Destination: dstSite,
		SourceLFN:      fmt.Sprintf("/store/temp/user/%s/%s_%04d.root", testUser, kind, i),
		DestinationLFN: fmt.Sprintf("/store/user/%s/%s_%04d.root", testUser, kind, i),
		Size:           100,
	}
	if !withSource {
		return r, nil
	}
	data := make([]byte, 512+w.rng.IntN(4096))
	for j := range data {
		data[j] = byte(w.rng.Uint32())
	}
	w.writeFile(w.srcPath(r), data)
	r.Size = int64(len(data))
	r.Checksums = map[string]string{"adler32": fmt.Sprintf("%08x", adler32.Checksum(data))}
	return r, data
}

func (w *world) srcPath(r state.Request) string { return filepath.Join(w.src, r.SourceLFN) }
func (w *world) dstPath(r state.Request) string { return filepath.Join(w.dst, r.DestinationLFN) }

func (w *world) writeFile(p string, data []byte) {
	w.t.Helper()
	must(w.t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(w.t, os.WriteFile(p, data, 0o644))
}

func (w *world) enqueue(reqs []state.Request) {
	w.t.Helper()
	res, err := w.store.Enqueue(context.Background(), reqs)
	must(w.t, err)
	for _, r := range res {
		if r.Status != state.Stored {
			w.t.Fatalf("enqueue %s: %s %v", r.ID, r.Status, r.Err)
		}
	}
}

func (w *world) get(id string) state.Transfer {
	w.t.Helper()
	t, err := w.store.Get(context.Background(), id)
	must(w.t, err)
	return t
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

type testWriter struct{ t testing.TB }

func (tw testWriter) Write(p []byte) (int, error) {
	tw.t.Log(string(p))
	return len(p), nil
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
