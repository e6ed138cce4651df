package fleet

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/asyncstageout/aso/internal/exitcode"
	"github.com/asyncstageout/aso/internal/holder"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
)

// staleDue is a store whose discovery answers what it found before
// another host took a user's lock, and, if staleLocks, whose read of the
// locks too: the races a fleet's round can lose.
type staleDue struct {
	state.Admin
	due        []state.UserDue
	staleLocks bool
}

func (s staleDue) DueUsers(context.Context, time.Time) ([]state.UserDue, error) { return s.due, nil }

func (s staleDue) Locks(ctx context.Context, user string) ([]state.LockDoc, error) {
	if s.staleLocks {
		return nil, nil
	}
	return s.Admin.Locks(ctx, user)
}

// testFleet is a fleet over store whose agents cannot start (its binary
// does not exist): a round that tries to start one marks the user done.
// fleetTestStore opens a file store for the fleet's tests, closed at the
// test's end.
func fleetTestStore(t *testing.T) *memfile.Store {
	t.Helper()
	store, err := memfile.Open(filepath.Join(t.TempDir(), "s.aso"), state.Config{Agent: state.Agent{User: "ann", Owner: "test"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

func testFleet(t *testing.T, lister state.Admin, store state.Store) *Fleet {
	f := New(Config{Exe: filepath.Join(t.TempDir(), "no-aso"), PhaseTimeout: 10 * time.Second, LockTTL: 5 * time.Minute,
		MaxAgents: 4, DiscoverInterval: time.Second}, store)
	f.disc.lister, f.locks.lister = lister, lister
	return f
}

// TestFleetRound_LockTakenElsewhere: discovery found ann due and her
// lock free, then another host took the lock. The round's read of the
// locks shows it: no agent is tried and the lock is not asked for. When
// the other host took it after that read too, the round's take of the
// lock loses the race: still no agent. The other host's lock is untouched.
func TestFleetRound_LockTakenElsewhere(t *testing.T) {
	for _, c := range []struct {
		name       string
		staleLocks bool
		lost       int
	}{{"after discovery", false, 0}, {"after the read of the locks", true, 1}} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			store := fleetTestStore(t)
			due := []state.UserDue{{User: "ann", Since: time.Now().Add(-time.Minute), Queued: 3}}
			const other = "otherhost:4242:1234-abcdef01-cafe"
			if _, err := store.AcquireLock(ctx, "ann", other, time.Hour); err != nil {
				t.Fatal(err)
			}
			f := testFleet(t, staleDue{Admin: store, due: due, staleLocks: c.staleLocks}, store)
			started, _, err := f.round(ctx, f.disc.query(ctx))
			if err != nil {
				t.Fatal(err)
			}
			if started != 0 || f.slots.started != 0 || f.done["ann"] {
				t.Fatalf("the round tried to start an agent for a user whose lock another host holds (started %d, done %v)", started, f.done["ann"])
			}
			if f.locks.lostRaces != c.lost || f.heldElsewhere != 1 {
				t.Errorf("lost races %d, held elsewhere %d; want %d and 1", f.locks.lostRaces, f.heldElsewhere, c.lost)
			}
			locks, err := store.Locks(ctx, "ann")
			if err != nil || len(locks) != 1 || locks[0].Holder != other || !locks[0].Expire.After(time.Now()) {
				t.Errorf("ann's lock after the round: %+v, %v; want the other host's, live", locks, err)
			}
		})
	}
}

// TestFleetTakeLock_HandOver: a free lock is taken under a new owner ID of
// this process, which the agent is given; its release records the run; a
// lock whose holder is known dead is left to the agent to take over.
func TestFleetTakeLock_HandOver(t *testing.T) {
	ctx := context.Background()
	store := fleetTestStore(t)
	f := testFleet(t, store, store)
	h, err := f.takeLock(ctx, "ann")
	if err != nil {
		t.Fatal(err)
	}
	if hh, ok := holder.Parse(h.Owner); !ok || hh.PID != os.Getpid() {
		t.Errorf("handed owner %q: want an owner ID of this process", h.Owner)
	}
	args, err := f.slots.args("ann", h)
	if err != nil || !containsPair(args, "--fleet-owner", h.Owner) {
		t.Errorf("agent args %q, %v: want --fleet-owner %s", args, err, h.Owner)
	}
	// the agent takes the handed lock as its own, and releases it
	agentLock, err := store.AcquireLock(ctx, "ann", h.Owner, time.Minute)
	if err != nil {
		t.Fatalf("the agent's take of the handed lock: %v", err)
	}
	if err := store.ReleaseLock(ctx, agentLock, &state.RunRecord{Holder: h.Owner, ExitCode: 0}); err != nil {
		t.Fatal(err)
	}
	// the fleet's release after the agent's writes nothing
	f.locks.releaseHandoff(ctx, &child{user: state.UserDue{User: "ann"}, handoff: h, code: exitcode.OK, out: &logRelay{}})
	locks, _ := store.Locks(ctx, "ann")
	if len(locks) != 1 || locks[0].LastRun == nil || locks[0].LastRun.Error != "" || !locks[0].Expire.IsZero() {
		t.Errorf("ann's lock after the agent's release and the fleet's: %+v; want released with the agent's record", locks)
	}

	// a holder of this host whose process is gone: the agent takes over
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	this := holder.This()
	this.PID = gone.ProcessState.Pid()
	dead := this.ID("dead")
	if _, err := store.AcquireLock(ctx, "bob", dead, time.Hour); err != nil {
		t.Fatal(err)
	}
	if h, err := f.takeLock(ctx, "bob"); err != nil || h.Owner != "" || f.locks.lostRaces != 0 {
		t.Errorf("take of a dead holder's lock: %+v, %v, lost races %d; want no hand-over, no error, no lost race", h, err, f.locks.lostRaces)
	}
}

func containsPair(args []string, k, v string) bool {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == k && args[i+1] == v {
			return true
		}
	}
	return false
}

