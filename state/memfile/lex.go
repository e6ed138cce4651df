package memfile

import (
	"encoding/binary"
	"math/bits"
	"strconv"
	"time"

	"github.com/asyncstageout/aso/state"
)

// decoder reads the strict subset of JSON that decodeTransfer accepts.
type decoder struct {
	b  []byte
	i  int
	in *interner
	// arena collects the bytes of the strings that are not interned, to be
	// allocated as one string when the document has decoded; fix says
	// where each one goes.
	arena []byte
	fix   []fixup
}

// fixup places arena[lo:hi] in *dst, or in element idx of the history
// (reason), depends_on or checksums (value) list when dst is nil.
type fixup struct {
	dst    *string
	list   uint8
	idx    uint8
	lo, hi int32
}

// Lists of fixup.
const (
	inHistory = iota
	inDeps
	inChecksums
)

// interner maps strings to one shared copy. A nil *interner interns nothing.
type interner struct {
	m map[string]string
	// recent holds the last values seen, by a cheap hash: most values
	// repeat document after document, and a hit costs no map lookup.
	recent [64]string
}

func newInterner() *interner { return &interner{m: map[string]string{}} }

// maxInterned bounds an interner: past it, new values are not kept.
const maxInterned = 1 << 12

// get sets *s to b, interned.
func (in *interner) get(b []byte, s *string) bool {
	if in == nil {
		*s = string(b)
		return true
	}
	h := len(b)
	if h > 0 {
		h = h*31 + int(b[0])*7 + int(b[h-1])
	}
	r := &in.recent[h&(len(in.recent)-1)]
	if *r == string(b) {
		*s = *r
		return true
	}
	if v, hit := in.m[string(b)]; hit {
		*s, *r = v, v
		return true
	}
	*s = string(b)
	if len(in.m) < maxInterned {
		in.m[*s] = *s
		*r = *s
	}
	return true
}

// istr reads a string like str, interning it.
func (d *decoder) istr(s *string) bool {
	b, ok := d.raw()
	return ok && d.in.get(b, s)
}

// state reads a state: one of state.States needs no allocation.
func (d *decoder) state(s *state.State) bool {
	b, ok := d.raw()
	if !ok {
		return false
	}
	switch string(b) {
	case "new":
		*s = state.StateNew
	case "acquired":
		*s = state.StateAcquired
	case "submitted":
		*s = state.StateSubmitted
	case "done":
		*s = state.StateDone
	case "failed":
		*s = state.StateFailed
	case "killed":
		*s = state.StateKilled
	default:
		*s = state.State(b)
	}
	return true
}

