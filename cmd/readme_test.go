package cmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// docFiles are the user and operator documentation the tests below check:
// README.md and the pages of docs/ that hold commands and units.
var docFiles = []string{"../README.md", "../docs/operators.md", "../docs/serve.md", "../docs/security.md", "../docs/simulator.md"}

// readDocs returns the text of every file of docFiles, one after another.
func readDocs(t *testing.T) string {
	t.Helper()
	var all strings.Builder
	for _, f := range docFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
		all.WriteString("\n")
	}
	return all.String()
}

// readmeBlocks returns the fenced code blocks of the documentation
// (docFiles) in language lang.
func readmeBlocks(t *testing.T, lang string) []string {
	t.Helper()
	b := []byte(readDocs(t))
	var blocks []string
	var cur *strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case cur == nil && line == "```"+lang:
			cur = &strings.Builder{}
		case cur != nil && line == "```":
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	if len(blocks) == 0 {
		t.Fatalf("the documentation has no %s block", lang)
	}
	return blocks
}

// checkArgs parses an aso command line as aso would, and checks every value
// it gives as Load does.
func checkArgs(t *testing.T, args []string) {
	t.Helper()
	root := NewRootCommand(&Globals{LookupEnv: func(string) (string, bool) { return "", false }})
	c, rest, err := root.Find(args)
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	if err := c.ParseFlags(rest); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	if c == root {
		t.Fatalf("%q: no command", args)
	}
	c.Flags().Visit(func(fl *pflag.Flag) {
		if err := checkValue(c.Name(), fl); err != nil {
			t.Errorf("%q: --%s: %v", args, fl.Name, err)
		}
	})
}

var cronField = regexp.MustCompile(`^(\*|[0-9]+(-[0-9]+)?)(/[0-9]+)?(,(\*|[0-9]+(-[0-9]+)?)(/[0-9]+)?)*$`)

// TestREADME_CronLines: each cron line has five valid time fields and runs
// an aso command line that aso accepts.
func TestREADME_CronLines(t *testing.T) {
	for _, block := range readmeBlocks(t, "cron") {
		for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
			fields := strings.Fields(line)
			if len(fields) < 7 {
				t.Fatalf("cron line %q: want five time fields and a command", line)
			}
			for _, f := range fields[:5] {
				if !cronField.MatchString(f) {
					t.Errorf("cron line %q: bad time field %q", line, f)
				}
			}
			if fields[5] != "aso" {
				t.Fatalf("cron line %q: the command is not aso", line)
			}
			var args []string
			for _, a := range fields[6:] {
				if strings.HasPrefix(a, ">") || strings.HasPrefix(a, "2>") {
					break
				}
				args = append(args, a)
			}
			checkArgs(t, args)
		}
	}
}

// unitKeys are the keys the README's units may use, by section (systemd.unit,
// systemd.service, systemd.exec, systemd.kill, systemd.timer).
var unitKeys = map[string][]string{
	"Unit": {"Description", "Documentation", "After", "Before", "Wants", "Requires", "BindsTo", "PartOf",
		"Conflicts", "ConditionPathExists", "AssertPathExists", "StartLimitIntervalSec", "StartLimitBurst"},
	"Service": {"Type", "User", "Group", "WorkingDirectory", "Environment", "EnvironmentFile", "UMask",
		"ExecStart", "ExecStartPre", "ExecStartPost", "ExecStop", "ExecStopPost", "ExecReload",
		"SuccessExitStatus", "Restart", "RestartSec", "RestartPreventExitStatus", "RestartForceExitStatus",
		"TimeoutStartSec", "TimeoutStopSec", "TimeoutSec", "RuntimeMaxSec", "KillMode", "KillSignal",
		"SendSIGKILL", "Nice", "IOSchedulingClass", "CPUQuota", "MemoryMax", "LimitNOFILE",
		"StateDirectory", "RuntimeDirectory", "LogsDirectory", "ConfigurationDirectory",
		"StandardOutput", "StandardError", "SyslogIdentifier", "NoNewPrivileges", "PrivateTmp",
		"ProtectSystem", "ProtectHome", "ReadWritePaths"},
	"Timer":   {"OnCalendar", "OnBootSec", "OnUnitActiveSec", "Persistent", "RandomizedDelaySec", "AccuracySec", "Unit"},
	"Install": {"WantedBy", "RequiredBy", "Alias", "Also"},
}

// unitHeader starts a unit in the README's ini blocks: the file it goes to.
const unitHeader = "# /etc/systemd/system/"

// readmeUnits returns the README's systemd units by file name; one ini
// block may hold several, each after its header line.
func readmeUnits(t *testing.T) map[string]string {
	t.Helper()
	units := map[string]string{}
	for _, block := range readmeBlocks(t, "ini") {
		name := ""
		for _, line := range strings.SplitAfter(block, "\n") {
			if n, ok := strings.CutPrefix(strings.TrimSpace(line), unitHeader); ok {
				name = n
			}
			if name != "" {
				units[name] += line
			}
		}
	}
	return units
}

