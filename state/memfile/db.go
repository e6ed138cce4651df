package memfile

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/google/btree"

	"github.com/asyncstageout/aso/state"
)

// invalidDoc is a stored document that is not a valid transfer: kept as it
// is (so compaction does not lose it) and skipped by every call.
type invalidDoc struct {
	raw    []byte
	reason string
}

// userIndex indexes the transfers of one user.
type userIndex struct {
	byState map[state.State]map[string]*state.Transfer
	// queue holds the new and acquired transfers in claim order.
	queue *btree.BTreeG[*state.Transfer]
}

// span is where the current encoding of a document lies in the file, so
// compaction copies bytes instead of encoding every document again.
type span struct {
	off int64
	n   int
}

// db is the in-memory state. Stored transfers are never modified in place:
// a change replaces the pointer, so readers may keep old ones.
type db struct {
	docs    map[string]*state.Transfer
	invalid map[string]invalidDoc
	locks   map[string]*state.LockDoc
	users   map[string]*userIndex
	// at locates every transfer and invalid document in the file.
	at map[string]span
}

func newDB() *db {
	return &db{docs: map[string]*state.Transfer{}, invalid: map[string]invalidDoc{}, locks: map[string]*state.LockDoc{}, users: map[string]*userIndex{}, at: map[string]span{}}
}

func (d *db) user(u string) *userIndex {
	ui := d.users[u]
	if ui == nil {
		ui = &userIndex{byState: map[state.State]map[string]*state.Transfer{}, queue: btree.NewG(16, state.ClaimLess)}
		d.users[u] = ui
	}
	return ui
}

func inQueue(s state.State) bool { return s == state.StateNew || s == state.StateAcquired }

func (d *db) unindex(t *state.Transfer) {
	ui := d.user(t.User)
	delete(ui.byState[t.State], t.ID)
	if inQueue(t.State) {
		ui.queue.Delete(t)
	}
}

// put stores t, encoded in the file at sp, replacing any document with its ID.
func (d *db) put(t *state.Transfer, sp span) {
	d.at[t.ID] = sp
	if old := d.docs[t.ID]; old != nil {
		d.unindex(old)
	}
	delete(d.invalid, t.ID)
	d.docs[t.ID] = t
	ui := d.user(t.User)
	m := ui.byState[t.State]
	if m == nil {
		m = map[string]*state.Transfer{}
		ui.byState[t.State] = m
	}
	m[t.ID] = t
	if inQueue(t.State) {
		ui.queue.ReplaceOrInsert(t)
	}
}

// putInvalid replaces any document with id by an invalid one, found in the
// file at sp.
func (d *db) putInvalid(id string, raw []byte, reason string, sp span) {
	d.at[id] = sp
	if old := d.docs[id]; old != nil {
		d.unindex(old)
		delete(d.docs, id)
	}
	delete(d.locks, id)
	d.invalid[id] = invalidDoc{raw: raw, reason: reason}
}

func (d *db) putLock(l *state.LockDoc) {
	if _, bad := d.invalid[l.ID]; bad {
		delete(d.invalid, l.ID)
		delete(d.at, l.ID)
	}
	d.locks[l.ID] = l
}

// edit returns a copy of t for a rule to change. The rules of package state
// only assign fields and append to History; they never write into a slice
// or map they did not make. So the copy shares them with t, and History is
// clipped so that an append reallocates instead of writing into t's array.
func edit(t *state.Transfer) *state.Transfer {
	c := *t
	c.History = slices.Clip(t.History)
	return &c
}

// clone returns a deep copy of t, for callers who may change it freely.
func clone(t *state.Transfer) *state.Transfer {
	c := *t
	c.History = slices.Clone(t.History)
	c.DependsOn = slices.Clone(t.DependsOn)
	c.Checksums = maps.Clone(t.Checksums)
	if t.Progress != nil {
		p := *t.Progress
		c.Progress = &p
	}
	return &c
}

// nextRev returns the revision after rev: "N-suffix" with N one more.
func nextRev(rev string, suffix uint64) string {
	n := 0
	if i := strings.IndexByte(rev, '-'); i > 0 {
		n, _ = strconv.Atoi(rev[:i])
	}
	return strconv.Itoa(n+1) + "-" + strconv.FormatUint(suffix, 16)
}

// tx is one operation: it reads the db through its own staged writes, which
// are applied only after they were appended to the file.
type tx struct {
	d      *db
	docs   map[string]*state.Transfer
	locks  map[string]*state.LockDoc
	order  []string // IDs in write order
	revGen func() uint64
}

func newTx(d *db, revGen func() uint64) *tx {
	return &tx{d: d, docs: map[string]*state.Transfer{}, locks: map[string]*state.LockDoc{}, revGen: revGen}
}

// get returns the current transfer with id, or nil.
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

func (x *tx) empty() bool { return len(x.order) == 0 }

// apply moves the staged writes into the db; spans[i] locates the i-th
// staged document in the file.
func (x *tx) apply(spans []span) {
	for i, id := range x.order {
		if t, ok := x.docs[id]; ok {
			x.d.put(t, spans[i])
		} else {
			x.d.putLock(x.locks[id])
		}
	}
}
