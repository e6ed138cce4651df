package fleet

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
)

// downStore is a store that cannot be reached: every lock request fails.
type downStore struct{ state.Admin }

var errDown = errors.New("the store cannot be reached")

func (downStore) AcquireLock(context.Context, string, string, time.Duration) (state.Lock, error) {
	return state.Lock{}, errDown
}
func (downStore) ReleaseLock(context.Context, state.Lock, *state.RunRecord) error { return errDown }
func (downStore) Locks(context.Context, string) ([]state.LockDoc, error)          { return nil, errDown }

// agentScript writes an agent stand-in into dir and returns its path and
// where the user of each agent that starts arrives: it writes its --user U
// into a FIFO the test reads, and the agent of hold waits until it can
// read a line from the FIFO dir/go before it exits 0.
func agentScript(t *testing.T, dir, hold string) (string, <-chan string) {
	t.Helper()
	for _, n := range []string{"started", "go"} {
		if err := syscall.Mkfifo(filepath.Join(dir, n), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// read and write: the FIFO never reaches its end between writers
	r, err := os.OpenFile(filepath.Join(dir, "started"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	users := make(chan string, 16)
	go func() {
		for s := bufio.NewScanner(r); s.Scan(); {
			users <- s.Text()
		}
	}()
	p := filepath.Join(dir, "agent.sh")
	script := `#!/bin/sh
d=` + dir + `
while [ $# -gt 0 ]; do [ "$1" = --user ] && u=$2; shift; done
echo "$u" >> "$d/started"
if [ "$u" = ` + hold + ` ]; then read -r _ < "$d/go"; fi
`
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p, users
}

// TestFleetSpares: with every slot busy, a fill takes the lock of the
// next user ahead (a spare, of the fleet's own users, half the slots at
// most), and the slot that frees next starts that user's agent with no
// request to the store, even one that cannot be reached; a spare held for
// half the lock TTL is released rather than handed over, and the fleet
// releases its spares when it stops. Its own spare is not a lock held
// elsewhere.
func TestFleetSpares(t *testing.T) {
	ctx := context.Background()
	store := fleetTestStore(t)
	f := testFleet(t, store, store)
	f.cfg.Exe, _ = agentScript(t, t.TempDir(), "none")
	f.cfg.MaxAgents = 2
	now := time.Now()
	f.backlog.at = now
	for _, u := range []string{"ann", "bob", "carol", "dave"} {
		f.backlog.due = append(f.backlog.due, state.UserDue{User: u, Since: now.Add(-time.Hour), Queued: 1})
	}
	f.slots.running["x"], f.slots.running["y"] = &child{}, &child{}
	if started, _ := f.fill(ctx, false); started != 0 || len(f.locks.spares) != 1 || f.locks.spares[0].user.User != "ann" {
		t.Fatalf("fill with every slot busy: started %d, spares %+v; want ann's lock taken ahead, no agent", started, f.locks.spares)
	}
	locks, err := store.Locks(ctx, "ann")
	if err != nil || len(locks) != 1 || locks[0].Holder != f.locks.spares[0].h.Owner || !locks[0].Expire.After(time.Now()) {
		t.Fatalf("ann's lock: %+v, %v; want held under the spare's owner", locks, err)
	}
	f.readLocks(ctx)
	if f.locks.heldElsewhereNow("ann") {
		t.Errorf("the fleet's own spare counted as a lock held elsewhere")
	}

	// a slot frees: the spare starts at once, though the store is down
	f.locks.locker, f.locks.lister, f.disc.lister = downStore{store}, downStore{store}, downStore{store}
	delete(f.slots.running, "x")
	started, _ := f.refill(ctx)
	settle(ctx, f)
	if started != 1 || f.slots.running["ann"] == nil || len(f.locks.spares) != 0 {
		t.Fatalf("refill with a spare and the store down: started %d, running %v, spares %d; want ann's agent", started, f.slots.running, len(f.locks.spares))
	}
	c := <-f.slots.ended
	if c.handoff.Owner != locks[0].Holder {
		t.Errorf("ann's agent ran under %q, want the spare's owner %q", c.handoff.Owner, locks[0].Holder)
	}
	f.locks.locker, f.locks.lister, f.disc.lister = store, store, store
	f.reap(ctx, c)     // ann drained: not started again with the same entry
	clear(f.notBefore) // the refill's take of the next spare failed with the store down

	// a spare held too long is released, not handed over
	f.slots.running["x"] = &child{}
	// the refill put the backlog in the fleet's order (see spread)
	next := f.backlog.due[slices.IndexFunc(f.backlog.due, f.startable)].User
	f.fill(ctx, false)
	if len(f.locks.spares) != 1 || f.locks.spares[0].user.User != next {
		t.Fatalf("spares %+v: want %s's", f.locks.spares, next)
	}
	f.locks.spares[0].taken = time.Now().Add(-f.cfg.LockTTL / 2)
	f.startSpares(ctx, false)
	if len(f.locks.spares) != 0 || f.slots.running[next] != nil {
		t.Errorf("an old spare: spares %+v, %s running %v; want released, not started", f.locks.spares, next, f.slots.running[next] != nil)
	}
	if locks, _ := store.Locks(ctx, next); len(locks) != 1 || !locks[0].Expire.IsZero() {
		t.Errorf("%s's lock after the old spare's release: %+v; want free", next, locks)
	}

	// the fleet's stop releases its spares
	if _, _ = f.fill(ctx, false); len(f.locks.spares) != 1 {
		t.Fatalf("spares %+v: want one", f.locks.spares)
	}
	user := f.locks.spares[0].user.User
	delete(f.slots.running, "x")
	delete(f.slots.running, "y")
	f.wait(ctx)
	if locks, _ := store.Locks(ctx, user); len(locks) != 1 || !locks[0].Expire.IsZero() {
		t.Errorf("%s's lock after the fleet stopped: %+v; want the spare released", user, locks)
	}
}

// settle waits for the lock requests that a refill of f runs beside the
// loop, and lets f act on their answers.
func settle(ctx context.Context, f *Fleet) {
	for f.taking != nil {
		f.lockAnswer(ctx, <-f.lockDone)
	}
}

// slowDiscovery answers the first discovery query at once and blocks each
// later one until release is closed (its ctx ends it too), closing asked
// when the second begins; then it finds nothing due.
type slowDiscovery struct {
	state.Admin
	first   []state.UserDue
	asked   chan struct{}
	release chan struct{}
	mu      sync.Mutex
	calls   int
}

func (s *slowDiscovery) DueUsers(ctx context.Context, _ time.Time) ([]state.UserDue, error) {
	s.mu.Lock()
	s.calls++
	n := s.calls
	s.mu.Unlock()
	switch n {
	case 1:
		return s.first, nil
	case 2:
		close(s.asked)
		select {
		case <-s.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return nil, nil
}

// TestFleetLoop_DiscoveryBeside: a discovery query that hangs does not
// hold the fleet: while it is under way, a slot freed takes the next user
// of the backlog at once. When the query answers that nothing is due and
// no agent runs, the fleet ends.
func TestFleetLoop_DiscoveryBeside(t *testing.T) {
	store := fleetTestStore(t)
	now := time.Now()
	lister := &slowDiscovery{Admin: store, asked: make(chan struct{}), release: make(chan struct{}),
		first: []state.UserDue{{User: "ann", Since: now.Add(-2 * time.Hour), Queued: 1}, {User: "bob", Since: now.Add(-time.Hour), Queued: 1}}}
	f := testFleet(t, lister, store)
	dir := t.TempDir()
	exe, started := agentScript(t, dir, "ann")
	f.cfg.Exe = exe
	f.cfg.MaxAgents, f.cfg.DiscoverInterval = 1, 10*time.Millisecond
	done := make(chan error, 1)
	go func() { done <- f.loop(context.Background()) }()
	select { // ann runs, her backlog goes stale: a round is asked for
	case <-lister.asked:
	case err := <-done:
		t.Fatalf("the fleet ended (%v) before it asked again", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no second discovery query")
	}
	if u := <-started; u != "ann" {
		t.Fatalf("the first agent started was %s's, want ann's", u)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), []byte("go\n"), 0); err != nil {
		t.Fatal(err)
	}
	select {
	case u := <-started:
		if u != "bob" {
			t.Fatalf("the second agent started was %s's, want bob's", u)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("bob's agent did not start while the discovery query hung: the fleet waited for it")
	}
	close(lister.release)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the fleet ended with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the fleet did not end once nothing was due")
	}
	f.wait(context.Background())
}
