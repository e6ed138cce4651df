// Package ranges holds the range of every count and duration aso's
// settings take, in one table that the command line, the environment and
// the configuration file are all checked against, and that --help and
// docs/operators.md show. A value outside its range is refused, never
// clamped: a setting a person got wrong is said, not guessed at.
package ranges

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Range is the values one setting takes: Min to Max, and a few values
// outside that span with a meaning of their own (0: no limit).
type Range struct {
	Min, Max float64 // inclusive; a duration's in nanoseconds; Max +Inf: no upper bound
	Duration bool
	Special  []Special
}

// Special is a value outside a Range's span with a documented meaning.
type Special struct {
	Value float64
	Means string
}

// dur is the range min to max of a duration; max 0: no upper bound.
func dur(min, max time.Duration, special ...Special) Range {
	r := Range{Min: float64(min), Max: float64(max), Duration: true, Special: special}
	if max == 0 {
		r.Max = math.Inf(1)
	}
	return r
}

// count is the range min to max of a whole number.
func count(min, max float64, special ...Special) Range {
	return Range{Min: min, Max: max, Special: special}
}

const (
	ms  = time.Millisecond
	sec = time.Second
	min = time.Minute
	hr  = time.Hour
	day = 24 * time.Hour
)

// table holds the ranges by setting name; "COMMAND NAME" for a setting
// whose name another command uses with another meaning.
var table = map[string]Range{
	// aso run: the agent
	"batch-size":                 count(1, 100_000),
	"max-files-per-job":          count(1, 10_000),
	"monitor-group":              count(1, 1_000_000, Special{0, "5 x --batch-size"}),
	"interval":                   dur(10*ms, hr),
	"first-poll":                 dur(10*ms, hr),
	"update-window":              dur(sec, day),
	"lock-ttl":                   dur(sec, day),
	"phase-timeout":              dur(sec, hr),
	"delete-timeout":             dur(sec, day),
	"max-runtime":                dur(sec, 0, Special{0, "no limit"}),
	"give-up-after":              dur(sec, 0, Special{0, "never"}),
	"fts-retry":                  count(1, 10, Special{0, "the server's default"}, Special{-1, "none"}),
	"fts-retry-delay":            count(1, 86_400, Special{0, "the server's default, 120 s"}),
	"fts-timeout":                dur(sec, 10*min),
	"min-delegation":             dur(min, 30*day),
	"lease-ttl":                  dur(sec, day),
	"cool-off":                   dur(ms, 30*day),
	"max-attempts":               count(1, 100),
	"dependency-wait":            dur(ms, 365*day),
	"storage-token-timeout":      dur(sec, hr),
	"storage-token-min-lifetime": dur(min, 30*day),
	"scitag-activity":            count(1, 63, Special{0, "no scitag"}),
	"max-active-per-link":        count(1, 1_000_000, Special{0, "no cap"}),
	"sim-transfer-time":          dur(ms, day, Special{0, "instant"}),
	"sim-failure-rate":           {Min: 0, Max: 1},
	"sim-seed":                   count(math.MinInt64, math.MaxInt64),
	// aso run --all-users: the fleet, and what it hands its agents
	"max-agents":        count(1, 1024),
	"discover-interval": dur(sec, hr),
	"fleet-read-quorum": count(0, 1000, Special{-1, "not given"}),
	"progress-fd":       count(3, math.MaxInt32, Special{0, "none"}),
	// the other commands
	"couchdb-timeout": dur(sec, 10*min),
	"list limit":      count(1, 1e9, Special{0, "all"}),
	"older-than":      dur(1, 0),
	"rm batch-size":   count(1, 10_000),
	"rm timeout":      dur(sec, day),
	"verify timeout":  dur(sec, day),
	"parallel":        count(1, 256),
	"cache-ttl":       dur(ms, hr),
	"stale-after":     dur(sec, 365*day),
	"page-size":       count(1, 1000),
	"speed":           {Min: 1e-3, Max: 1e6},
	"failure-rate":    {Min: 0, Max: 1},
	"seed":            count(math.MinInt64, math.MaxInt64),
	"default-retry":   count(0, 10),
	"queue-delay":     dur(0, day),
	"start-delay":     dur(0, day),
	"transfer-time":   dur(0, day),
}

// Of returns the range of setting name of command (the command's name,
// "" for a setting every command has).
func Of(command, name string) (Range, bool) {
	if r, ok := table[command+" "+name]; ok {
		return r, true
	}
	r, ok := table[name]
	return r, ok
}

// Names returns the keys of the table: setting names, and "COMMAND NAME"
// where a command gives a name a meaning of its own.
func Names() []string {
	names := make([]string, 0, len(table))
	for k := range table {
		names = append(names, k)
	}
	return names
}

// Check returns an error saying the range when v is outside it.
func (r Range) Check(v float64) error {
	if v >= r.Min && v <= r.Max {
		return nil
	}
	for _, s := range r.Special {
		if v == s.Value {
			return nil
		}
	}
	return fmt.Errorf("out of range: want %s", r)
}

// String is the range as --help and the errors say it: "1s to 24h" or
// "at least 1s", then each special value and its meaning ("; 0: no limit").
func (r Range) String() string {
	var b strings.Builder
	switch {
	case math.IsInf(r.Max, 1):
		fmt.Fprintf(&b, "at least %s", r.format(r.Min))
	case r.Min <= math.MinInt64 && r.Max >= math.MaxInt64:
		b.WriteString("any whole number")
	default:
		fmt.Fprintf(&b, "%s to %s", r.format(r.Min), r.format(r.Max))
	}
	for _, s := range r.Special {
		fmt.Fprintf(&b, "; %s: %s", r.format(s.Value), s.Means)
	}
	return b.String()
}

func (r Range) format(v float64) string {
	if !r.Duration {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	if v == 0 {
		return "0"
	}
	s := time.Duration(v).String() // 24h0m0s, 10m0s, 1m30s
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
