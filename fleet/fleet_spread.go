package fleet

import (
	"cmp"
	"hash/fnv"
	"slices"
	"time"

	"github.com/asyncstageout/aso/internal/holder"
	"github.com/asyncstageout/aso/state"
)

// spread orders the due users oldest first at the grain of a discovery
// interval (counted from the oldest), and shares them out between the fleets this fleet knows of
// (from the holders of run locks, see readLocks) by rendezvous hashing:
// each user belongs to the fleet with the highest score of the user (see
// fleetScore), whatever set of fleets each knows. Within a grain a fleet
// takes its own users first, best score first; the others' users come
// after its own of the next grain too, in the reverse of their owners'
// order (see backlog.others). Fleets on several hosts that look at the
// same moment then start different users, and meet head-on in another
// fleet's share only once that share outnumbers its owner's slots,
// instead of racing for the same run locks at every start.
func (f *Fleet) spread(due []state.UserDue) {
	grain := f.cfg.DiscoverInterval
	type order struct {
		grain time.Time
		score uint64
	}
	key := make(map[string]order, len(due))
	f.backlog.others = map[string]bool{}
	if len(due) == 0 {
		return
	}
	// grains counted from the oldest: the first holds a whole interval's
	// users, enough for the slots of fleets that do not know each other yet
	oldest := slices.MinFunc(due, func(a, b state.UserDue) int { return a.Since.Compare(b.Since) }).Since
	for _, u := range due {
		h := hash64(u.User)
		owner, best := f.place, fleetScore(f.place, h)
		for p := range f.backlog.fleets {
			if sc := fleetScore(p, h); sc > best {
				owner, best = p, sc
			}
		}
		g := oldest.Add(u.Since.Sub(oldest) / grain * grain)
		if owner == f.place {
			key[u.User] = order{g, ^best >> 1} // best score first
			continue
		}
		f.backlog.others[u.User] = true
		key[u.User] = order{g.Add(grain), 1<<63 | best>>1} // worst score first
	}
	slices.SortStableFunc(due, func(a, b state.UserDue) int {
		ka, kb := key[a.User], key[b.User]
		return cmp.Or(ka.grain.Compare(kb.grain), cmp.Compare(ka.score, kb.score))
	})
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
