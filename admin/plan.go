package admin

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/asyncstageout/aso/state"
)

// Plan counts the transfers an operator command would change, by user and
// state: what a dry run prints and the question names.
type Plan struct {
	Verb   string // kill, retry, purge
	ByUser map[string]map[state.State]int
	Total  int
}

// NewPlan returns an empty plan of verb.
func NewPlan(verb string) *Plan { return &Plan{Verb: verb, ByUser: map[string]map[state.State]int{}} }

// Add counts t.
func (p *Plan) Add(t *state.Transfer) {
	m := p.ByUser[t.User]
	if m == nil {
		m = map[state.State]int{}
		p.ByUser[t.User] = m
	}
	m[t.State]++
	p.Total++
}

// size says how many transfers of how many users: "2,345 transfers of 3
// users".
func (p *Plan) size() string {
	return fmt.Sprintf("%s of %s", Plural(p.Total, "transfer"), Plural(len(p.ByUser), "user"))
}

// Plural says n things: "1 user", "2,345 transfers".
func Plural(n int, thing string) string {
	if n != 1 {
		thing += "s"
	}
	return Thousands(n) + " " + thing
}

// Question is what is asked before the action: "kill 2,345 transfers of
// 3 users? [y/N] ".
func (p *Plan) Question() string { return fmt.Sprintf("%s %s? [y/N] ", p.Verb, p.size()) }

// Print writes the dry run's table of counts and its summary line: what
// the changes are (effect) and what else was found (rest).
func (p *Plan) Print(w io.Writer, effect, rest string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if p.Total > 0 {
		fmt.Fprintln(tw, "USER\tSTATE\tTRANSFERS")
	}
	for _, u := range slices.Sorted(maps.Keys(p.ByUser)) {
		for _, s := range state.States {
			if n := p.ByUser[u][s]; n > 0 {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", u, s, Thousands(n))
			}
		}
	}
	tw.Flush()
	if rest != "" {
		rest = "; " + rest
	}
	fmt.Fprintf(w, "dry run: %s would change %s (%s)%s; nothing was changed\n", p.Verb, p.size(), effect, rest)
}

// Thousands writes n with a comma every three digits: 2,345.
func Thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}