// TestFleetReadLocks_ReleasesEndedAgents: the read of the locks after
// agents ended releases, with the fleet's record of the run, the lock of
// an agent that ended without taking it (still held under the owner the
// fleet handed over), and leaves alone the lock an agent released itself
// with its own record; neither user counts as held elsewhere.
func TestFleetReadLocks_ReleasesEndedAgents(t *testing.T) {
	ctx := context.Background()
	store := fleetTestStore(t)
	f := testFleet(t, store, store)
	ended := map[string]int{"ann": exitcode.Error, "bob": exitcode.OK}
	for u, code := range ended {
		h, err := f.takeLock(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		f.locks.unreleased[u] = &child{user: state.UserDue{User: u}, handoff: h, code: code, out: &logRelay{}}
	}
	agentLock, err := store.AcquireLock(ctx, "bob", f.locks.unreleased["bob"].handoff.Owner, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.ReleaseLock(ctx, agentLock, &state.RunRecord{Holder: agentLock.Holder, ExitCode: exitcode.OK}); err != nil {
		t.Fatal(err)
	}
	f.readLocks(ctx)
	if len(f.locks.unreleased) != 0 || f.locks.heldElsewhereNow("ann") || f.locks.heldElsewhereNow("bob") {
		t.Errorf("after the read: unreleased %v, held elsewhere %v; want none", f.locks.unreleased, f.locks.heldUntil)
	}
	locks, err := store.Locks(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range locks {
		switch {
		case !l.Expire.IsZero() || l.LastRun == nil:
			t.Errorf("%s's lock after the read: %+v; want released with a run record", l.User, l)
		case l.User == "ann" && (l.LastRun.By != f.locks.id || l.LastRun.ExitCode != exitcode.Error):
			t.Errorf("ann's run record %+v: want the fleet's (by %s, exit %d)", l.LastRun, f.locks.id, exitcode.Error)
		case l.User == "bob" && l.LastRun.By != "":
			t.Errorf("bob's run record %+v: want the agent's own", l.LastRun)
		}
	}
	if len(locks) != 2 {
		t.Errorf("%d locks, want ann's and bob's", len(locks))
	}
}

// TestFleetCouch: a fleet on CouchDB hands its agents what its opening of
// the database found.
func TestFleetCouch(t *testing.T) {
	a := &slots{cfg: &Config{Couch: &Couch{ReadQuorum: 2, Identity: `{"name":"agent-ann"}`}}}
	args, err := a.args("ann", handoff{})
	if err != nil || !containsPair(args, "--fleet-read-quorum", "2") || !containsPair(args, "--fleet-couch-identity", `{"name":"agent-ann"}`) {
		t.Errorf("agent args %q, %v: want --fleet-read-quorum 2 and the identity", args, err)
	}
}

// TestFleetRoundDue: a tick reads the users view again only when a slot
// is free that the backlog cannot fill, or the backlog is old.
func TestFleetRoundDue(t *testing.T) {
	store := fleetTestStore(t)
	f := testFleet(t, store, store)
	f.cfg.MaxAgents = 1
	f.backlog.at = time.Now()
	f.backlog.due = []state.UserDue{{User: "ann", Since: time.Now(), Queued: 1}}
	if f.roundDue() {
		t.Errorf("a round is due while the backlog has a user to start")
	}
	f.done["ann"] = true
	if !f.roundDue() {
		t.Errorf("no round is due with a free slot and no user left to start")
	}
	f.slots.running["bob"] = &child{}
	if f.roundDue() {
		t.Errorf("a round is due while every slot is busy")
	}
	f.backlog.at = time.Now().Add(-staleBacklog * f.cfg.DiscoverInterval)
	if !f.roundDue() {
		t.Errorf("no round is due with a backlog %d intervals old", staleBacklog)
	}
}
