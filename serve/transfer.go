package serve

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/asyncstageout/aso/internal/statusview"
	"github.com/asyncstageout/aso/state"
)

// transferPage is /transfers/{id}: one transfer, everything `aso status
// ID` shows (the JSON is its --json), and on the page where it is and why
// it is not done yet.
type transferPage struct{ *Server }

// transferData is what the transfer template reads.
type transferData struct {
	Viewer *viewer
	statusview.Transfer
	Where []string
	Lock  *statusview.LockView
	Now   time.Time
}

// minIDPrefix is the shortest ID prefix the page looks up, as aso status.
const minIDPrefix = 8

func (p transferPage) serve(w http.ResponseWriter, r *http.Request, v *viewer, _ bool) {
	ctx := r.Context()
	user, _ := v.scope("")
	id := strings.ToLower(r.PathValue("id"))
	if !state.ValidID(id) {
		if len(id) < minIDPrefix || len(id) > 64 || strings.Trim(id, "0123456789abcdef") != "" {
			p.refuse(w, r, http.StatusBadRequest, "transfer ID "+id+": want at least 8 of its 64 hexadecimal digits")
			return
		}
		ts, err := p.o.Store.List(ctx, state.Filter{IDPrefix: id, User: user, Limit: 2})
		if err != nil {
			p.fail(w, r, err)
			return
		}
		if len(ts) != 1 {
			p.refuse(w, r, http.StatusNotFound, "transfer ID prefix "+id+" names "+map[bool]string{true: "no transfer", false: "several transfers: give more digits"}[len(ts) == 0])
			return
		}
		id = ts[0].ID
	}
	t, err := p.o.Store.Get(ctx, id)
	if err == nil && user != "" && t.User != user {
		err = state.ErrNotFound // as aso status --user: another's is not found
	}
	if errors.Is(err, state.ErrNotFound) {
		p.refuse(w, r, http.StatusNotFound, "transfer "+id+": not found")
		return
	}
	if err != nil {
		p.fail(w, r, err)
		return
	}
	deps, err := statusview.Dependencies(ctx, p.o.Store, &t)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	view := statusview.Transfer{Transfer: &t, Dependencies: deps}
	if isAPI(r) {
		p.answer(w, r, "transfer", view)
		return
	}
	now := p.o.Now()
	d := &transferData{Viewer: v, Transfer: view, Now: now}
	if locks, err := statusview.Locks(ctx, p.o.Store, t.User, now); err == nil && len(locks) == 1 {
		d.Lock = &locks[0] // one read of one lock document; without it the page says less
	}
	d.Where = explain(&t, deps, d.Lock, now, p.o.StaleAfter)
	p.pages.render(w, http.StatusOK, "transfer", d)
}
