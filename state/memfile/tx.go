package memfile

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/asyncstageout/aso/state"
)

// tx is one operation: it reads memory through its own staged writes,
// which reach memory only once they are in the file (file.commit).
type tx struct {
	d      *db
	docs   map[string]*state.Transfer
	locks  map[string]*state.LockDoc
	order  []string // IDs in write order
	revGen func() uint64
}

// get returns the current transfer with id, staged or stored, nil if
// there is none. It is not the caller's to change (see edit).
func (x *tx) get(id string) *state.Transfer {
	if t, ok := x.docs[id]; ok {
		return t
	}
	return x.d.docs[id]
}

// exists reports whether any document (valid or not) has id.
func (x *tx) exists(id string) bool {
	_, bad := x.d.invalid[id]
	return bad || x.get(id) != nil
}

// put stages t with a new revision.
func (x *tx) put(t *state.Transfer) {
	t.Rev = nextRev(t.Rev, x.revGen())
	if _, ok := x.docs[t.ID]; !ok {
		x.order = append(x.order, t.ID)
	}
	x.docs[t.ID] = t
}

func (x *tx) getLock(id string) *state.LockDoc {
	if l, ok := x.locks[id]; ok {
		return l
	}
	return x.d.locks[id]
}

func (x *tx) putLock(l *state.LockDoc) {
	l.Rev = nextRev(l.Rev, x.revGen())
	if _, ok := x.locks[l.ID]; !ok {
		x.order = append(x.order, l.ID)
	}
	x.locks[l.ID] = l
}

// staged returns the documents x staged, in write order: transfers and
// run locks.
func (x *tx) staged() []any {
	docs := make([]any, len(x.order))
	for i, id := range x.order {
		if t, ok := x.docs[id]; ok {
			docs[i] = t
		} else {
			docs[i] = x.locks[id]
		}
	}
	return docs
}

// rule changes the stored transfer t (a copy, see edit) for item i and
// reports whether it must be written.
type rule func(i int, t *state.Transfer, now time.Time) (bool, error)

// each applies r to the current version of every ID: the revision each
// item carries does not matter, because r checks on the stored document
// that the item is still the caller's (re-read and re-apply, as the
// contract asks of a conflict). An ID given twice sees the write made for
// its first item.
func (x *tx) each(call string, ids []string, r rule, now time.Time) []state.Result {
	res := make([]state.Result, len(ids))
	for i, id := range ids {
		cur := x.get(id)
		if cur == nil {
			res[i] = state.Result{ID: id, Err: x.missing(call, id)}
			continue
		}
		c := edit(cur)
		write, err := r(i, c, now)
		switch {
		case err != nil:
			res[i] = state.Result{ID: id, Err: fmt.Errorf("memfile: %s: %w", call, err)}
		case !write:
			res[i] = state.Wrote(id, cur.Rev, c)
		default:
			x.put(c)
			res[i] = state.Wrote(id, c.Rev, c)
		}
	}
	return res
}

// missing is the error of a call on id, which no valid transfer has.
func (x *tx) missing(call, id string) error {
	if bad, ok := x.d.invalid[id]; ok {
		return fmt.Errorf("memfile: %s %s: the stored document is invalid (%s) and skipped: %w", call, id, bad.reason, state.ErrNotFound)
	}
	return fmt.Errorf("memfile: %s %s: %w", call, id, state.ErrNotFound)
}

// deps judges dependencies on the current state of x.
func (x *tx) deps(wait time.Duration) state.Deps {
	return state.Deps{Wait: wait, Node: func(id string) (state.DepNode, bool) {
		t := x.get(id)
		if t == nil {
			return state.DepNode{}, false
		}
		return state.DepNode{State: t.State, DependsOn: t.DependsOn}, true
	}}
}

// edit returns a copy of t for a rule to change. The rules of package
// state only assign fields and append to History; they never write into
// a slice or map they did not make. So the copy shares them with t, and
// History is clipped so that an append reallocates instead of writing
// into t's array.
func edit(t *state.Transfer) *state.Transfer {
	c := *t
	c.History = slices.Clip(t.History)
	return &c
}

// clone returns a copy of t that shares nothing mutable with it: what a
// call returns cannot change what memory holds.
func clone(t *state.Transfer) state.Transfer {
	c := *t
	c.Checksums = maps.Clone(t.Checksums)
	c.DependsOn = slices.Clone(t.DependsOn)
	c.History = slices.Clone(t.History)
	if t.Progress != nil {
		p := *t.Progress
		c.Progress = &p
	}
	return c
}

// clones returns a clone of each of ts.
func clones(ts []*state.Transfer) []state.Transfer {
	out := make([]state.Transfer, len(ts))
	for i, t := range ts {
		out[i] = clone(t)
	}
	return out
}

// nextRev returns the revision after rev: "N-suffix" with N one more.
func nextRev(rev string, suffix uint64) string {
	n := 0
	if i := strings.IndexByte(rev, '-'); i > 0 {
		n, _ = strconv.Atoi(rev[:i])
	}
	return strconv.Itoa(n+1) + "-" + strconv.FormatUint(suffix, 16)
}

// supersede records on the stored transfer id that t replaces or
// supersedes it (state.SupersedeOf), in the same write as t.
func (x *tx) supersede(id string, t *state.Transfer, now time.Time, by string) {
	cur := x.get(id)
	if cur == nil {
		return
	}
	o := edit(cur)
	if ok, err := state.SupersedeOf(o, t, now, by); ok && err == nil {
		x.put(o)
	}
}
