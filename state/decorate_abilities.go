package state

import (
	"context"
	"time"
)

// The optional abilities of a decorated store (see Wrap), each with the
// decorator's hooks around its calls.

type multiHooked struct {
	d *decorated
	a MultiSubmitter
}

func (m multiHooked) PrepareSubmits(ctx context.Context, jobs []PrepareJob) ([][]Result, error) {
	return call(m.d, ctx, "PrepareSubmits", resultItems, func(ctx context.Context) ([][]Result, error) {
		return m.a.PrepareSubmits(ctx, jobs)
	})
}

func (m multiHooked) SetTransferIDs(ctx context.Context, jobs []CommitJob) ([][]Result, error) {
	return call(m.d, ctx, "SetTransferIDs", resultItems, func(ctx context.Context) ([][]Result, error) {
		return m.a.SetTransferIDs(ctx, jobs)
	})
}

type pagerHooked struct {
	d *decorated
	a ActivePager
}

func (p pagerHooked) ActiveJobs(ctx context.Context, user string) ([]JobRef, error) {
	return call(p.d, ctx, "ActiveJobs", nil, func(ctx context.Context) ([]JobRef, error) {
		return p.a.ActiveJobs(ctx, user)
	})
}

func (p pagerHooked) ActiveTransfersOf(ctx context.Context, user string, jobs []string) ([]Job, error) {
	return call(p.d, ctx, "ActiveTransfersOf", jobTransfers, func(ctx context.Context) ([]Job, error) {
		return p.a.ActiveTransfersOf(ctx, user, jobs)
	})
}

type confirmerHooked struct {
	d *decorated
	a Confirmer
}

func (c confirmerHooked) Unsettled(ctx context.Context) ([]Transfer, error) {
	return call(c.d, ctx, "Unsettled", count[Transfer], c.a.Unsettled)
}

type recovererHooked struct {
	d *decorated
	a Recoverer
}

func (r recovererHooked) TakeBack(ctx context.Context, l Lock) ([]Transfer, error) {
	return call(r.d, ctx, "TakeBack", count[Transfer], func(ctx context.Context) ([]Transfer, error) {
		return r.a.TakeBack(ctx, l)
	})
}

type recorderHooked struct {
	d *decorated
	a RunRecorder
}

func (r recorderHooked) ReleaseLockRecord(ctx context.Context, l Lock, run RunRecord) error {
	return call0(r.d, ctx, "ReleaseLockRecord", func(ctx context.Context) error {
		return r.a.ReleaseLockRecord(ctx, l, run)
	})
}

type linksHooked struct {
	d *decorated
	a LinkClaimer
}

func (l linksHooked) NewTransfersByLink(ctx context.Context, limit int, o ClaimOptions) ([]Transfer, error) {
	return call(l.d, ctx, "NewTransfersByLink", count[Transfer], func(ctx context.Context) ([]Transfer, error) {
		return l.a.NewTransfersByLink(ctx, limit, o)
	})
}

type enderHooked struct {
	d *decorated
	a QueueEnder
}

// NewTransfersEnd is, to the hooks, the claim it is: "NewTransfers".
func (e enderHooked) NewTransfersEnd(ctx context.Context, limit int) ([]Transfer, bool, error) {
	var end bool
	ts, err := call(e.d, ctx, "NewTransfers", count[Transfer], func(ctx context.Context) ([]Transfer, error) {
		ts, atEnd, err := e.a.NewTransfersEnd(ctx, limit)
		end = atEnd
		return ts, err
	})
	return ts, end, err
}

type usersHooked struct {
	d *decorated
	a UserLister
}

func (u usersHooked) DueUsers(ctx context.Context, now time.Time) ([]UserDue, error) {
	return call(u.d, ctx, "DueUsers", nil, func(ctx context.Context) ([]UserDue, error) {
		return u.a.DueUsers(ctx, now)
	})
}

type lockAdminHooked struct {
	d *decorated
	a LockAdmin
}

func (l lockAdminHooked) Locks(ctx context.Context, user string) ([]LockDoc, error) {
	return call(l.d, ctx, "Locks", nil, func(ctx context.Context) ([]LockDoc, error) {
		return l.a.Locks(ctx, user)
	})
}

func (l lockAdminHooked) Unlock(ctx context.Context, user, holder, note string) error {
	return call0(l.d, ctx, "Unlock", func(ctx context.Context) error {
		return l.a.Unlock(ctx, user, holder, note)
	})
}

type purgerHooked struct {
	d *decorated
	a Purger
}

func (p purgerHooked) Purge(ctx context.Context, o PurgeOptions) (int, error) {
	return call(p.d, ctx, "Purge", func(n int) int { return n }, func(ctx context.Context) (int, error) {
		return p.a.Purge(ctx, o)
	})
}
