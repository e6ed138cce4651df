package proctest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/internal/exitcode"
	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/couch/couchtest"
	"github.com/asyncstageout/aso/state/memfile"
)

// Site names of every World.
const (
	SourceSite      = "T2_XX_Source"
	DestinationSite = "T1_XX_Home"
)

// Options configure a World.
type Options struct {
	// Couch selects a fresh CouchDB database (couchtest) initialised by
	// `aso init`; otherwise the state is a memfile in the World's directory.
	Couch bool
	// Sim configures the simulator; New sets LocalFiles and Tokens and
	// leaves the clock real (Now nil), since agents are other processes.
	Sim ftstest.Options
	// Seed drives file contents and sizes.
	Seed uint64
	// Lifetime bounds every child process (default DefaultLifetime).
	Lifetime time.Duration
}

// World is an offline installation for agents run as processes.
type World struct {
	// Dir holds the sites, the token, the state file (memfile) and the
	// logs of every process.
	Dir string
	// Sim is the FTS3 simulator, on the real clock.
	Sim *ftstest.Server
	// StateURL is the --state of every command.
	StateURL string
	// SitesFile and TokenFile are the --sites and --token-file of aso run.
	SitesFile, TokenFile string
	// SourceRoot and DestRoot are the directories of the two sites.
	SourceRoot, DestRoot string
	// Env is the environment of every aso process (on CouchDB, the
	// credentials file of each role: agents run as aso-agent).
	Env map[string]string

	t        testing.TB
	opts     Options
	store    state.Store
	mu       sync.Mutex
	rng      *rand.Rand
	expected map[string]*Expected
	order    []string
	seq      int
	procs    int
}

// New builds a World for t; everything it starts stops when t ends.
func New(t testing.TB, o Options) *World {
	t.Helper()
	if _, err := exec.LookPath("gfal-rm"); err != nil {
		t.Fatalf("proctest: gfal-rm not found (agents delete failed copies with it): %s", srm.GfalRmInstallHint())
	}
	if o.Lifetime <= 0 {
		o.Lifetime = DefaultLifetime
	}
	w := &World{Dir: t.TempDir(), t: t, opts: o, rng: rand.New(rand.NewPCG(o.Seed, 77)), expected: map[string]*Expected{}}
	w.SourceRoot, w.DestRoot = filepath.Join(w.Dir, SourceSite), filepath.Join(w.Dir, DestinationSite)
	rule := "%s:\n  protocol: file\n  rules:\n    - path-match: /store/(.*)\n      result: file://%s/store/$1\n"
	w.SitesFile = filepath.Join(w.Dir, "sites.yaml")
	w.write(w.SitesFile, []byte(fmt.Sprintf(rule, SourceSite, w.SourceRoot)+fmt.Sprintf(rule, DestinationSite, w.DestRoot)), 0o644)

	var tok [16]byte
	for i := range tok {
		tok[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[w.rng.IntN(36)]
	}
	w.TokenFile = filepath.Join(w.Dir, "token")
	w.write(w.TokenFile, tok[:], 0o600)
	sim := o.Sim
	sim.LocalFiles, sim.Tokens, sim.Now = true, []string{string(tok[:])}, nil
	w.Sim = ftstest.NewServer(t, sim)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := state.Config{Agent: state.Agent{User: "proctest", Owner: "proctest:checker"}}
	var err error
	path := filepath.Join(w.Dir, "state.aso")
	w.StateURL = "file:" + path
	if o.Couch {
		u := couchtest.Server(t) + couchtest.NewName()
		couchtest.DropLater(t, u)
		w.StateURL = couchtest.WithoutAuth(u)
		w.Env = w.roleCredentials(u)
	}
	// the store is created as a user creates it, by the binary
	if p := w.Start("init", "init", "--state", w.StateURL, "--log-level", "error"); p.Wait(time.Minute) != exitcode.OK {
		t.Fatalf("proctest: aso init: exit %d\n%s", p.Code(), p.Tail(20))
	}
	if o.Couch {
		w.store, err = couch.Open(ctx, couch.Options{URL: w.CouchURL(couch.RoleProducer)}, cfg)
	} else {
		w.store, err = memfile.OpenOptions(path, cfg, memfile.Options{})
	}
	if err != nil {
		t.Fatalf("proctest: open the state store: %v", err)
	}
	t.Cleanup(func() { w.store.Close() })
	return w
}

// roleCredentials writes a credentials file per role into the World's
// directory (the server's admin's, read from u, and a user of each of aso's
// roles) and returns the environment that gives every command its role's
// (ASO_COUCHDB_CREDENTIALS_ROLE).
func (w *World) roleCredentials(u string) map[string]string {
	env := map[string]string{}
	admin, pass := couchtest.Auth(u)
	for _, r := range []struct{ name, role string }{
		{"admin", ""}, {"agent", couch.RoleAgent}, {"producer", couch.RoleProducer},
		{"operator", couch.RoleOperator}, {"reader", couch.RoleReader},
	} {
		name, p := admin, pass
		if r.role != "" {
			name, p = couchtest.RoleUser(w.t, r.role)
		}
		file := filepath.Join(w.Dir, "couchdb-"+r.name+".creds")
		w.write(file, []byte(name+":"+p+"\n"), 0o600)
		env["ASO_COUCHDB_CREDENTIALS_"+strings.ToUpper(r.name)] = file
	}
	return env
}

// CouchURL returns the World's CouchDB database URL with the credentials
// of role's user.
func (w *World) CouchURL(role string) string {
	return couchtest.AsRole(w.t, w.StateURL, role)
}

// LookupEnv reads the World's environment (Env) as cmd.Env does.
func (w *World) LookupEnv(k string) (string, bool) {
	v, ok := w.Env[k]
	return v, ok
}

// Store is the World's own handle on the state store (for enqueueing,
// killing, reading); on CouchDB it is an aso-producer's.
func (w *World) Store() state.Store { return w.store }

func (w *World) write(path string, data []byte, mode os.FileMode) {
	w.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		w.t.Fatalf("proctest: %v", err)
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		w.t.Fatalf("proctest: %v", err)
	}
}

