package memfile

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/asyncstageout/aso/state"
)

// fastCodec is true while state.Transfer has the layout appendTransfer and
// decodeTransfer were written for. A field added or retagged there turns
// them off (encoding/json takes over, slower but correct) until they are
// updated; TestFastCodec fails meanwhile. Extra (json "-") is not part of
// the JSON form: memfile stores what aso wrote, nothing else.
var fastCodec = state.TimeLayout == "2006-01-02T15:04:05.000000Z" &&
	sameLayout(reflect.TypeFor[state.Transfer](), "_id", "_rev,omitempty", "type", "user", "group,omitempty", "role,omitempty",
		"source", "destination", "source_lfn", "destination_lfn", "size", "checksums,omitempty", "priority", "depends_on,omitempty",
		"state", "owner,omitempty", "lease_expires,omitzero", "submit_sid,omitempty", "fts_job,omitempty", "fts_file_id,omitempty",
		"source_pfn,omitempty", "dest_pfn,omitempty", "attempts", "retry_after,omitzero", "reason,omitempty", "kill_requested,omitempty",
		"progress,omitempty", "created", "last_update", "history,omitempty",
		"fts_endpoint,omitempty", "error_class,omitempty", "activity,omitempty", "-") &&
	sameLayout(reflect.TypeFor[state.Progress](), "fts_state", "bytes,omitempty", "throughput,omitempty", "retries,omitempty",
		"reason,omitempty", "file_id,omitempty", "updated") &&
	sameLayout(reflect.TypeFor[state.Transition](), "at", "from", "to", "by", "reason,omitempty")

// sameLayout reports whether the fields of struct type t have exactly the
// given JSON tags, in order.
func sameLayout(t reflect.Type, tags ...string) bool {
	if t.NumField() != len(tags) {
		return false
	}
	for i, tag := range tags {
		if t.Field(i).Tag.Get("json") != tag {
			return false
		}
	}
	return true
}

// appendTransfer appends the JSON encoding of t, byte for byte what
// encoding/json produces (TestAppendTransfer proves it for every field), at
// a fraction of its cost: encoding dominates the cost of a commit. It
// writes the fields in the order of state.Transfer, a section at a time.
func appendTransfer(b []byte, t *state.Transfer) ([]byte, error) {
	b = appendRequestFields(b, t)
	b = appendClaimFields(b, t)
	if p := t.Progress; p != nil {
		var err error
		if b, err = appendProgress(append(b, `,"progress":`...), p); err != nil {
			return nil, err
		}
	}
	b = appendTime(append(b, `,"created":`...), t.Created)
	b = appendTime(append(b, `,"last_update":`...), t.LastUpdate)
	if len(t.History) > 0 {
		b = appendHistory(append(b, `,"history":[`...), t.History)
	}
	for _, f := range [...]struct{ key, v string }{{`,"fts_endpoint":`, t.FTSEndpoint}, {`,"error_class":`, t.ErrorClass}} {
		if f.v != "" {
			b = appendKey(b, f.key, f.v)
		}
	}
	if t.Activity != 0 {
		b = strconv.AppendInt(append(b, `,"activity":`...), int64(t.Activity), 10)
	}
	return append(b, '}'), nil
}

// appendRequestFields opens the object of t and appends the fields of
// its request, _id to depends_on.
func appendRequestFields(b []byte, t *state.Transfer) []byte {
	b = appendKey(b, `{"_id":`, t.ID)
	if t.Rev != "" {
		b = appendKey(b, `,"_rev":`, t.Rev)
	}
	b = appendKey(b, `,"type":`, t.Type)
	b = appendKey(b, `,"user":`, t.User)
	if t.Group != "" {
		b = appendKey(b, `,"group":`, t.Group)
	}
	if t.Role != "" {
		b = appendKey(b, `,"role":`, t.Role)
	}
	b = appendKey(b, `,"source":`, t.Source)
	b = appendKey(b, `,"destination":`, t.Destination)
	b = appendKey(b, `,"source_lfn":`, t.SourceLFN)
	b = appendKey(b, `,"destination_lfn":`, t.DestinationLFN)
	b = strconv.AppendInt(append(b, `,"size":`...), t.Size, 10)
	if len(t.Checksums) > 0 {
		b = appendChecksums(append(b, `,"checksums":{`...), t.Checksums)
	}
	b = strconv.AppendInt(append(b, `,"priority":`...), int64(t.Priority), 10)
	if len(t.DependsOn) > 0 {
		b = append(b, `,"depends_on":[`...)
		for i, d := range t.DependsOn {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, d)
		}
		b = append(b, ']')
	}
	return b
}

// appendChecksums appends the members of cks by key, and the closing brace.
func appendChecksums(b []byte, cks map[string]string) []byte {
	keys := make([]string, 0, len(cks))
	for k := range cks {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(appendString(b, k), ':')
		b = appendString(b, cks[k])
	}
	return append(b, '}')
}

