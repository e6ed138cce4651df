package memfile

import (
	"encoding/hex"
	"math"
	"slices"
	"time"

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