// Start runs `aso args...` as a child process named name (its log is
// Dir/name.log).
func (w *World) Start(name string, args ...string) *Proc {
	w.t.Helper()
	env := make([]string, 0, len(w.Env))
	for k, v := range w.Env {
		env = append(env, k+"="+v)
	}
	return start(w.t, w.Dir, name, w.opts.Lifetime, args, env)
}

// AgentArgs are the arguments of `aso run` for user in this World, with
// short real-time settings: 100 ms between passes, a 1 s lock TTL, 2 s
// leases, a 1 s cool-off, no FTS-side retries, JSON logs. Flags in extra
// come last and so override these.
func (w *World) AgentArgs(user string, extra ...string) []string {
	args := []string{"run", "--state", w.StateURL, "--user", user, "--sites", w.SitesFile,
		"--fts", w.Sim.URL, "--token-file", w.TokenFile, "--fts-timeout", "5s",
		"--interval", "100ms", "--lock-ttl", "1s", "--lease-ttl", "2s", "--cool-off", "1s",
		"--max-attempts", "5", "--fts-retry", "-1", "--phase-timeout", "15s", "--delete-timeout", "15s",
		"--log-format", "json", "--log-level", "info", "--progress", "never"}
	return append(args, extra...)
}

// StartAgent runs `aso run` for user (see AgentArgs); its name is
// "agent-USER-N".
func (w *World) StartAgent(user string, extra ...string) *Proc {
	w.t.Helper()
	w.mu.Lock()
	w.procs++
	name := fmt.Sprintf("agent-%s-%03d", user, w.procs)
	w.mu.Unlock()
	return w.Start(name, w.AgentArgs(user, extra...)...)
}

// RunToEnd runs agents for user until one exits 0, restarting, as cron
// would, while the previous holder's lock has not expired (exit 3) or after
// a temporary failure (exit 75: a lock or lease lost on a loaded machine),
// at most within d. It fails the test on any other exit code and returns
// the last process.
func (w *World) RunToEnd(user string, d time.Duration, extra ...string) *Proc {
	w.t.Helper()
	deadline := time.Now().Add(d)
	for {
		p := w.StartAgent(user, extra...)
		code := p.Wait(time.Until(deadline))
		switch {
		case code == 0:
			return p
		case (code == exitcode.Locked || code == exitcode.TempFail) && time.Now().Before(deadline):
			// cron's interval between runs, which the loop plays: each run
			// looks for itself, so this waits for no condition
			time.Sleep(100 * time.Millisecond)
		default:
			w.t.Fatalf("proctest: %s exited %d\n%s", p.Name, code, p.Tail(60))
			return p
		}
	}
}
