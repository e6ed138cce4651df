package agent

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/asyncstageout/aso/state"
)

// claimer claims the user's transfers a batch at a time. With
// Config.MaxActivePerLink it spreads the claims over links (priority
// first, then links in turn by oldest waiting) and tells the store how
// many transfers of each link the agent already holds, so that no link
// exceeds the cap: a slow link with a huge backlog does not hold back the
// others.
type claimer struct {
	cfg   Config
	store Store
	book  *ledger
	log   *logrus.Entry

	mu sync.Mutex
	// at is when the last claim asked for new transfers: one whose
	// cool-off ended since then was not eligible for that claim.
	at time.Time
}

func newClaimer(cfg Config, store Store, book *ledger, log *logrus.Entry) *claimer {
	return &claimer{cfg: cfg, store: store, book: book, log: log.WithField(FieldPhase, "submit")}
}

// claimResult is the outcome of one claim.
type claimResult struct {
	c   state.Claimed
	err error
}

// start claims one batch in the background and returns where its result
// arrives. What the agent holds per link is counted now, so that a claim
// running while the batch before is submitted sees each of that batch's
// transfers exactly once (held or submitted). Whatever a started claim
// returns must be taken (take), so that it is held and released at
// shutdown.
func (c *claimer) start(work context.Context) <-chan claimResult {
	c.mu.Lock()
	c.at = c.cfg.Now()
	c.mu.Unlock()
	r := state.ClaimRequest{Limit: c.cfg.BatchSize}
	if c.cfg.MaxActivePerLink > 0 {
		r.MaxPerLink, r.Held = c.cfg.MaxActivePerLink, c.book.heldPerLink()
	}
	out := make(chan claimResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(work, c.cfg.PhaseTimeout)
		defer cancel()
		got, err := c.store.NewTransfers(ctx, r)
		out <- claimResult{got, err}
	}()
	return out
}

// take holds a claimed batch and counts it, and reports whether it came
// back full, short of the end of the queue.
func (c *claimer) take(r claimResult, t *tally) bool {
	if r.err != nil {
		t.fail("submit", "claiming transfers failed; retrying next pass", r.err)
	}
	if n := r.c.Contended; n > 0 {
		// those transfers may still be due: the queue has not drained
		t.fail("submit", "claims not confirmed; claiming again next pass",
			fmt.Errorf("%d due transfers could not be claimed: another write changed them first, or the cluster did not confirm the claim", n))
	}
	t.claimed(r.c)
	c.book.hold(r.c.Transfers)
	return r.err == nil && len(r.c.Transfers) == c.cfg.BatchSize && !r.c.End
}

// lastClaim is when the last claim started.
func (c *claimer) lastClaim() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}
