package cmd

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/asyncstageout/aso/internal/ranges"
	"github.com/asyncstageout/aso/serve"
	"github.com/asyncstageout/aso/state"
)

// rangedFlags returns every count and duration flag of the command tree,
// by its key in the ranges table ("NAME", or "COMMAND NAME" where the
// command has a range of its own), with the commands that have it.
func rangedFlags(t *testing.T) map[string][]string {
	t.Helper()
	root := NewRootCommand(&Globals{LookupEnv: func(string) (string, bool) { return "", false }})
	out := map[string][]string{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(fl *pflag.Flag) {
			if _, ok := numberOf(fl.Value.Type(), "0"); !ok {
				return
			}
			key := fl.Name
			if _, ok := ranges.Of("", c.Name()+" "+fl.Name); ok {
				key = c.Name() + " " + fl.Name
			}
			if _, ok := ranges.Of(c.Name(), fl.Name); !ok {
				t.Errorf("aso %s --%s: a %s with no range in package ranges", c.Name(), fl.Name, fl.Value.Type())
			} else if err := checkValue(c.Name(), fl); fl.Name != "older-than" && err != nil { // purge's is required: 0 is "not given"
				t.Errorf("aso %s --%s: the default %s is out of its own range: %v", c.Name(), fl.Name, fl.DefValue, err)
			}
			out[key] = append(out[key], "")[:len(out[key])]
			if !fl.Hidden { // set by aso itself: not in the docs
				out[key] = append(out[key], c.Name())
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for _, s := range extraSettings {
		if s.Default != "" {
			if _, ok := ranges.Of("", s.Name); ok {
				out[s.Name] = append(out[s.Name], "(couchdb)")
			}
		}
	}
	return out
}

// TestRanges_EveryCountAndDuration: every count and duration setting has a
// range, its default is in it, and the table has no range of a setting
// that does not exist; the ranges that mirror a limit of another package
// say the same limit.
func TestRanges_EveryCountAndDuration(t *testing.T) {
	flags := rangedFlags(t)
	for _, k := range ranges.Names() {
		if _, ok := flags[k]; !ok {
			t.Errorf("package ranges has %q, which no command has", k)
		}
	}
	for key, limit := range map[string]int{"page-size": serve.MaxPageSize, "scitag-activity": state.MaxActivity} {
		if r, _ := ranges.Of("", key); r.Max != float64(limit) {
			t.Errorf("%s: range up to %v, want %d", key, r.Max, limit)
		}
	}
}

// rangesDoc is the table of ranges of docs/operators.md, between these
// markers.
const rangesStart, rangesEnd = "<!-- ranges: generated from internal/ranges; TestRanges_Documented checks it -->\n", "<!-- /ranges -->"

// TestRanges_Documented: docs/operators.md lists every range as the code
// has it, and --help says it after the flag's text.
func TestRanges_Documented(t *testing.T) {
	flags := rangedFlags(t)
	keys := make([]string, 0, len(flags))
	for k, cmds := range flags {
		if len(cmds) > 0 {
			keys = append(keys, k)
		}
	}
	name := func(k string) string { return k[strings.LastIndex(k, " ")+1:] }
	sort.Slice(keys, func(i, j int) bool { return name(keys[i])+" "+keys[i] < name(keys[j])+" "+keys[j] })
	var b strings.Builder
	b.WriteString("| setting | commands | range |\n|---|---|---|\n")
	for _, k := range keys {
		r, _ := ranges.Of("", k)
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", name(k), strings.Join(flags[k], ", "), r)
	}
	doc, err := os.ReadFile("../docs/operators.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), rangesStart)
	table, _, ok2 := strings.Cut(after, rangesEnd)
	if !ok || !ok2 || table != b.String() {
		t.Errorf("docs/operators.md: the table of ranges differs from the code's; it should read:\n%s%s%s", rangesStart, b.String(), rangesEnd)
	}
	help := runHelp(t, "run")
	if !strings.Contains(help, "--lock-ttl duration") || !strings.Contains(help, "(range 1s to 24h) [$ASO_LOCK_TTL]") {
		t.Errorf("aso run --help does not give --lock-ttl's range:\n%s", help)
	}
}

// runHelp returns the output of aso COMMAND --help.
func runHelp(t *testing.T, command string) string {
	t.Helper()
	var out strings.Builder
	root := NewRootCommand(&Globals{LookupEnv: func(string) (string, bool) { return "", false }, Stdout: &out, Stderr: &out})
	root.SetOut(&out)
	root.SetArgs([]string{command, "--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}
