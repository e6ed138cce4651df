package memfile

import (
	"bytes"
	"encoding/hex"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/btree"

	"github.com/asyncstageout/aso/state"
)

// invalidDoc is a stored document that is not a valid transfer: kept as it
// is (so compaction does not lose it) and skipped by every call.
type invalidDoc struct {
	reason string
	at     span // where it lies in the file, to be copied as it is
}

// span is where the current encoding of a document lies in the file: the
// store reads a transfer back from there when a call needs it, and
// compaction copies the bytes instead of encoding every document again.
type span struct {
	off int64
	n   int
}

// key is a transfer ID (64 hex digits, the SHA-256 of the request) in
// binary. Every valid transfer has one.
type key [32]byte

// keyOf returns the key of id, false if id is not a transfer ID.
func keyOf[S string | []byte](id S) (key, bool) {
	var k key
	if len(id) != 2*len(k) {
		return k, false
	}
	for i := range k {
		hi, lo := unhex(id[2*i]), unhex(id[2*i+1])
		if hi > 15 || lo > 15 {
			return k, false
		}
		k[i] = hi<<4 | lo
	}
	return k, true
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return 255
}

func (k *key) String() string { return hex.EncodeToString(k[:]) }

// meta is all the store keeps in memory of a valid transfer: the fields its
// indexes and queries need, and the span of its encoding. It holds no
// pointer (strings are indexes into db.strs), so a slice of them costs the
// garbage collector nothing to scan. A call that needs a whole transfer
// reads it back from the file.
type meta struct {
	id       key
	at       span
	priority int64
	// times in nanoseconds since the epoch (see nanos)
	lastUpdate, retryAfter, leaseExpires, created int64
	user, src, dst, job                           uint32
	class                                         uint32 // error class (state.CountKey's)
	// reason is the interned reason class (state.CountKey's) of a
	// transfer with hasReason, 0 until Counts first needs it: computing it
	// for every transfer a file holds would slow every open down.
	reason    uint32
	hasReason bool
	state     uint8 // 1 + index in state.States; 0: a free slot
	// deps: a new transfer with dependencies to check before a claim
	// (DueUsers reads only those back from the file)
	deps bool
}

// nanos maps a time to an int64 with the same order: nanoseconds since the
// epoch, the zero time first, times beyond the range of int64 nanoseconds
// (years before 1678 or after 2261, which only a hand-edited file holds)
// clamped to its ends.
func nanos(t state.Time) int64 {
	switch {
	case t.IsZero():
		return math.MinInt64
	case t.Before(minNanos):
		return math.MinInt64 + 1
	case t.After(maxNanos):
		return math.MaxInt64
	}
	return t.UnixNano()
}

var minNanos, maxNanos = time.Unix(0, math.MinInt64+1), time.Unix(0, math.MaxInt64)

func fromNanos(n int64) state.Time {
	if n == math.MinInt64 {
		return state.Time{}
	}
	return state.Time{Time: time.Unix(0, n).UTC()}
}

func stateCode(s state.State) uint8 {
	return uint8(1 + slices.Index(state.States, s))
}

func (m *meta) State() state.State { return state.States[m.state-1] }

// strtab interns the strings of metas: users, sites and FTS jobs.
type strtab struct {
	ids  map[string]uint32
	strs []string
}

func (t *strtab) id(s string) uint32 {
	if i, ok := t.ids[s]; ok {
		return i
	}
	if t.ids == nil {
		t.ids = map[string]uint32{"": 0}
		t.strs = []string{""}
		if s == "" {
			return 0
		}
	}
	i := uint32(len(t.strs))
	t.ids[s] = i
	t.strs = append(t.strs, s)
	return i
}

// userIndex indexes the transfers of one user.
type userIndex struct {
	// queue holds the new and acquired transfers in claim order.
	queue *btree.BTreeG[int32]
	// jobs holds the submitted transfers by FTS job.
	jobs map[uint32]map[int32]struct{}
}

// db is the in-memory state: metas of the transfers, their indexes, the
// invalid documents and the run locks.
type db struct {
	metas   []meta
	free    []int32
	ids     map[key]int32
	invalid map[string]invalidDoc
	locks   map[string]*state.LockDoc
	users   map[uint32]*userIndex
	strs    strtab
}

func newDB() *db {
	return &db{ids: map[key]int32{}, invalid: map[string]invalidDoc{}, locks: map[string]*state.LockDoc{}, users: map[uint32]*userIndex{}}
}

// claimLess orders the queue as state.ClaimLess orders transfers.
func (d *db) claimLess(a, b int32) bool {
	x, y := &d.metas[a], &d.metas[b]
	if x.priority != y.priority {
		return x.priority > y.priority
	}
	if x.lastUpdate != y.lastUpdate {
		return x.lastUpdate < y.lastUpdate
	}
	return bytes.Compare(x.id[:], y.id[:]) < 0
}

