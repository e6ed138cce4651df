package serve

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/asyncstageout/aso/internal/statusview"
	"github.com/asyncstageout/aso/state"
)

// listPage is /transfers: the transfers the filters of `aso list` select,
// oldest created first, a page at a time (keyset paging on the order of
// List: one store call a page, whatever the page's position).
type listPage struct{ *Server }

// listQuery is a list request: its filters as given, the page's start and
// size.
type listQuery struct {
	User  string
	Sel   statusview.Selection
	After *state.ListKey
	Limit int
}

// listData is what the list template reads.
type listData struct {
	Viewer    *viewer
	Q         listQuery
	Transfers []listRow
	Next      string // URL of the next page, "" on the last
	First     string // URL of the first page, "" on it
	States    []state.State
	Classes   []string
	Now       time.Time
	Self      string // the page's address, behind /api for its JSON
}

// listRow is one transfer of a list page, with what it waits for.
type listRow struct {
	*state.Transfer
	Why string
}

// serve answers a list request: JSON lines (as `aso list --json`) on the
// API with the next page in a Link header, a page otherwise.
func (p listPage) serve(w http.ResponseWriter, r *http.Request, v *viewer, _ bool) {
	q, f, err := p.parse(r, v)
	if err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, errOtherUser) {
			code = http.StatusForbidden
		}
		p.refuse(w, r, code, err.Error())
		return
	}
	f.Limit = q.Limit + 1 // one more tells whether a next page exists
	ts, err := p.o.Store.List(r.Context(), f)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	next := ""
	if len(ts) > q.Limit {
		ts = ts[:q.Limit]
		k := state.KeyOf(&ts[len(ts)-1])
		next = q.url(r.URL.Path, &k)
	}
	if isAPI(r) {
		if next != "" {
			w.Header().Set("Link", "<"+next+`>; rel="next"`)
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		out := jsonLines(w)
		for i := range ts {
			if err := out.Encode(&ts[i]); err != nil {
				return
			}
		}
		return
	}
	d := &listData{Viewer: v, Q: q, Next: next, States: state.States, Classes: classNames(), Now: p.o.Now(), Self: r.URL.RequestURI()}
	if q.After != nil {
		d.First = q.url(r.URL.Path, nil)
	}
	for i := range ts {
		d.Transfers = append(d.Transfers, listRow{Transfer: &ts[i], Why: brief(&ts[i], d.Now)})
	}
	p.pages.render(w, http.StatusOK, "list", d)
}

// errOtherUser refuses a request that names a user the viewer may not see.
var errOtherUser = errors.New("you may see your own transfers only")

// parse reads the filters of a list request (named after the flags of
// aso list), the page's start (after=CREATED,ID) and size (limit).
func (p listPage) parse(r *http.Request, v *viewer) (listQuery, state.Filter, error) {
	qs := r.URL.Query()
	var q listQuery
	user, ok := v.scope(qs.Get("user"))
	if !ok {
		return q, state.Filter{}, errOtherUser
	}
	q.User = qs.Get("user")
	for _, s := range qs["in-state"] {
		for _, st := range strings.Split(s, ",") {
			if st = strings.TrimSpace(st); st != "" {
				q.Sel.States = append(q.Sel.States, st)
			}
		}
	}
	q.Sel.Link, q.Sel.LFN, q.Sel.FTSJob = qs.Get("link"), qs.Get("lfn"), qs.Get("fts-job")
	q.Sel.Class, q.Sel.Since, q.Sel.Verified = qs.Get("error-class"), qs.Get("since"), qs.Get("verified")
	f, err := q.Sel.Filter(user, p.o.Now())
	if err != nil {
		return q, f, err
	}
	q.Limit = p.o.PageSize
	if l := qs.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n <= 0 || n > MaxPageSize {
			return q, f, fmt.Errorf("limit %q: want 1 to %d", l, MaxPageSize)
		}
		q.Limit = n
	}
	if a := qs.Get("after"); a != "" {
		created, id, ok := strings.Cut(a, ",")
		t, err := time.Parse(time.RFC3339Nano, created)
		if !ok || err != nil || !state.ValidID(id) {
			return q, f, fmt.Errorf("after %q: want CREATED,ID as the next-page link gives it", a)
		}
		q.After = &state.ListKey{Created: state.At(t), ID: id}
		f.After = q.After
	}
	return q, f, nil
}

// url is the address of the list at path with q's filters, starting after
// key (nil: the first page).
func (q listQuery) url(path string, after *state.ListKey) string {
	v := q.values()
	if after != nil {
		v.Set("after", after.Created.String()+","+after.ID)
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return path + "?" + v.Encode()
}

// values are q's filters as query parameters.
func (q listQuery) values() url.Values {
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	set("user", q.User)
	if len(q.Sel.States) > 0 {
		v.Set("in-state", strings.Join(q.Sel.States, ","))
	}
	set("link", q.Sel.Link)
	set("lfn", q.Sel.LFN)
	set("fts-job", q.Sel.FTSJob)
	set("error-class", q.Sel.Class)
	set("since", q.Sel.Since)
	set("verified", q.Sel.Verified)
	return v
}

// HasState reports whether the query selects state st (for the form).
func (q listQuery) HasState(st state.State) bool {
	for _, s := range q.Sel.States {
		if s == string(st) {
			return true
		}
	}
	return false
}
