package serve

import (
	"context"
	"net/http"
	"time"

	"github.com/asyncstageout/aso/internal/statusview"
	"github.com/asyncstageout/aso/state"
)

// statusPage is /status: exactly what `aso status` shows (the JSON is
// its --json; ?user=U as --user U, every user's without), cached like
// the counts. Its summary reads every document (stale and stuck
// transfers, invalid documents), so it costs what aso status costs.
type statusPage struct{ *Server }

// statusData is what the status template reads.
type statusData struct {
	Viewer *viewer
	statusview.Status
	StaleAfter time.Duration
	StateOrder []state.State
	Now        time.Time
}

func (p statusPage) serve(w http.ResponseWriter, r *http.Request, v *viewer, _ bool) {
	user, ok := v.scope(r.URL.Query().Get("user"))
	if !ok {
		p.refuse(w, r, http.StatusForbidden, "you may see the transfers of "+v.Name+" only")
		return
	}
	val, err := p.cache.get(r.Context(), "status\x00"+user, func(ctx context.Context) (any, error) {
		return p.read(ctx, user)
	})
	if err != nil {
		p.fail(w, r, err)
		return
	}
	st := val.(*statusview.Status)
	if isAPI(r) {
		p.answer(w, r, "status", st)
		return
	}
	p.pages.render(w, http.StatusOK, "status", &statusData{Viewer: v, Status: *st, StaleAfter: p.o.StaleAfter, StateOrder: state.States, Now: p.o.Now()})
}

// read builds what aso status --json prints for user ("" every user).
func (p statusPage) read(ctx context.Context, user string) (*statusview.Status, error) {
	sum, err := p.o.Store.Summary(ctx, state.SummaryOptions{User: user, StaleAfter: p.o.StaleAfter})
	if err != nil {
		return nil, err
	}
	reasons, err := statusview.FailureReasons(ctx, p.o.Store, user)
	if err != nil {
		return nil, err
	}
	locks, err := statusview.Locks(ctx, p.o.Store, user, p.o.Now())
	if err != nil {
		return nil, err
	}
	out := statusview.NewStatus(user, sum)
	out.FailureReasons = reasons
	out.Locks = statusview.NonNil(locks)
	return &out, nil
}
