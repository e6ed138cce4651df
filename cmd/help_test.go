package cmd

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestHelp_EnvAndExitCodes: the --help of every command names each flag's
// environment variable after its text, and lists the exit codes of the
// command's entry in the one table of them.
func TestHelp_EnvAndExitCodes(t *testing.T) {
	root := NewRootCommand(&Globals{})
	for _, c := range append(root.Commands(), root) {
		if !c.IsAvailableCommand() && c != root {
			continue
		}
		args := append(strings.Fields(strings.TrimPrefix(c.CommandPath(), "aso")), "--help")
		var out, errb bytes.Buffer
		if code := ExecuteWith(context.Background(), args, Env{Stdout: &out, Stderr: &errb, LookupEnv: func(string) (string, bool) { return "", false }}); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		help := out.String()
		c.Flags().VisitAll(func(fl *pflag.Flag) {
			env := envOf(fl)
			if env == "" {
				return
			}
			def := regexp.MustCompile(`^\s+(-\w, )?--` + regexp.QuoteMeta(fl.Name) + `( |$)`)
			line := ""
			for _, l := range strings.Split(help, "\n") {
				if line == "" && def.MatchString(l) {
					line = l
				}
			}
			if !strings.Contains(line, "[$"+env+"]") {
				t.Errorf("%s --help: the line of --%s does not name $%s: %q", c.CommandPath(), fl.Name, env, line)
			}
		})
		_, exits, ok := strings.Cut(help, "\nExit codes:\n")
		if !ok {
			t.Errorf("%s --help lists no exit codes", c.CommandPath())
			continue
		}
		for _, u := range exitsOf(c) {
			if u.code >= 0 && !strings.Contains(exits, fmt.Sprintf("\n  %-4d %s", u.code, exitMeaning[u.code])) && !strings.HasPrefix(exits, fmt.Sprintf("  %-4d", u.code)) {
				t.Errorf("%s --help: exit code %d missing:\n%s", c.CommandPath(), u.code, exits)
			}
		}
	}
}

// TestHelp_ExamplesParse: every aso command line of the examples is one
// aso accepts, its values valid.
func TestHelp_ExamplesParse(t *testing.T) {
	root := NewRootCommand(&Globals{})
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, line := range strings.Split(c.Example, "\n") {
			line, _, _ = strings.Cut(line, "#")
			for _, part := range strings.FieldsFunc(line, func(r rune) bool { return r == '|' || r == '&' || r == '>' }) {
				f := strings.Fields(part)
				if len(f) < 2 || f[0] != "aso" {
					continue
				}
				if f[1] != "man" && f[1] != "version" && f[1] != "completion" && !strings.HasPrefix(f[1], "--") {
					checkArgs(t, f[1:])
				}
				n++
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if n < 20 {
		t.Fatalf("%d example command lines, want one or more for every command", n)
	}
}
