package fleet

import (
	"context"
	"time"

	"github.com/asyncstageout/aso/state"
)

// discovery is the answer of one query of the users with due work (see
// ask).
type discovery struct {
	due []state.UserDue
	at  time.Time // when it was asked (this host's clock)
	err error
}

// discoverer asks the store for the users with due work, one query at a
// time, beside the fleet's loop: the users view reduces every transfer
// not done, which on a busy server takes seconds, and the loop goes on
// filling the slots freed from the backlog meanwhile. The answer comes
// through answers; the loop keeps it (got) for its next round (take).
type discoverer struct {
	lister interface {
		DueUsers(ctx context.Context, now time.Time) ([]state.UserDue, error)
	}
	timeout time.Duration
	answers chan discovery
	asking  bool // a query is under way
	answer  *discovery
}

// ask starts a query of the users with due work (one request), unless one
// is under way.
func (d *discoverer) ask(ctx context.Context) {
	if d.asking {
		return
	}
	d.asking = true
	go func() { d.answers <- d.query(ctx) }()
}

// query asks the store for the users with due work (see ask).
func (d *discoverer) query(ctx context.Context) discovery {
	now := time.Now()
	qctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	due, err := d.lister.DueUsers(qctx, now)
	return discovery{due: due, at: now, err: err}
}

// got keeps the answer a that came through answers.
func (d *discoverer) got(a discovery) { d.asking, d.answer = false, &a }

// take returns the answer kept, if any, and forgets it.
func (d *discoverer) take() *discovery {
	a := d.answer
	d.answer = nil
	return a
}