func (d *db) user(u uint32) *userIndex {
	ui := d.users[u]
	if ui == nil {
		ui = &userIndex{queue: btree.NewG(32, d.claimLess), jobs: map[uint32]map[int32]struct{}{}}
		d.users[u] = ui
	}
	return ui
}

// userOf returns the index of user u, or nil if u has no transfer.
func (d *db) userOf(u string) *userIndex {
	id, ok := d.strs.ids[u]
	if !ok {
		return nil
	}
	return d.users[id]
}

func inQueue(s state.State) bool { return s == state.StateNew || s == state.StateAcquired }

// lookup returns the slot of the valid transfer with id.
func (d *db) lookup(id string) (int32, bool) {
	k, ok := keyOf(id)
	if !ok {
		return 0, false
	}
	i, ok := d.ids[k]
	return i, ok
}

func (d *db) index(i int32) {
	m := &d.metas[i]
	ui := d.user(m.user)
	switch st := m.State(); {
	case inQueue(st):
		ui.queue.ReplaceOrInsert(i)
	case st == state.StateSubmitted:
		set := ui.jobs[m.job]
		if set == nil {
			set = map[int32]struct{}{}
			ui.jobs[m.job] = set
		}
		set[i] = struct{}{}
	}
}

func (d *db) unindex(i int32) {
	m := &d.metas[i]
	ui := d.user(m.user)
	switch st := m.State(); {
	case inQueue(st):
		ui.queue.Delete(i)
	case st == state.StateSubmitted:
		delete(ui.jobs[m.job], i)
		if len(ui.jobs[m.job]) == 0 {
			delete(ui.jobs, m.job)
		}
	}
}

// put stores t, encoded in the file at sp, replacing any document with its
// ID. t must be valid (its ID a transfer ID); it is not kept.
func (d *db) put(t *state.Transfer, sp span) {
	k, ok := keyOf(t.ID)
	if !ok {
		panic("memfile: storing a transfer with ID " + strconv.Quote(t.ID))
	}
	m := meta{
		id: k, at: sp, priority: int64(t.Priority),
		lastUpdate: nanos(t.LastUpdate), retryAfter: nanos(t.RetryAfter), leaseExpires: nanos(t.LeaseExpires), created: nanos(t.Created),
		user: d.strs.id(t.User), src: d.strs.id(t.Source), dst: d.strs.id(t.Destination), state: stateCode(t.State),
		deps: len(t.DependsOn) > 0 && !t.KillRequested,
	}
	switch t.State {
	case state.StateSubmitted:
		m.job = d.strs.id(t.FTSJob)
	case state.StateFailed:
		m.class = d.strs.id(state.FailureClass(t.ErrorClass))
	default:
		m.class = d.strs.id(t.ErrorClass)
	}
	m.hasReason = t.State == state.StateFailed || state.Retrying(t)
	i, ok := d.ids[k]
	switch {
	case ok:
		d.unindex(i)
	case len(d.free) > 0:
		i, d.free = d.free[len(d.free)-1], d.free[:len(d.free)-1]
	default:
		i = int32(len(d.metas))
		d.metas = append(d.metas, meta{})
	}
	d.ids[k] = i
	d.metas[i] = m
	d.index(i)
	delete(d.invalid, t.ID)
}

// putInvalid replaces any document with id by an invalid one, found in the
// file at sp.
func (d *db) putInvalid(id, reason string, sp span) {
	if i, ok := d.lookup(id); ok {
		d.remove(i)
	}
	delete(d.locks, id)
	d.invalid[id] = invalidDoc{reason: reason, at: sp}
}

// remove drops the valid transfer in slot i.
func (d *db) remove(i int32) {
	d.unindex(i)
	delete(d.ids, d.metas[i].id)
	d.metas[i] = meta{}
	d.free = append(d.free, i)
}

func (d *db) putLock(l *state.LockDoc) {
	delete(d.invalid, l.ID)
	d.locks[l.ID] = l
}

// stub returns a transfer with the fields of m that the rules of package
// state need to select and order transfers without reading them: ID (when
// withID), user, sites, state, priority, FTS job and the times.
func (d *db) stub(m *meta, withID bool) state.Transfer {
	t := state.Transfer{
		User: d.strs.strs[m.user], Source: d.strs.strs[m.src], Destination: d.strs.strs[m.dst],
		State: m.State(), Priority: int(m.priority), FTSJob: d.strs.strs[m.job],
		LastUpdate: fromNanos(m.lastUpdate), RetryAfter: fromNanos(m.retryAfter), LeaseExpires: fromNanos(m.leaseExpires), Created: fromNanos(m.created),
	}
	if withID {
		t.ID = m.id.String()
	}
	return t
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
