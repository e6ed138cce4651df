package memfile

import (
	"cmp"
	"fmt"
	"os"
	"slices"

	"github.com/asyncstageout/aso/state"
)

// Reads of documents from the file: spans at most readGap apart are read
// with one pread, of at most readMax bytes (unless one document is larger).
const (
	readGap = 4 << 10
	readMax = 1 << 20
)

// source reads documents back from the state file.
type source struct {
	f    *os.File
	path string
	buf  []byte // reused between reads, at most readMax unless a document is larger
}

// readSpans reads the bytes of every span, coalescing neighbours, and calls
// fn with each (in file order); the bytes are valid only during the call.
func (r *source) readSpans(spans []span, fn func(i int, b []byte) error) error {
	order := make([]int, len(spans))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(spans[a].off, spans[b].off) })
	for k := 0; k < len(order); {
		first := spans[order[k]]
		end := first.off + int64(first.n)
		j := k + 1
		for ; j < len(order); j++ {
			sp := spans[order[j]]
			if sp.off > end+readGap || sp.off+int64(sp.n)-first.off > readMax {
				break
			}
			end = max(end, sp.off+int64(sp.n))
		}
		n := int(end - first.off)
		if cap(r.buf) < n {
			r.buf = make([]byte, max(n, min(readMax, 2*cap(r.buf))))
		}
		b := r.buf[:n]
		if _, err := r.f.ReadAt(b, first.off); err != nil {
			return fmt.Errorf("read %s at offset %d: %w", r.path, first.off, err)
		}
		for ; k < j; k++ {
			sp := spans[order[k]]
			at := sp.off - first.off
			if err := fn(order[k], b[at:at+int64(sp.n)]); err != nil {
				return err
			}
		}
	}
	if cap(r.buf) > readMax {
		r.buf = nil // a huge document: do not keep its buffer
	}
	return nil
}

// tx is one operation: it reads the db through its own staged writes, which
// are applied only after they were appended to the file.
type tx struct {
	d      *db
	src    *source
	docs   map[string]*state.Transfer
	locks  map[string]*state.LockDoc
	order  []string // IDs in write order
	revGen func() uint64
}

func newTx(d *db, src *source, revGen func() uint64) *tx {
	return &tx{d: d, src: src, docs: map[string]*state.Transfer{}, locks: map[string]*state.LockDoc{}, revGen: revGen}
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

// read decodes the stored transfers of slots into out[i].
func (x *tx) read(slots []int32, out []state.Transfer) error {
	spans := make([]span, len(slots))
	for i, s := range slots {
		spans[i] = x.d.metas[s].at
	}
	return x.src.readSpans(spans, func(i int, b []byte) error {
		if err := decodeJSON(b, &out[i]); err != nil {
			return fmt.Errorf("%s at offset %d no longer decodes: %v", x.src.path, spans[i].off, err)
		}
		return nil
	})
}

// readAll returns the stored transfers of slots.
func (x *tx) readAll(slots []int32) ([]state.Transfer, error) {
	out := make([]state.Transfer, len(slots))
	return out, x.read(slots, out)
}

// load returns the stored transfer of every ID (read, so private to the
// caller), or nil; what this tx staged is not looked at (the caller does).
func (x *tx) load(ids []string) ([]*state.Transfer, error) {
	out := make([]*state.Transfer, len(ids))
	var at []int
	var slots []int32
	for i, id := range ids {
		if s, ok := x.d.lookup(id); ok {
			at = append(at, i)
			slots = append(slots, s)
		}
	}
	stored, err := x.readAll(slots)
	if err != nil {
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
