package memfile

import (
	"strconv"
	"time"

	"github.com/asyncstageout/aso/state"
)

// decodeTransfer decodes the canonical encoding of a transfer (what
// appendTransfer writes) several times faster than encoding/json, which
// dominates the time to open a large file. It accepts only a strict subset:
// known keys, each once, no whitespace, no null, no escapes, ASCII strings;
// on anything else it returns false and the caller uses encoding/json, so
// the result is always what encoding/json would give (TestDecodeTransfer).
//
// Values that repeat across documents (users, sites, states, owners, jobs)
// are interned through in, when it is not nil, so that a large file does
// not hold one copy of each per document.
func decodeTransfer(b []byte, t *state.Transfer, in interner) bool {
	d := decoder{b: b, in: in}
	*t = state.Transfer{}
	ok := d.object(func(key []byte) bool {
		switch string(key) {
		case "_id":
			return d.str(&t.ID)
		case "_rev":
			return d.str(&t.Rev)
		case "type":
			return d.istr(&t.Type)
		case "user":
			return d.istr(&t.User)
		case "group":
			return d.istr(&t.Group)
		case "role":
			return d.istr(&t.Role)
		case "source":
			return d.istr(&t.Source)
		case "destination":
			return d.istr(&t.Destination)
		case "source_lfn":
			return d.str(&t.SourceLFN)
		case "destination_lfn":
			return d.str(&t.DestinationLFN)
		case "size":
			return d.int64(&t.Size)
		case "checksums":
			t.Checksums = map[string]string{}
			return d.object(func(k []byte) bool {
				var v string
				ok := d.str(&v)
				t.Checksums[string(k)] = v
				return ok
			})
		case "priority":
			return d.int(&t.Priority)
		case "depends_on":
			t.DependsOn = []string{}
			return d.array(func() bool {
				var v string
				ok := d.str(&v)
				t.DependsOn = append(t.DependsOn, v)
				return ok
			})
		case "state":
			return d.istr((*string)(&t.State))
		case "owner":
			return d.istr(&t.Owner)
		case "lease_expires":
			return d.time(&t.LeaseExpires)
		case "submit_sid":
			return d.istr(&t.SubmitSID)
		case "fts_job":
			return d.istr(&t.FTSJob)
		case "fts_file_id":
			return d.int64(&t.FTSFileID)
		case "source_pfn":
			return d.str(&t.SourcePFN)
		case "dest_pfn":
			return d.str(&t.DestPFN)
		case "attempts":
			return d.int(&t.Attempts)
		case "retry_after":
			return d.time(&t.RetryAfter)
		case "reason":
			return d.str(&t.Reason)
		case "kill_requested":
			return d.bool(&t.KillRequested)
		case "progress":
			t.Progress = &state.Progress{}
			return d.progress(t.Progress)
		case "created":
			return d.time(&t.Created)
		case "last_update":
			return d.time(&t.LastUpdate)
		case "history":
			t.History = []state.Transition{}
			return d.array(func() bool {
				var h state.Transition
				ok := d.transition(&h)
				t.History = append(t.History, h)
				return ok
			})
		}
		return false
	})
	return ok && d.i == len(d.b)
}

type decoder struct {
	b  []byte
	i  int
	in interner
}

// interner maps strings to one shared copy.
type interner map[string]string

// maxInterned bounds an interner: past it, new values are not kept.
const maxInterned = 1 << 16

// istr reads a string like str, interning it.
func (d *decoder) istr(s *string) bool {
	b, ok := d.raw()
	if !ok {
		return false
	}
	if v, hit := d.in[string(b)]; hit {
		*s = v
		return true
	}
	*s = string(b)
	if d.in != nil && len(d.in) < maxInterned {
		d.in[*s] = *s
	}
	return true
}

