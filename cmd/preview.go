package cmd

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/sirupsen/logrus"
	"github.com/spf13/pflag"

	"github.com/asyncstageout/aso/state"
)

// askAbove is how many transfers an operator command changes without
// asking first, on a terminal.
const askAbove = 100

// ActOptions are the flags kill, retry and purge share: a dry run, and
// the question asked on a terminal before a large action.
type ActOptions struct {
	DryRun bool
	Yes    bool
}

// AddFlags registers --dry-run and --yes; large says which actions ask
// first.
func (o *ActOptions) AddFlags(f *pflag.FlagSet, large string) {
	f.BoolVar(&o.DryRun, "dry-run", false, "print what would change (counts by user and state; with --json, one line per transfer) and change nothing")
	f.BoolVar(&o.Yes, "yes", false, "do not ask first: on a terminal, "+large+" asks for confirmation (a command without a terminal never asks)")
}

// errNotConfirmed is the error of an action the operator declined.
var errNotConfirmed = errors.New("not confirmed: nothing was changed (--yes acts without asking)")

// ask asks question on standard error and reads the answer from standard
// input: errNotConfirmed unless it is y or yes.
func ask(g *Globals, question string) error {
	fmt.Fprint(g.Stderr, question)
	answer, err := bufio.NewReader(g.stdin()).ReadString('\n')
	if err != nil && answer == "" {
		fmt.Fprintln(g.Stderr)
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return errNotConfirmed
}

// plan counts the transfers an operator command would change, by user and
// state: what a dry run prints and the question names.
type plan struct {
	verb   string // kill, retry, purge
	byUser map[string]map[state.State]int
	total  int
}

func newPlan(verb string) *plan { return &plan{verb: verb, byUser: map[string]map[state.State]int{}} }

// add counts t.
func (p *plan) add(t *state.Transfer) {
	m := p.byUser[t.User]
	if m == nil {
		m = map[state.State]int{}
		p.byUser[t.User] = m
	}
	m[t.State]++
	p.total++
}

// size says how many transfers of how many users: "2,345 transfers of 3
// users".
func (p *plan) size() string {
	return fmt.Sprintf("%s of %s", plural(p.total, "transfer"), plural(len(p.byUser), "user"))
}

// plural says n things: "1 user", "2,345 transfers".
func plural(n int, thing string) string {
	if n != 1 {
		thing += "s"
	}
	return thousands(n) + " " + thing
}

// question is what is asked before the action: "kill 2,345 transfers of
// 3 users? [y/N] ".
func (p *plan) question() string { return fmt.Sprintf("%s %s? [y/N] ", p.verb, p.size()) }

// print writes the dry run's table of counts and its summary line: what
// the changes are (effect) and what else was found (rest).
func (p *plan) print(w io.Writer, effect, rest string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if p.total > 0 {
		fmt.Fprintln(tw, "USER\tSTATE\tTRANSFERS")
	}
	for _, u := range slices.Sorted(maps.Keys(p.byUser)) {
		for _, s := range state.States {
			if n := p.byUser[u][s]; n > 0 {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", u, s, thousands(n))
			}
		}
	}
	tw.Flush()
	if rest != "" {
		rest = "; " + rest
	}
	fmt.Fprintf(w, "dry run: %s would change %s (%s)%s; nothing was changed\n", p.verb, p.size(), effect, rest)
}

// log records the dry run's counts.
func (p *plan) log(g *Globals, user string) {
	g.Log.WithFields(logrus.Fields{FieldUser: user, "action": p.verb, "would_change": p.total, "users": len(p.byUser), "by_user": p.byUser}).
		Info("dry run: nothing was changed")
}

// thousands writes n with a comma every three digits: 2,345.
func thousands(n int) string {
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
