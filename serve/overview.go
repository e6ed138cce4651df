package serve

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/asyncstageout/aso/state"
)

// overviewPages are the overview, user and link pages: each an Overview
// of the cached snapshot.
type overviewPages struct{ *Server }

// overviewData is what the overview, user and link templates read.
type overviewData struct {
	*Overview
	Viewer       *viewer
	Day, Week    *chart
	StateOrder   []state.State
	ClassesShown []classCount
	// SelfPath is the page's path, behind /api for its JSON.
	SelfPath string
}

type classCount struct {
	Class string
	Count int
}

// overview serves /: every user's transfers for an operator; a user is
// sent to the page of their own.
func (p overviewPages) overview(w http.ResponseWriter, r *http.Request, v *viewer, _ bool) {
	if !v.Operator {
		target := "/users/" + url.PathEscape(v.Name)
		if isAPI(r) {
			target = "/api" + target
		}
		http.Redirect(w, r, target, http.StatusSeeOther)
		return
	}
	p.show(w, r, v, "", "", "overview")
}

// user serves /users/{user}.
func (p overviewPages) user(w http.ResponseWriter, r *http.Request, v *viewer, _ bool) {
	user := r.PathValue("user")
	if err := state.CheckUser(user); err != nil {
		p.refuse(w, r, http.StatusBadRequest, err.Error())
		return
	}
	if _, ok := v.scope(user); !ok {
		p.refuse(w, r, http.StatusForbidden, "you may see the transfers of "+v.Name+" only")
		return
	}
	p.show(w, r, v, user, "", "user")
}

// link serves /links/{link}: a user sees their own transfers on it.
func (p overviewPages) link(w http.ResponseWriter, r *http.Request, v *viewer, _ bool) {
	link := r.PathValue("link")
	if src, dst, ok := strings.Cut(link, "->"); !ok || src == "" || dst == "" {
		p.refuse(w, r, http.StatusBadRequest, "link "+link+": want SRC->DST")
		return
	}
	user, _ := v.scope("")
	p.show(w, r, v, user, link, "link")
}

func (p overviewPages) show(w http.ResponseWriter, r *http.Request, v *viewer, user, link, page string) {
	snap, err := p.snapshot(r.Context(), user)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	o := overviewOf(snap, user, link)
	if isAPI(r) {
		p.answer(w, r, page, o)
		return
	}
	d := &overviewData{Overview: o, Viewer: v, StateOrder: state.States, SelfPath: strings.TrimPrefix(r.URL.EscapedPath(), "/api"),
		Day: hourChart(o.Hours, snap.At, chartDay), Week: hourChart(o.Hours, snap.At, chartWeek)}
	if d.SelfPath == "/" {
		d.SelfPath = "/overview"
	}
	for _, c := range classOrder(o.ByErrorClass) {
		d.ClassesShown = append(d.ClassesShown, classCount{c, o.ByErrorClass[c]})
	}
	p.answer(w, r, page, d)
}