// lit skips s if it comes next.
func (d *decoder) lit(s string) bool {
	if len(d.b)-d.i >= len(s) && string(d.b[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return false
}

func (d *decoder) next(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// object reads {"key":value,...}, calling field for each key; field
// refuses a key seen twice (encoding/json would merge or overwrite).
func (d *decoder) object(field func(key []byte) bool) bool {
	if !d.next('{') {
		return false
	}
	if d.next('}') {
		return true
	}
	for {
		key, ok := d.key()
		if !ok || !d.next(':') || !field(key) {
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

// fields reads an object whose keys are among keys (quoted, with their
// colon, see quotedKeys), calling field with the index of each; keys in the
// order of the list are found at once. An unknown key is refused; field
// refuses a key seen twice.
func (d *decoder) fields(keys []quotedKey, field func(f int) bool) bool {
	if !d.next('{') {
		return false
	}
	if d.next('}') {
		return true
	}
	next := 0
	for {
		rest := d.b[d.i:]
		f := -1
		for k := next; k < len(keys); k++ {
			if keys[k].at(rest) {
				f = k
				break
			}
		}
		if f < 0 { // out of order
			for k := 0; k < next; k++ {
				if keys[k].at(rest) {
					f = k
					break
				}
			}
		}
		if f < 0 {
			return false
		}
		d.i += len(keys[f].s)
		next = f + 1
		if !field(f) {
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

// str reads a string of printable ASCII without escapes, to be placed in
// *s (or in an element of a list, see fixup) by finish.
func (d *decoder) str(s *string) bool { return d.strIn(s, 0, 0) }

func (d *decoder) strIn(s *string, list, idx int) bool {
	b, ok := d.raw()
	if ok {
		lo := len(d.arena)
		d.arena = append(d.arena, b...)
		d.fix = append(d.fix, fixup{dst: s, list: uint8(list), idx: uint8(idx), lo: int32(lo), hi: int32(len(d.arena))})
	}
	return ok
}

// key reads an object key: the caller refuses one it does not know, so
// there is no need to check its characters.
func (d *decoder) key() ([]byte, bool) {
	if !d.next('"') {
		return nil, false
	}
	for j := d.i; j < len(d.b); j++ {
		if d.b[j] == '"' {
			k := d.b[d.i:j]
			d.i = j + 1
			return k, true
		}
	}
	return nil, false
}

// raw reads a string of printable ASCII without escapes and returns its
// bytes (not a copy).
func (d *decoder) raw() ([]byte, bool) {
	if !d.next('"') {
		return nil, false
	}
	rest := d.b[d.i:]
	i := 0
	for ; i+8 <= len(rest); i += 8 {
		w := binary.LittleEndian.Uint64(rest[i:])
		q, bs := w^'"'*lsb, w^'\\'*lsb // zero where a byte is a quote, a backslash
		// the lowest byte flagged is exact: below 0x20, above 0x7f, a quote or a backslash
		if m := ((w-0x20*lsb)&^w | w | (q-lsb)&^q | (bs-lsb)&^bs) & msb; m != 0 {
			i += bits.TrailingZeros64(m) / 8
			return d.endRaw(rest, i)
		}
	}
	for ; i < len(rest); i++ {
		if c := rest[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return d.endRaw(rest, i)
		}
	}
	return nil, false
}

// endRaw ends the string of raw at rest[i], if that is its closing quote.
func (d *decoder) endRaw(rest []byte, i int) ([]byte, bool) {
	if rest[i] != '"' {
		return nil, false
	}
	d.i += i + 1
	return rest[:i], true
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// plain reports whether s holds only printable ASCII (0x20 to 0x7f) and no
// backslash, eight bytes at a time.
func plain(s []byte) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := binary.LittleEndian.Uint64(s[i:])
		bs := w ^ '\\'*lsb // zero where a byte is a backslash
		if (w-0x20*lsb|w)&msb != 0 || (bs-lsb)&^bs&msb != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '\\' {
			return false
		}
	}
	return true
}

// int64 reads an integer without sign tricks, leading zeros or exponent,
// short enough not to overflow.
func (d *decoder) int64(v *int64) bool {
	neg := d.next('-')
	start := d.i
	var x int64
	for ; d.i < len(d.b) && d.b[d.i]-'0' <= 9; d.i++ {
		x = x*10 + int64(d.b[d.i]-'0')
	}
	n := d.i - start
	if n == 0 || n > 18 || n > 1 && d.b[start] == '0' {
		return false
	}
	if neg {
		x = -x
	}
	*v = x
	return true
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
	digits := true
	two := func(i int) int { // the two digits at s[i:i+2]
		a, b := s[i]-'0', s[i+1]-'0'
		digits = digits && a <= 9 && b <= 9
		return int(a)*10 + int(b)
	}
	year, month, day, hour, minute, sec := two(1)*100+two(3), two(6), two(9), two(12), two(15), two(18)
	micro := two(21)*10000 + two(23)*100 + two(25)
	if !digits || month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || sec > 59 {
		return false
	}
	if day > daysIn(month, year) { // 31 April: time.Parse refuses it
		return false
	}
	secs := daysSinceEpoch(year, month, day)*86400 + int64(hour*3600+minute*60+sec)
	*v = state.Time{Time: time.Unix(secs, int64(micro)*1000).UTC()}
	d.i += n
	return true
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysSinceEpoch returns the days from 1970-01-01 to a date of the
// proleptic Gregorian calendar (H. Hinnant's days_from_civil), for years
// 0 to 9999: what time.Date computes, without its normalisation.
func daysSinceEpoch(year, month, day int) int64 {
	if month <= 2 {
		year--
	}
	era := (year+400)/400 - 1 // floor(year/400) for year >= -1
	yoe := year - era*400
	mp := (month + 9) % 12
	doy := (153*mp+2)/5 + day - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}
