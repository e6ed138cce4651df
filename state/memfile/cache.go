package memfile

import (
	"bytes"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/asyncstageout/aso/state"
)

// docCache keeps decoded the transfers this handle last wrote or read, so
// that a call reads back what the previous one wrote without decoding it:
// the agent's calls follow each transfer through its life a step at a time.
//
// An entry is keyed by where the document's encoding lies in the file, the
// offset of its span, and holds its length: a span names one version of
// one document, since the file is only appended to while a db lives (a
// file replaced by another process's compaction, or cut shorter, resets
// the db and so the cache), and this handle's compaction moves the
// entries with the documents (move). A version another process appended
// has a span of its own, so the index (meta.at) no longer leads to the
// cached one, which db.put drops. An entry is added only once its document
// is in the file (after the append and its fsync, or when read), so a
// failed append leaves none.
//
// It holds two generations, of at most half the bound each: a hit or an
// add goes into the current one, and when that is full the older one is
// dropped. The bound counts the encoded bytes of the entries, not their
// decoded size: what matters is the peak RSS it costs, measured with the
// bench (bench/README.md: about 20 MiB at 100,000 transfers for the
// default bound, which holds the agent's 10,000 transfers whole).
type docCache struct {
	cur, old map[int64]cached
	bytes    int // encoded bytes in cur
	max      int // encoded bytes per generation; 0 disables the cache
}

// cached is one decoded document of the cache and its encoded length.
type cached struct {
	n int
	t *state.Transfer
}

// DefaultCacheBytes bounds the documents a Store keeps decoded, counted by
// their encoded size (Options.CacheBytes).
const DefaultCacheBytes = 24 << 20

func newDocCache(maxBytes int) docCache {
	return docCache{max: maxBytes / 2}
}

// get copies into out the cached document at sp, reporting whether there is one.
func (c *docCache) get(sp span, out *state.Transfer) bool {
	e, ok := c.cur[sp.off]
	if !ok {
		if e, ok = c.old[sp.off]; !ok || e.n != sp.n {
			return false
		}
		delete(c.old, sp.off)
		c.insert(sp.off, e)
	}
	if e.n != sp.n {
		return false
	}
	*out = cloneTransfer(e.t)
	return true
}

// take moves the cached document at sp into out, reporting whether there
// is one: for a caller that will write it, whose version replaces it.
func (c *docCache) take(sp span, out *state.Transfer) bool {
	e, ok := c.cur[sp.off]
	if !ok {
		e, ok = c.old[sp.off]
	}
	if !ok || e.n != sp.n {
		return false
	}
	c.drop(sp)
	*out = *e.t // the entry's, no longer shared
	return true
}

// addRead caches a copy of t, decoded from the file at sp.
func (c *docCache) addRead(sp span, t *state.Transfer) {
	if c.max <= 0 || sp.n > c.max {
		return
	}
	cp := cloneTransfer(t)
	c.insert(sp.off, cached{n: sp.n, t: &cp})
}

// addIfRoom caches a copy of t, decoded from the file at sp while reading
// what this handle has not written (the file at open, others' records),
// if the current generation has room for it: a file read at open fills
// half the bound with the documents it holds first (all of a queue of
// 10,000, which the agent then claims without decoding them again), and
// others' records do not push out what this handle works on.
func (c *docCache) addIfRoom(sp span, t *state.Transfer) {
	if c.max <= 0 || c.bytes+sp.n > c.max {
		return
	}
	cp := cloneTransfer(t)
	c.insert(sp.off, cached{n: sp.n, t: &cp})
}

// addWritten caches t, which the caller gives up, once its encoding enc
// lies in the file at sp, if decoding enc gives t back exactly (written).
func (c *docCache) addWritten(sp span, t *state.Transfer, enc []byte) {
	if c.max <= 0 || sp.n > c.max || !written(t, enc) {
		return
	}
	c.insert(sp.off, cached{n: sp.n, t: t})
}

func (c *docCache) insert(off int64, e cached) {
	if c.bytes+e.n > c.max {
		c.old, c.cur, c.bytes = c.cur, nil, 0
	}
	if c.cur == nil {
		c.cur = map[int64]cached{}
	}
	if prev, ok := c.cur[off]; ok {
		c.bytes -= prev.n
	}
	c.cur[off] = e
	c.bytes += e.n
}

// move rekeys the entries after a compaction moved the documents: moved
// maps an old offset to the new one. Entries of documents not moved are
// dropped.
func (c *docCache) move(moved map[int64]int64) {
	cur, old := c.cur, c.old
	c.cur, c.old, c.bytes = nil, nil, 0
	for _, gen := range []map[int64]cached{old, cur} {
		for off, e := range gen {
			if to, ok := moved[off]; ok {
				c.insert(to, e)
			}
		}
	}
}

// drop forgets the document at sp, replaced by a newer version: the
// cache keeps only current versions.
func (c *docCache) drop(sp span) {
	if e, ok := c.cur[sp.off]; ok {
		delete(c.cur, sp.off)
		c.bytes -= e.n
	}
	delete(c.old, sp.off)
}

// checkHits makes every read that the cache answers also decode the
// document from the file, and fail if the two differ. The package's tests
// set it; it is off otherwise.
var checkHits = false

// checkHit returns an error if decoding b does not give exactly t.
func checkHit(b []byte, t *state.Transfer) error {
	var want state.Transfer
	if err := decodeJSON(b, &want); err != nil {
		return fmt.Errorf("cached transfer %s: the file's version no longer decodes: %v", t.ID, err)
	}
	if !reflect.DeepEqual(&want, t) {
		return fmt.Errorf("cached transfer %s differs from the file's version:\n%+v\n%+v", t.ID, t, &want)
	}
	return nil
}

// cloneTransfer returns a copy of t that shares nothing mutable with it:
// what the cache keeps or hands out cannot be changed through what a
// caller holds.
func cloneTransfer(t *state.Transfer) state.Transfer {
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

// written reports whether decoding enc, the encoding of t (encodeBatch),
// gives t back exactly (decodeJSON): every string valid UTF-8 (the encoder
// writes an invalid byte as \ufffd, so a string that holds one, or that
// text, is not taken), every time as state.Time decodes one, no empty
// non-nil collection (omitted by the encoder, so read back as nil) and no
// Extra (not encoded). FuzzCacheWritten holds it to the codec.
func written(t *state.Transfer, enc []byte) bool {
	if t.Extra != nil || (t.Checksums != nil && len(t.Checksums) == 0) ||
		(t.DependsOn != nil && len(t.DependsOn) == 0) || (t.History != nil && len(t.History) == 0) ||
		bytes.Contains(enc, []byte(`\ufffd`)) {
		return false
	}
	ok := decodedTime(t.LeaseExpires) && decodedTime(t.RetryAfter) && decodedTime(t.Created) && decodedTime(t.LastUpdate)
	for i := range t.History {
		ok = ok && decodedTime(t.History[i].At)
	}
	if t.Progress != nil {
		ok = ok && decodedTime(t.Progress.Updated)
	}
	return ok
}

// decodedTime reports whether t is a time as state.Time decodes one: the
// zero time.Time, or a time in UTC, of whole microseconds, without a
// monotonic clock reading, in the years 0000 to 9999.
func decodedTime(t state.Time) bool {
	if t.Time == (time.Time{}) {
		return true
	}
	return !t.IsZero() && t.Location() == time.UTC && t.Nanosecond()%1000 == 0 && t.Time == t.Round(0) &&
		!t.Before(firstDecoded) && t.Before(afterDecoded)
}

var firstDecoded, afterDecoded = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
