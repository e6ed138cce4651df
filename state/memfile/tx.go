package memfile

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/asyncstageout/aso/state"
)

// tx is one operation: it reads the db through its own staged writes, which
// are applied only after they were appended to the file.
type tx struct {
	d      *db
	src    *source
	docs   map[string]*state.Transfer
	locks  map[string]*state.LockDoc
	order  []string // IDs in write order
	revGen func() uint64
	stats  *Stats // the handle's, which counts the reads
}

func newTx(d *db, src *source, revGen func() uint64, stats *Stats) *tx {
	return &tx{d: d, src: src, docs: map[string]*state.Transfer{}, locks: map[string]*state.LockDoc{}, revGen: revGen, stats: stats}
}

// stateOf returns the current state of the transfer with id.
func (x *tx) stateOf(id string) (state.State, bool) {
	if t, ok := x.docs[id]; ok {
		return t.State, true
	}
	if i, ok := x.d.lookup(id); ok {
		return x.d.metas[i].State(), true
	}
	return "", false
}

// exists reports whether any document (valid or not) has id.
func (x *tx) exists(id string) bool {
	_, bad := x.d.invalid[id]
	_, ok := x.stateOf(id)
	return bad || ok
}

// read copies the stored transfers of slots into out[i]: from the cache
// when it holds their current version, else decoded from the file (and
// then cached). A caller that will write them (forWrite) takes them out of
// the cache instead, and what it decodes is not cached: the versions it
// writes replace them there.
func (x *tx) read(slots []int32, out []state.Transfer, forWrite bool) error {
	var spans []span
	var at []int   // out's index of each span
	var hit []bool // with checkHits: whether out holds the cached version
	hits := 0
	for i, s := range slots {
		sp := x.d.metas[s].at
		var ok bool
		if forWrite {
			ok = x.d.cache.take(sp, &out[i])
		} else {
			ok = x.d.cache.get(sp, &out[i])
		}
		if !ok || checkHits {
			spans, at, hit = append(spans, sp), append(at, i), append(hit, ok)
		}
		if ok {
			hits++
		}
	}
	x.stats.CacheHits += int64(hits)
	x.stats.Decoded += int64(len(slots) - hits)
	return x.src.readSpans(spans, func(k int, b []byte) error {
		t := &out[at[k]]
		if checkHits && hit[k] {
			return checkHit(b, t)
		}
		if err := decodeJSON(b, t); err != nil {
			return fmt.Errorf("%s at offset %d no longer decodes: %v", x.src.path, spans[k].off, err)
		}
		if !forWrite {
			x.d.cache.addRead(spans[k], t)
		}
		return nil
	})
}

// readAll returns the stored transfers of slots.
func (x *tx) readAll(slots []int32) ([]state.Transfer, error) {
	out := make([]state.Transfer, len(slots))
	return out, x.read(slots, out, false)
}

// readForWrite returns the stored transfers of slots, to be written (read).
func (x *tx) readForWrite(slots []int32) ([]state.Transfer, error) {
	out := make([]state.Transfer, len(slots))
	return out, x.read(slots, out, true)
}

// load returns the stored transfer of every ID (read, so private to the
// caller), or nil; what this tx staged is not looked at (the caller does).
// forWrite: the caller will write them (read).
func (x *tx) load(ids []string, forWrite bool) ([]*state.Transfer, error) {
	out := make([]*state.Transfer, len(ids))
	var at []int
	var slots []int32
	for i, id := range ids {
		if s, ok := x.d.lookup(id); ok {
			at = append(at, i)
			slots = append(slots, s)
		}
	}
	stored := make([]state.Transfer, len(slots))
	if err := x.read(slots, stored, forWrite); err != nil {
		return nil, err
	}
	for k, i := range at {
		out[i] = &stored[k]
	}
	return out, nil
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

// apply moves the staged writes into the db, once they are in the file:
// spans[i] locates the i-th staged document there, in rec, the record
// appended at offset at. The staged transfers are cached: nothing else
// holds them (what a call returns of them is a copy).
func (x *tx) apply(spans []span, rec []byte, at int64) {
	for i, id := range x.order {
		if t, ok := x.docs[id]; ok {
			x.d.put(t, spans[i])
			from := spans[i].off - at
			x.d.cache.addWritten(spans[i], t, rec[from:from+int64(spans[i].n)])
		} else {
			x.d.putLock(x.locks[id])
		}
	}
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

// rule changes the stored transfer t (a private copy) for item i and
// reports whether it must be written.
type rule func(i int, t *state.Transfer, now time.Time) (bool, error)

// each applies r to the stored version of every ID: the revision each
// item carries does not matter, because r checks on the stored document
// that the item is still the caller's (re-read and re-apply, as the
// contract asks of a conflict). An ID given twice sees the write made for
// its first item.
func (x *tx) each(call string, ids []string, r rule, now time.Time) ([]state.Result, error) {
	stored, err := x.load(ids, true)
	if err != nil {
		return nil, fmt.Errorf("memfile: %s: %w", call, err)
	}
	res := make([]state.Result, len(ids))
	for i, id := range ids {
		res[i] = state.Result{ID: id}
		cur, staged := x.docs[id]
		if !staged {
			cur = stored[i] // read for this item alone: r may change it
		}
		if cur == nil {
			res[i].Err = x.missing(call, id)
			continue
		}
		c := cur
		if staged {
			c = edit(cur)
		}
		rev := cur.Rev
		write, err := r(i, c, now)
		switch {
		case err != nil:
			res[i].Err = fmt.Errorf("memfile: %s: %w", call, err)
		case !write:
			res[i] = state.Wrote(id, rev, c)
		default:
			x.put(c)
			res[i] = state.Wrote(id, c.Rev, c)
		}
	}
	return res, nil
}

// missing is the error of a call on id, which no valid transfer has.
func (x *tx) missing(call, id string) error {
	if bad, ok := x.d.invalid[id]; ok {
		return fmt.Errorf("memfile: %s %s: the stored document is invalid (%s) and skipped: %w", call, id, bad.reason, state.ErrNotFound)
	}
	return fmt.Errorf("memfile: %s %s: %w", call, id, state.ErrNotFound)
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

// nextRev returns the revision after rev: "N-suffix" with N one more.
func nextRev(rev string, suffix uint64) string {
	n := 0
	if i := strings.IndexByte(rev, '-'); i > 0 {
		n, _ = strconv.Atoi(rev[:i])
	}
	return strconv.Itoa(n+1) + "-" + strconv.FormatUint(suffix, 16)
}
