package state

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

// LinkBudget counts a claim's transfers per link against the cap of a
// ClaimRequest.
type LinkBudget struct {
	r    ClaimRequest
	used map[string]int
}

// NewLinkBudget starts counting from r.Held.
func NewLinkBudget(r ClaimRequest) *LinkBudget {
	return &LinkBudget{r: r, used: map[string]int{}}
}

// Take reserves one transfer of link; false when the link is at its cap.
func (b *LinkBudget) Take(link string) bool {
	if b.r.MaxPerLink > 0 && b.r.Held[link]+b.used[link] >= b.r.MaxPerLink {
		return false
	}
	b.used[link]++
	return true
}

// Return gives back a reservation that was not claimed after all.
func (b *LinkBudget) Return(link string) { b.used[link]-- }