// appendClaimFields appends the fields of t's life in the queue, state to
// kill_requested.
func appendClaimFields(b []byte, t *state.Transfer) []byte {
	b = appendKey(b, `,"state":`, string(t.State))
	if t.Owner != "" {
		b = appendKey(b, `,"owner":`, t.Owner)
	}
	if !t.LeaseExpires.IsZero() {
		b = appendTime(append(b, `,"lease_expires":`...), t.LeaseExpires)
	}
	for _, f := range [...]struct{ key, v string }{{`,"submit_sid":`, t.SubmitSID}, {`,"fts_job":`, t.FTSJob}} {
		if f.v != "" {
			b = appendKey(b, f.key, f.v)
		}
	}
	if t.FTSFileID != 0 {
		b = strconv.AppendInt(append(b, `,"fts_file_id":`...), t.FTSFileID, 10)
	}
	for _, f := range [...]struct{ key, v string }{{`,"source_pfn":`, t.SourcePFN}, {`,"dest_pfn":`, t.DestPFN}} {
		if f.v != "" {
			b = appendKey(b, f.key, f.v)
		}
	}
	b = strconv.AppendInt(append(b, `,"attempts":`...), int64(t.Attempts), 10)
	if !t.RetryAfter.IsZero() {
		b = appendTime(append(b, `,"retry_after":`...), t.RetryAfter)
	}
	if t.Reason != "" {
		b = appendKey(b, `,"reason":`, t.Reason)
	}
	if t.KillRequested {
		b = append(b, `,"kill_requested":true`...)
	}
	return b
}

// appendHistory appends the entries of hs and the closing bracket.
func appendHistory(b []byte, hs []state.Transition) []byte {
	for i := range hs {
		h := &hs[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = appendTime(append(b, `{"at":`...), h.At)
		b = appendKey(b, `,"from":`, string(h.From))
		b = appendKey(b, `,"to":`, string(h.To))
		b = appendKey(b, `,"by":`, h.By)
		if h.Reason != "" {
			b = appendKey(b, `,"reason":`, h.Reason)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

func appendProgress(b []byte, p *state.Progress) ([]byte, error) {
	b = appendKey(b, `{"fts_state":`, p.FTSState)
	if p.Bytes != 0 {
		b = strconv.AppendInt(append(b, `,"bytes":`...), p.Bytes, 10)
	}
	if p.Throughput != 0 {
		if math.IsNaN(p.Throughput) || math.IsInf(p.Throughput, 0) {
			return nil, &json.UnsupportedValueError{Str: strconv.FormatFloat(p.Throughput, 'g', -1, 64)}
		}
		b = appendFloat(append(b, `,"throughput":`...), p.Throughput)
	}
	if p.Retries != 0 {
		b = strconv.AppendInt(append(b, `,"retries":`...), int64(p.Retries), 10)
	}
	if p.Reason != "" {
		b = appendKey(b, `,"reason":`, p.Reason)
	}
	if p.FileID != 0 {
		b = strconv.AppendInt(append(b, `,"file_id":`...), p.FileID, 10)
	}
	b = appendTime(append(b, `,"updated":`...), p.Updated)
	return append(b, '}'), nil
}

func appendKey(b []byte, key, v string) []byte {
	return appendString(append(b, key...), v)
}

// appendString quotes s as encoding/json does (HTML characters escaped).
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if escaped[s[i]] {
			q, _ := json.Marshal(s) // rare: let encoding/json escape it
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// escaped marks the bytes encoding/json escapes in a string.
var escaped = func() (e [256]bool) {
	for c := range e {
		e[c] = c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&'
	}
	return e
}()

// appendFloat formats f as encoding/json does.
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendTime encodes t as state.Time does: null when zero, else
// state.TimeLayout in UTC.
func appendTime(b []byte, t state.Time) []byte {
	if t.IsZero() {
		return append(b, "null"...)
	}
	u := t.UTC()
	secs := u.Unix()
	days, rem := secs/86400, int(secs%86400)
	if rem < 0 {
		days, rem = days-1, rem+86400
	}
	year, month, day := civil(days)
	if year < 0 || year > 9999 {
		b = append(b, '"')
		return append(u.AppendFormat(b, state.TimeLayout), '"')
	}
	hour, minute, sec := rem/3600, rem/60%60, rem%60
	b = append(b, '"')
	b = appendDigits(b, year, 4)
	b = appendDigits(append(b, '-'), month, 2)
	b = appendDigits(append(b, '-'), day, 2)
	b = appendDigits(append(b, 'T'), hour, 2)
	b = appendDigits(append(b, ':'), minute, 2)
	b = appendDigits(append(b, ':'), sec, 2)
	b = appendDigits(append(b, '.'), u.Nanosecond()/int(time.Microsecond), 6)
	return append(b, 'Z', '"')
}

// civil returns the date of a day counted from 1970-01-01 in the proleptic
// Gregorian calendar (H. Hinnant's civil_from_days): what time.Time.Date
// computes, several times faster.
func civil(days int64) (year, month, day int) {
	z := days + 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era--
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	day = int(doy - (153*mp+2)/5 + 1)
	month = int(mp + 3)
	if mp >= 10 {
		month = int(mp - 9)
	}
	year = int(yoe + era*400)
	if month <= 2 {
		year++
	}
	return year, month, day
}

func appendDigits(b []byte, v, width int) []byte {
	var buf [8]byte
	for i := width - 1; i >= 0; i-- {
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	return append(b, buf[:width]...)
}
