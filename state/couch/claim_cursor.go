package couch

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/asyncstageout/aso/state"
)

// A claim from the head of the queue is followed, for state.StaleClaimWindow,
// by claims that go on down the queue from where the last one stopped,
// reading the view as the server last indexed it (update=false) rather
// than waiting for it to index the writes since: the claims and commits of
// the batches before, which each claim's view query otherwise indexes
// again while a backlog drains. A claim whose stale rows hold, or yield,
// fewer due transfers than it needs reads the head afresh at once, so that
// a transfer queued or released meanwhile, or of a higher priority, waits
// at most the window (or, after a claim that saw the end of the queue, the
// caller's next claim, which reads the head).

// claimCursor is where the next claim of the store goes on down the queue.
type claimCursor struct {
	mu    sync.Mutex
	key   json.RawMessage // claim key of the last row a claim got past; nil: read the head
	until time.Time       // when the last read of the head is too old to go on from
}

// start returns where a claim at now begins: after key, on the view as it
// is (stale), or at the head of the queue, on an up-to-date view.
func (c *claimCursor) start(now time.Time) (after json.RawMessage, stale bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.key == nil || !now.Before(c.until) {
		return nil, false
	}
	return c.key, true
}

// recent reports whether a claim read the head of the queue, with the view
// brought up to date, less than state.StaleClaimWindow before now: until
// then the monitor's listings too read the view as it is (see ActiveJobs).
func (c *claimCursor) recent(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return now.Before(c.until)
}

// set records where the next claim goes on (nil: from the head); head
// reports that this claim read the head, at now.
func (c *claimCursor) set(key json.RawMessage, head bool, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.key = key
	if head {
		c.until = now.Add(state.StaleClaimWindow)
	}
}
