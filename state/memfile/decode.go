package memfile

import (
	"bytes"
	"encoding/binary"
	"sync"

	"github.com/asyncstageout/aso/state"
)

// decodeTransfer decodes the canonical encoding of a transfer (what
// appendTransfer writes) several times faster than encoding/json: every
// call that needs a whole transfer decodes it from the file. It accepts
// only a strict subset: known keys, each once, no whitespace, no null, no
// escapes, ASCII strings, at most maxDecoded history entries; on anything
// else it returns false and the caller uses encoding/json, so the result is
// always what encoding/json would give (TestDecodeTransfer).
//
// Values that repeat across documents (users, sites, states, owners, jobs)
// are interned through in, when it is not nil, so that they are not
// allocated again for every document.
func decodeTransfer(b []byte, t *state.Transfer, in *interner) bool {
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	td := transferDecoder{decoder: decoder{b: b, in: in, arena: sc.arena[:0], fix: sc.fix[:0]}, t: t, nc: -1, nd: -1}
	defer func() { sc.arena, sc.fix = td.arena[:0], td.fix[:0] }()
	*t = state.Transfer{}
	if !td.fields(transferKeys, td.field) || td.i != len(td.b) {
		return false
	}
	td.place()
	return true
}

// transferDecoder decodes one transfer into t: the checksums and
// depends_on lists (nc and nd entries, -1 while absent) and the strings of
// the arena are placed once the whole document has decoded.
type transferDecoder struct {
	decoder
	t      *state.Transfer
	cks    [maxChecksums]struct{ name, value string }
	nc, nd int
	seen   uint64 // the keys seen, to refuse a repeated one
}

// field decodes the value of key f.
func (td *transferDecoder) field(f int) bool {
	if !firstTime(&td.seen, f) {
		return false
	}
	if f < fState {
		return td.requestField(f)
	}
	return td.queueField(f)
}

// requestField decodes a field of the request, _id to depends_on.
func (td *transferDecoder) requestField(f int) bool {
	d, t := &td.decoder, td.t
	switch f {
	case fID:
		return d.str(&t.ID)
	case fRev:
		return d.str(&t.Rev)
	case fType:
		return d.istr(&t.Type)
	case fUser:
		return d.istr(&t.User)
	case fGroup:
		return d.istr(&t.Group)
	case fRole:
		return d.istr(&t.Role)
	case fSource:
		return d.istr(&t.Source)
	case fDestination:
		return d.istr(&t.Destination)
	case fSourceLFN:
		return d.str(&t.SourceLFN)
	case fDestinationLFN:
		return d.str(&t.DestinationLFN)
	case fSize:
		return d.int64(&t.Size)
	case fChecksums:
		td.nc = 0
		return d.object(td.checksum)
	case fPriority:
		return d.int(&t.Priority)
	case fDependsOn:
		td.nd = 0
		return d.array(td.dependency)
	}
	return false
}

// checksum decodes the checksum of algorithm k.
func (td *transferDecoder) checksum(k []byte) bool {
	if td.nc == len(td.cks) || !plain(k) {
		return false
	}
	for _, c := range td.cks[:td.nc] {
		if c.name == string(k) {
			return false
		}
	}
	td.in.get(k, &td.cks[td.nc].name)
	td.nc++
	return td.strIn(nil, inChecksums, td.nc-1)
}

// dependency decodes an element of depends_on.
func (td *transferDecoder) dependency() bool {
	if td.nd == maxDecoded {
		return false
	}
	td.nd++
	return td.strIn(nil, inDeps, td.nd-1)
}

