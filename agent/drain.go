package agent

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/asyncstageout/aso/state"
)

// viewLagGrace bounds how long the agent waits for a lagging view to show a
// transfer of its own that is due (see waitingSoon).
const viewLagGrace = 2 * time.Minute

// maxUnconfirmed bounds the drain checks in a row that find the queue
// empty but cannot read the agent's own transfers, after which it exits.
const maxUnconfirmed = 3

// drainCheck decides, after a pass that found nothing to do, whether the
// run may end or must wait for work that is coming.
type drainCheck struct {
	cfg   Config
	store Store
	book  *ledger
	log   *logrus.Entry
	// unconfirmed counts the checks in a row that could not read the
	// agent's own transfers.
	unconfirmed int
}

func newDrainCheck(cfg Config, store Store, book *ledger, log *logrus.Entry) *drainCheck {
	return &drainCheck{cfg: cfg, store: store, book: book, log: log}
}

// waitingSoon reports whether some transfer of the user will become
// claimable before the run must end (a cool-off or an expired lease passing
// before the --max-runtime deadline of a run that started at start; any
// time without one), or became claimable after the last claim (at
// claimedAt), so the agent should wait for it instead of exiting.
// Transfers blocked only by dependencies are not counted: they become
// claimable through other transfers' progress, which keeps passes busy
// anyway. The transfers this agent claimed and has not seen end are read
// by ID, since the lists may lag behind its own writes (a CouchDB
// cluster's views): one still submitted counts too.
func (d *drainCheck) waitingSoon(ctx context.Context, start, claimedAt time.Time) bool {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.PhaseTimeout)
	defer cancel()
	ts, err := d.store.List(ctx, state.Filter{User: d.cfg.User, States: []state.State{state.StateNew, state.StateAcquired}})
	if err != nil {
		d.log.WithError(err).Warn("cannot list waiting transfers; exiting anyway")
		return false
	}
	own, ok := d.own(ctx)
	if !ok {
		return true
	}
	now := d.cfg.Now()
	for i := range own {
		t := &own[i]
		if t.State == state.StateSubmitted {
			return true
		}
		// one of ours back in the queue and due, but not claimed: the
		// claim's view had not seen it yet; wait for the view, a while
		// after it became due: at the end of its cool-off, or when it
		// was written back without one (a lost job, a release)
		due := t.RetryAfter.Time
		if t.LastUpdate.After(due) {
			due = t.LastUpdate.Time
		}
		if t.State == state.StateNew && !due.After(now) && now.Sub(due) < viewLagGrace {
			return true
		}
	}
	ts = append(ts, own...)
	horizon := time.Unix(1<<62, 0)
	if d.cfg.MaxRuntime > 0 {
		horizon = start.Add(d.cfg.MaxRuntime)
	}
	for i := range ts {
		t := &ts[i]
		if t.State == state.StateAcquired && !t.LeaseExpires.After(horizon) {
			return true
		}
		if t.State == state.StateNew && t.RetryAfter.After(claimedAt) && !t.RetryAfter.After(horizon) {
			return true
		}
	}
	return false
}

// own reads by ID the transfers this agent claimed and has not seen end,
// and forgets those read terminal. ok is false when they could
// not be read, a few checks in a row at most: the caller waits for the
// next pass rather than exit on what the views alone show.
func (d *drainCheck) own(ctx context.Context) ([]state.Transfer, bool) {
	ids := d.book.unsettledIDs()
	if len(ids) == 0 {
		return nil, true
	}
	read, err := d.store.List(ctx, state.Filter{IDs: ids})
	if err != nil {
		d.unconfirmed++
		if d.unconfirmed <= maxUnconfirmed {
			d.log.WithError(err).Warn("cannot confirm the claimed transfers by reading them; not exiting yet")
			return nil, false
		}
		d.log.WithError(err).Error("cannot confirm the claimed transfers by reading them; exiting on what the views show")
		return nil, true
	}
	d.unconfirmed = 0
	var out []state.Transfer
	var ended []string
	for _, t := range read {
		if t.State.Terminal() {
			ended = append(ended, t.ID)
		} else {
			out = append(out, t)
		}
	}
	d.book.settled(ended) // one not read (a conflict left unresolved) is asked again next time
	return out, true
}
