package fleet

import (
	"cmp"
	"hash/fnv"
	"slices"
	"time"

	"github.com/asyncstageout/aso/internal/holder"
	"github.com/asyncstageout/aso/state"
)

// spread orders the due users oldest first at the grain of their oldest
// due transfers (see grains), and shares them out between the fleets
// this fleet knows of (from the holders of run locks, see readLocks) by
// rendezvous hashing: each user belongs to the fleet with the highest
// score of the user (see fleetScore), whatever set of fleets each knows.
// Within a grain a fleet takes its own users first, best score first; the
// others' users come after its own of any grain that begins within an
// interval after theirs too, in the reverse of their owners' order (see
// backlog.others). Fleets on several hosts that look at the same moment
// then start different users, and meet head-on in another fleet's share
// only once that share outnumbers its owner's slots, instead of racing
// for the same run locks at every start. Fleets that do not know each
// other yet (the first round) take the users of a grain each in an order
// of its own: the more users a grain holds, the fewer they take alike.
func (f *Fleet) spread(due []state.UserDue) {
	type order struct {
		grain time.Time
		score uint64
	}
	key := make(map[string]order, len(due))
	f.backlog.others = map[string]bool{}
	interval := f.cfg.DiscoverInterval
	grain := grains(due, interval, grainSlots*f.cfg.MaxAgents)
	for _, u := range due {
		h := hash64(u.User)
		owner, best := f.place, fleetScore(f.place, h)
		for p := range f.backlog.fleets {
			if sc := fleetScore(p, h); sc > best {
				owner, best = p, sc
			}
		}
		g := grain[u.User]
		if owner == f.place {
			key[u.User] = order{g, ^best >> 1} // best score first
			continue
		}
		f.backlog.others[u.User] = true
		key[u.User] = order{g.Add(interval), 1<<63 | best>>1} // worst score first
	}
	slices.SortStableFunc(due, func(a, b state.UserDue) int {
		ka, kb := key[a.User], key[b.User]
		return cmp.Or(ka.grain.Compare(kb.grain), cmp.Compare(ka.score, kb.score))
	})
}

// grainSlots is how many users a grain holds at least (see grains), in
// slots of this fleet: a fleet cannot count the slots of the fleets it
// does not know yet, so a grain holds enough for sixteen fleets of its
// size, four times the users that four such fleets start at once.
const grainSlots = 16

// grainSpan is how many discovery intervals a grain spans at most: no
// user waits behind users whose oldest due transfer is later than its
// own by more than that.
const grainSpan = 32

// grains tells when the grain of each user of due begins: taking the
// users oldest first by their oldest due transfer (Since), a grain begins
// with the oldest user not in an earlier one, holds every user due within
// one interval of its beginning, and more until it holds at least n
// users, but none due grainSpan intervals after its beginning or later. Where users come
// slowly (the enqueue of a real server spread 200 users' oldest
// transfers over 160 s, a user every 0.8 s), grains of one interval held
// fewer users than the fleets' slots, and fleets that did not know each
// other took the same ones; counted by users, a grain is as wide as the
// users' pace needs.
func grains(due []state.UserDue, interval time.Duration, n int) map[string]time.Time {
	byAge := slices.Clone(due)
	slices.SortStableFunc(byAge, func(a, b state.UserDue) int { return a.Since.Compare(b.Since) })
	grain := make(map[string]time.Time, len(due))
	var begin time.Time
	held := 0
	for _, u := range byAge {
		if past := u.Since.Sub(begin); held == 0 || past >= interval && (held >= n || past >= grainSpan*interval) {
			begin, held = u.Since, 0
		}
		grain[u.User] = begin
		held++
	}
	return grain
}

// fleetScore is the score of the user whose hash is h for the fleet at
// place p (see spread).
func fleetScore(p, h uint64) uint64 { return mix64(p ^ h) }

// fleetPlace is what names the fleet that runs as process h in the
// scores of users (see spread): the fleet's agents hold owner IDs of its
// process (see takeLock), so other fleets find it from the lock holders.
func fleetPlace(h holder.Holder) uint64 { return hash64(h.ID("")) }

// hash64 is a hash of s spread over all 64 bits: FNV-1a, whose high bits
// barely change with the last bytes of short names, then mix64.
func hash64(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return mix64(h.Sum64())
}

// mix64 is splitmix64's finalizer: each bit of x changes about half the
// bits of the result.
func mix64(x uint64) uint64 {
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// sameDue reports whether two entries of a user show the same work.
func sameDue(a, b state.UserDue) bool {
	return a.Since.Equal(b.Since) && a.Queued == b.Queued && a.Active == b.Active && a.DepsOnly == b.DepsOnly
}
