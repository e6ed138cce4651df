package state

import "context"

// ClaimOptions parameterise a link-fair claim (LinkClaimer).
type ClaimOptions struct {
	// MaxPerLink caps a link's transfers held by the caller: Active[link]
	// plus those claimed by the call never exceed it. 0: no cap.
	MaxPerLink int
	// Active counts the caller's transfers per link ("SRC->DST") that are
	// already acquired or submitted.
	Active map[string]int
}

// LinkClaimer is the optional ability of a store to claim fairly across
// links, in the one round trip of a claim: within one user's queue a slow
// link with a huge backlog does not hold back the others.
type LinkClaimer interface {
	// NewTransfersByLink claims like NewTransfers, but in SpreadOrder and
	// passing over the transfers of links at o.MaxPerLink.
	NewTransfersByLink(ctx context.Context, limit int, o ClaimOptions) ([]Transfer, error)
}

// QueueEnder is the optional ability of a store to say, with a claim,
// whether it saw the end of the caller's queue.
type QueueEnder interface {
	// NewTransfersEnd claims like NewTransfers and reports whether the
	// claim went through every due transfer of the queue as it read it:
	// then a claim that returned limit transfers need not be followed by
	// another at once (the queue may have held exactly limit). A transfer
	// queued while the claim ran, or that the store's reading did not show
	// yet (see StaleClaimWindow), waits for the caller's next claim, which
	// then reads the queue afresh. false says nothing: the queue may or may
	// not hold more.
	NewTransfersEnd(ctx context.Context, limit int) ([]Transfer, bool, error)
}

// SpreadOrder returns the positions 0..n-1 of candidates given in claim
// order (priority descending, then oldest first) in fair order: priority
// still first; within one priority the links take turns, one transfer
// each, the link whose oldest waiting transfer is oldest (the first to
// appear) going first; each link's own order is kept.
func SpreadOrder[L comparable](n int, priority func(i int) int, link func(i int) L) []int {
	out := make([]int, 0, n)
	for lo := 0; lo < n; {
		hi := lo
		for hi < n && priority(hi) == priority(lo) {
			hi++
		}
		var links []L // in order of first appearance: oldest waiting first
		byLink := map[L][]int{}
		for i := lo; i < hi; i++ {
			l := link(i)
			if _, seen := byLink[l]; !seen {
				links = append(links, l)
			}
			byLink[l] = append(byLink[l], i)
		}
		for turn := 0; len(out) < hi; turn++ {
			for _, l := range links {
				if q := byLink[l]; turn < len(q) {
					out = append(out, q[turn])
				}
			}
		}
		lo = hi
	}
	return out
}

// LinkBudget counts a claim's transfers per link against ClaimOptions.
type LinkBudget struct {
	o    ClaimOptions
	used map[string]int
}

// NewLinkBudget starts counting from o.Active.
func NewLinkBudget(o ClaimOptions) *LinkBudget {
	return &LinkBudget{o: o, used: map[string]int{}}
}

// Take reserves one transfer of link; false when the link is at its cap.
func (b *LinkBudget) Take(link string) bool {
	if b.o.MaxPerLink > 0 && b.o.Active[link]+b.used[link] >= b.o.MaxPerLink {
		return false
	}
	b.used[link]++
	return true
}

// Return gives back a reservation that was not claimed after all.
func (b *LinkBudget) Return(link string) { b.used[link]-- }