// queueField decodes a field of the transfer's life in the queue, state
// to activity.
func (td *transferDecoder) queueField(f int) bool {
	d, t := &td.decoder, td.t
	switch f {
	case fState:
		return d.state(&t.State)
	case fOwner:
		return d.istr(&t.Owner)
	case fLeaseExpires:
		return d.time(&t.LeaseExpires)
	case fSubmitSID:
		return d.istr(&t.SubmitSID)
	case fFTSJob:
		return d.istr(&t.FTSJob)
	case fFTSFileID:
		return d.int64(&t.FTSFileID)
	case fSourcePFN:
		return d.str(&t.SourcePFN)
	case fDestPFN:
		return d.str(&t.DestPFN)
	case fAttempts:
		return d.int(&t.Attempts)
	case fRetryAfter:
		return d.time(&t.RetryAfter)
	case fReason:
		return d.str(&t.Reason)
	case fKillRequested:
		return d.bool(&t.KillRequested)
	case fProgress:
		t.Progress = &state.Progress{}
		return d.progress(t.Progress)
	case fCreated:
		return d.time(&t.Created)
	case fLastUpdate:
		return d.time(&t.LastUpdate)
	case fFTSEndpoint:
		return d.istr(&t.FTSEndpoint)
	case fErrorClass:
		return d.istr(&t.ErrorClass)
	case fActivity:
		return d.int(&t.Activity)
	case fHistory:
		// each entry opens a brace: allocate them all at once
		t.History = make([]state.Transition, 0, bytes.Count(d.b[d.i:], openBrace))
		return d.array(td.transition)
	}
	return false
}

// transition decodes an entry of the history.
func (td *transferDecoder) transition() bool {
	t := td.t
	if len(t.History) == maxDecoded {
		return false
	}
	t.History = append(t.History, state.Transition{})
	return td.entry(&t.History[len(t.History)-1], len(t.History)-1)
}

// place puts the strings of the arena and the lists in the transfer.
func (td *transferDecoder) place() {
	t := td.t
	if td.nd >= 0 {
		t.DependsOn = make([]string, td.nd)
	}
	all := string(td.arena)
	for _, f := range td.fix {
		v := all[f.lo:f.hi]
		switch {
		case f.dst != nil:
			*f.dst = v
		case f.list == inHistory:
			t.History[f.idx].Reason = v
		case f.list == inDeps:
			t.DependsOn[f.idx] = v
		default:
			td.cks[f.idx].value = v
		}
	}
	if td.nc >= 0 {
		t.Checksums = make(map[string]string, td.nc)
		for _, c := range td.cks[:td.nc] {
			t.Checksums[c.name] = c.value
		}
	}
}

// scratch is the arena and fixups of a decoder, reused.
type scratch struct {
	arena []byte
	fix   []fixup
}

var scratchPool = sync.Pool{New: func() any { return &scratch{arena: make([]byte, 0, 1024), fix: make([]fixup, 0, 64)} }}

// maxChecksums bounds the checksums decodeTransfer takes.
const maxChecksums = 4

var openBrace = []byte{'{'}

// maxDecoded bounds the history and depends_on lists decodeTransfer takes
// (state.MaxHistory bounds the history the store writes).
const maxDecoded = 2 * state.MaxHistory

// The keys of a transfer, numbered for the set of keys seen.
const (
	fID = iota
	fRev
	fType
	fUser
	fGroup
	fRole
	fSource
	fDestination
	fSourceLFN
	fDestinationLFN
	fSize
	fChecksums
	fPriority
	fDependsOn
	fState
	fOwner
	fLeaseExpires
	fSubmitSID
	fFTSJob
	fFTSFileID
	fSourcePFN
	fDestPFN
	fAttempts
	fRetryAfter
	fReason
	fKillRequested
	fProgress
	fCreated
	fLastUpdate
	fHistory
	fFTSEndpoint
	fErrorClass
	fActivity
)

