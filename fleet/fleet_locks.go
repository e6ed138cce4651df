package fleet

import (
	"context"
	"errors"
	"time"

	"github.com/asyncstageout/aso/state"
)

// takeLock takes the run lock of u for the agent the fleet is about to
// start, under an owner ID of this process (see agentID): if this process
// dies, its agents die with it (agentProcAttr) and the lock names a
// process gone from this host, which the next agent takes over. A lock
// held by a holder known dead is left to the agent, which takes it over
// and records why (no hand-over). A lock held by another live holder is a
// lost race: the user is left out of discovery until that lock expires
// (errLostRace). Any other error leaves the user for a later round.
func (f *Fleet) takeLock(ctx context.Context, u string) (handoff, error) {
	return f.tookLock(ctx, f.locks.acquire(ctx, u))
}

// tookLock is what the take t means for the fleet (see takeLock): a user
// another agent ran for since the round waits for the next round, and one
// whose lock could not be asked for is tried again later.
func (f *Fleet) tookLock(ctx context.Context, t take) (handoff, error) {
	h, err := f.locks.took(ctx, t, f.backlog.at)
	switch {
	case errors.Is(err, errRanElsewhere):
		f.backlog.ranElsewhere[t.user] = true
	case err != nil && !errors.Is(err, errLostRace):
		f.notBefore[t.user] = time.Now().Add(f.cfg.DiscoverInterval)
	}
	return h, err
}

// startSpares starts the agents of the spare locks in the free slots, the
// oldest first (see nextSpare); it returns how many it started.
func (f *Fleet) startSpares(ctx context.Context, byRound bool) int {
	started := 0
	for {
		s, ok := f.locks.nextSpare(ctx, f.slots.free() > 0)
		if !ok {
			return started
		}
		if f.start1(ctx, s.user, s.h, byRound) {
			started++
		}
	}
}

// readLocks reads the run locks (one read), at each round and before
// each refill of the slots from the backlog. It releases the lock of each
// ended agent that the read shows still held under the owner ID the fleet
// took it under (see releaseHandoff): an agent that released its own lock
// costs no request more. It puts in the backlog the users whose live run
// lock is held by an agent known dead (its process gone from this host:
// see holder.Of), whose agent takes the lock over at once and the claims
// of the dead one back, and the users whose lock another agent released
// since the round (see backlog.ranElsewhere). It replaces heldUntil with
// the users whose live lock another live holder holds (not this fleet's
// running agents or spare locks), and until when:
// they are left out even when discovery does not show the lock (another
// host took it since). If the read fails, the ended agents' locks are
// released one by one and what the fleet knew stays as it was.
func (f *Fleet) readLocks(ctx context.Context) {
	locks, err := f.locks.list(ctx)
	f.learnLocks(ctx, locks, err)
}

// learnLocks is what the read of the locks (locks, or err) tells the
// fleet: see readLocks.
func (f *Fleet) learnLocks(ctx context.Context, locks []state.LockDoc, err error) {
	ours := func(u string) bool { return f.slots.running[u] != nil || f.locks.spares.has(u) || f.taking[u] }
	news, ok := f.locks.learn(ctx, locks, err, ours, f.backlog.at)
	if !ok {
		return
	}
	for _, u := range news.ranElsewhere {
		f.backlog.ranElsewhere[u] = true
	}
	f.backlog.dead, f.backlog.fleets = news.dead, news.fleets
}