// TestREADME_SystemdUnits checks the README's units against the rules whose
// breach systemd only warns about (a comment after a value becomes part of
// the value; an unknown key is ignored), checks ExecStart's aso command
// line, and runs systemd-analyze verify on them where it is installed.
func TestREADME_SystemdUnits(t *testing.T) {
	dir := t.TempDir()
	var units []string
	kinds := map[string]bool{}
	for name, text := range readmeUnits(t) {
		checkUnit(t, name, text)
		// verify needs ExecStart's program to exist
		text = strings.ReplaceAll(text, "/usr/local/bin/aso", "/bin/true")
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		units = append(units, filepath.Join(dir, strings.Replace(name, "@.", "@alice.", 1)))
		kinds[filepath.Ext(name)] = true
	}
	if !kinds[".service"] || !kinds[".timer"] {
		t.Fatalf("README units %q, want services and timers", units)
	}
	verify, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Logf("systemd-analyze is not installed: the units were checked against the rules above only")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, verify, append([]string{"verify"}, units...)...).CombinedOutput()
	if bytes.Contains(out, []byte(dir)) || bytes.Contains(out, []byte("aso")) {
		t.Fatalf("systemd-analyze verify:\n%s", out)
	}
	if err != nil {
		t.Logf("systemd-analyze verify cannot run here (%v): the units were checked against the rules above only\n%s", err, out)
	}
}

func checkUnit(t *testing.T, name, text string) {
	t.Helper()
	section := ""
	for i, line := range strings.Split(text, "\n") {
		where := func(format string, args ...any) {
			t.Errorf("%s line %d %q: "+format, append([]any{name, i + 1, line}, args...)...)
		}
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
			continue
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
			if _, ok := unitKeys[section]; !ok {
				where("unknown section")
			}
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		switch {
		case !ok:
			where("not a key=value line")
		case !slices.Contains(unitKeys[section], key):
			where("%s is not a key of [%s]", key, section)
		case strings.Contains(value, " #") || strings.Contains(value, "\t#"):
			where("a comment after a value is part of the value: put it on a line of its own")
		case key == "ExecStart":
			args := strings.Fields(strings.ReplaceAll(value, "%i", "alice"))
			checkArgs(t, args[1:])
		}
	}
}

// TestREADME_EveryFlagDocumented: every flag of every command (but hidden
// ones), and every setting without a flag, is named in the README.
func TestREADME_EveryFlagDocumented(t *testing.T) {
	readme := readDocs(t)
	root := NewRootCommand(&Globals{})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(fl *pflag.Flag) {
			if fl.Name == "help" || fl.Hidden {
				return
			}
			if !regexp.MustCompile(`--` + regexp.QuoteMeta(fl.Name) + `([^a-z0-9-]|$)`).MatchString(readme) {
				t.Errorf("%s --%s is not in the documentation (README.md, docs/)", c.CommandPath(), fl.Name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for _, s := range extraSettings {
		if !strings.Contains(readme, envName(s.Name)) {
			t.Errorf("%s (%s) is not in the documentation (README.md, docs/)", s.Name, envName(s.Name))
		}
	}
}

// TestMan: a man page per command, with the command's flags.
func TestMan(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "man")
	var out, errb bytes.Buffer
	if code := ExecuteWith(context.Background(), []string{"man", dir}, Env{Stdout: &out, Stderr: &errb, LookupEnv: func(string) (string, bool) { return "", false }}); code != 0 {
		t.Fatalf("aso man: exit %d: %s", code, errb.String())
	}
	root := NewRootCommand(&Globals{})
	for _, c := range append(root.Commands(), root) {
		if !c.IsAvailableCommand() && c != root {
			continue
		}
		name := strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1"
		page, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("no man page for %s: %v", c.CommandPath(), err)
			continue
		}
		c.LocalNonPersistentFlags().VisitAll(func(fl *pflag.Flag) {
			if fl.Name != "help" && !fl.Hidden && !bytes.Contains(page, []byte("--"+fl.Name)) {
				t.Errorf("%s lacks --%s", name, fl.Name)
			}
			if env := envOf(fl); env != "" && !bytes.Contains(page, []byte(".TP\n\\fB"+env+"\\fP\n--"+fl.Name+": ")) {
				t.Errorf("%s: ENVIRONMENT lacks %s", name, env)
			}
		})
		for _, sec := range []string{".SH EXIT STATUS\n.TP\n\\fB0\\fP\nsuccess", ".SH ENVIRONMENT\n", ".SH FILES\n", ".SH EXAMPLES\n.EX\n"} {
			if !bytes.Contains(page, []byte(sec)) {
				t.Errorf("%s lacks %q", name, sec)
			}
		}
		for _, u := range exitsOf(c) {
			if u.code >= 0 && !bytes.Contains(page, []byte(fmt.Sprintf(".TP\n\\fB%d\\fP\n", u.code))) {
				t.Errorf("%s: EXIT STATUS lacks %d", name, u.code)
			}
		}
	}
}

// TestMan_NoDir: without DIR, aso man writes the pages where man finds
// them ($XDG_DATA_HOME/man/man1 here) and says where.
func TestMan_NoDir(t *testing.T) {
	data := t.TempDir()
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, LookupEnv: func(k string) (string, bool) {
		return data, k == "XDG_DATA_HOME"
	}}
	if code := ExecuteWith(context.Background(), []string{"man"}, env); code != 0 {
		t.Fatalf("aso man: exit %d: %s", code, errb.String())
	}
	dir := filepath.Join(data, "man", "man1")
	if _, err := os.Stat(filepath.Join(dir, "aso-run.1")); err != nil || !strings.Contains(out.String(), dir) {
		t.Fatalf("aso man without DIR: %v; it said %q, want the pages in %s", err, out.String(), dir)
	}
}