// transferKeys are the keys of a transfer, quoted and followed by their
// colon, in the order of the fields (the order appendTransfer writes).
var transferKeys = quotedKeys("_id", "_rev", "type", "user", "group", "role", "source", "destination", "source_lfn",
	"destination_lfn", "size", "checksums", "priority", "depends_on", "state", "owner", "lease_expires", "submit_sid",
	"fts_job", "fts_file_id", "source_pfn", "dest_pfn", "attempts", "retry_after", "reason", "kill_requested",
	"progress", "created", "last_update", "history", "fts_endpoint", "error_class", "activity")

func quotedKeys(keys ...string) []quotedKey {
	q := make([]quotedKey, len(keys))
	for i, k := range keys {
		q[i].s = `"` + k + `":`
		var b [16]byte
		copy(b[:], q[i].s)
		q[i].w0, q[i].w1 = binary.LittleEndian.Uint64(b[:]), binary.LittleEndian.Uint64(b[8:])
		for j := range min(len(q[i].s), 16) {
			if j < 8 {
				q[i].m0 |= 0xff << (8 * j)
			} else {
				q[i].m1 |= 0xff << (8 * (j - 8))
			}
		}
	}
	return q
}

// quotedKey is a key with its quotes and colon, and its first 16 bytes as
// two words under their masks, to be matched two words at a time.
type quotedKey struct {
	s              string
	w0, m0, w1, m1 uint64
}

// at reports whether b starts with the key.
func (k *quotedKey) at(b []byte) bool {
	if len(b) < 16 || len(k.s) > 16 {
		return len(b) >= len(k.s) && string(b[:len(k.s)]) == k.s
	}
	return binary.LittleEndian.Uint64(b)&k.m0 == k.w0 && binary.LittleEndian.Uint64(b[8:])&k.m1 == k.w1
}

var (
	progressKeys   = quotedKeys("fts_state", "bytes", "throughput", "retries", "reason", "file_id", "updated")
	transitionKeys = quotedKeys("at", "from", "to", "by", "reason")
)

// firstTime reports whether bit f is not yet in *seen, and adds it.
func firstTime(seen *uint64, f int) bool {
	if *seen&(1<<f) != 0 {
		return false
	}
	*seen |= 1 << f
	return true
}

func (d *decoder) progress(p *state.Progress) bool {
	var seen uint64
	return d.fields(progressKeys, func(f int) bool {
		if !firstTime(&seen, f) {
			return false
		}
		switch f {
		case 0:
			return d.istr(&p.FTSState)
		case 1:
			return d.int64(&p.Bytes)
		case 2:
			return d.float(&p.Throughput)
		case 3:
			return d.int(&p.Retries)
		case 4:
			return d.str(&p.Reason)
		case 5:
			return d.int64(&p.FileID)
		default:
			return d.time(&p.Updated)
		}
	})
}

// entry reads history entry idx into h: straight through when its keys
// come in the order appendTransfer writes them, else by transition.
func (d *decoder) entry(h *state.Transition, idx int) bool {
	i, arena, fix := d.i, len(d.arena), len(d.fix)
	if d.lit(`{"at":`) && d.time(&h.At) && d.lit(`,"from":`) && d.state(&h.From) && d.lit(`,"to":`) && d.state(&h.To) &&
		d.lit(`,"by":`) && d.istr(&h.By) && (!d.lit(`,"reason":`) || d.strIn(nil, inHistory, idx)) && d.next('}') {
		return true
	}
	d.i, d.arena, d.fix = i, d.arena[:arena], d.fix[:fix]
	*h = state.Transition{}
	return d.transition(h, idx)
}

// transition reads history entry idx into h.
func (d *decoder) transition(h *state.Transition, idx int) bool {
	var seen uint64
	return d.fields(transitionKeys, func(f int) bool {
		if !firstTime(&seen, f) {
			return false
		}
		switch f {
		case 0:
			return d.time(&h.At)
		case 1:
			return d.state(&h.From)
		case 2:
			return d.state(&h.To)
		case 3:
			return d.istr(&h.By)
		default:
			return d.strIn(nil, inHistory, idx)
		}
	})
}