func (d *decoder) next(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// object reads {"key":value,...}, calling field for each key; a key seen
// twice is refused (encoding/json would merge or overwrite).
func (d *decoder) object(field func(key []byte) bool) bool {
	if !d.next('{') {
		return false
	}
	if d.next('}') {
		return true
	}
	var buf [32][]byte
	seen := buf[:0]
	for {
		key, ok := d.raw()
		if !ok || !d.next(':') {
			return false
		}
		for _, k := range seen {
			if string(k) == string(key) {
				return false
			}
		}
		seen = append(seen, key)
		if !field(key) {
			return false
		}
		if d.next('}') {
			return true
		}
		if !d.next(',') {
			return false
		}
	}
}

func (d *decoder) array(elem func() bool) bool {
	if !d.next('[') {
		return false
	}
	if d.next(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if d.next(']') {
			return true
		}
		if !d.next(',') {
			return false
		}
	}
}

// str reads a string of printable ASCII without escapes.
func (d *decoder) str(s *string) bool {
	b, ok := d.raw()
	if ok {
		*s = string(b)
	}
	return ok
}

// raw reads a string of printable ASCII without escapes and returns its
// bytes (not a copy).
func (d *decoder) raw() ([]byte, bool) {
	if !d.next('"') {
		return nil, false
	}
	start := d.i
	for ; d.i < len(d.b); d.i++ {
		switch c := d.b[d.i]; {
		case c == '"':
			d.i++
			return d.b[start : d.i-1], true
		case c < 0x20 || c >= 0x80 || c == '\\':
			return nil, false
		}
	}
	return nil, false
}

// int64 reads an integer without sign tricks, leading zeros or exponent,
// short enough not to overflow.
func (d *decoder) int64(v *int64) bool {
	start := d.i
	d.next('-')
	digits := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	n := d.i - digits
	if n == 0 || n > 18 || n > 1 && d.b[digits] == '0' {
		return false
	}
	x, err := strconv.ParseInt(string(d.b[start:d.i]), 10, 64)
	*v = x
	return err == nil
}

func (d *decoder) int(v *int) bool {
	var x int64
	ok := d.int64(&x)
	*v = int(x)
	return ok
}

func (d *decoder) bool(v *bool) bool {
	switch {
	case len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "true":
		d.i += 4
		*v = true
		return true
	case len(d.b)-d.i >= 5 && string(d.b[d.i:d.i+5]) == "false":
		d.i += 5
		*v = false
		return true
	}
	return false
}

// float reads a JSON number as encoding/json does:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *decoder) float(v *float64) bool {
	start := d.i
	digits := func() int {
		n := 0
		for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
			d.i++
			n++
		}
		return n
	}
	d.next('-')
	if d.next('0') {
		if d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
			return false
		}
	} else if digits() == 0 {
		return false
	}
	if d.next('.') && digits() == 0 {
		return false
	}
	if d.next('e') || d.next('E') {
		if !d.next('+') {
			d.next('-')
		}
		if digits() == 0 {
			return false
		}
	}
	x, err := strconv.ParseFloat(string(d.b[start:d.i]), 64)
	*v = x
	return err == nil
}

// time reads null or "YYYY-MM-DDTHH:MM:SS.ffffffZ".
func (d *decoder) time(v *state.Time) bool {
	if len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "null" {
		d.i += 4
		*v = state.Time{}
		return true
	}
	const n = len(state.TimeLayout) + 2
	if len(d.b)-d.i < n {
		return false
	}
	s := d.b[d.i : d.i+n]
	if s[0] != '"' || s[5] != '-' || s[8] != '-' || s[11] != 'T' || s[14] != ':' || s[17] != ':' || s[20] != '.' || s[27] != 'Z' || s[28] != '"' {
		return false
	}
	num := func(from, to int) int {
		x := 0
		for _, c := range s[from:to] {
			if c < '0' || c > '9' {
				return -1
			}
			x = x*10 + int(c-'0')
		}
		return x
	}
	year, month, day, hour, minute, sec, micro := num(1, 5), num(6, 8), num(9, 11), num(12, 14), num(15, 17), num(18, 20), num(21, 27)
	if year < 0 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || sec < 0 || sec > 59 || micro < 0 {
		return false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, micro*1000, time.UTC)
	if t.Day() != day { // 31 April: time.Parse refuses it, time.Date normalises it
		return false
	}
	*v = state.Time{Time: t}
	d.i += n
	return true
}

func (d *decoder) progress(p *state.Progress) bool {
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "fts_state":
			return d.istr(&p.FTSState)
		case "bytes":
			return d.int64(&p.Bytes)
		case "throughput":
			return d.float(&p.Throughput)
		case "retries":
			return d.int(&p.Retries)
		case "reason":
			return d.str(&p.Reason)
		case "file_id":
			return d.int64(&p.FileID)
		case "updated":
			return d.time(&p.Updated)
		}
		return false
	})
}

func (d *decoder) transition(h *state.Transition) bool {
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "at":
			return d.time(&h.At)
		case "from":
			return d.istr((*string)(&h.From))
		case "to":
			return d.istr((*string)(&h.To))
		case "by":
			return d.istr(&h.By)
		case "reason":
			return d.str(&h.Reason)
		}
		return false
	})
}
