package cmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"

	"github.com/asyncstageout/aso/internal/outputs"
)

// ManOptions are the arguments of `aso man`.
type ManOptions struct {
	Dir  string
	Root *cobra.Command
}

func newManCommand(g *Globals) *cobra.Command {
	o := &ManOptions{}
	return &cobra.Command{
		Use:   "man [DIR]",
		Short: "Write a man page per command into DIR (default: the user's man directory), generated from the help",
		Long: "man writes aso.1 and aso-COMMAND.1 for every command into DIR (created if missing),\n" +
			"from the same text as --help, with the sections EXIT STATUS, ENVIRONMENT, FILES and\n" +
			"EXAMPLES. Without DIR it writes them where man finds them: $XDG_DATA_HOME/man/man1\n" +
			"(~/.local/share/man/man1), or /usr/local/share/man/man1 for root; then `man aso-run`\n" +
			"reads one. Read a page of another DIR with `man -l DIR/aso-run.1`. A page that would\n" +
			"replace the store, the sites or the configuration file is refused before any is written.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Root = cmd.Root()
			if len(args) == 1 {
				o.Dir = args[0]
			}
			return runMan(cmd.Context(), o, g)
		},
	}
}

func runMan(_ context.Context, o *ManOptions, g *Globals) error {
	if o.Dir == "" {
		o.Dir = defaultManDir(g)
	}
	o.Root.DisableAutoGenTag = true
	cmds := manCommands(o.Root)
	outs := make([]outputs.Output, len(cmds))
	for i, c := range cmds {
		outs[i] = outputs.Output{Flag: "the page", Path: filepath.Join(o.Dir, manName(c)), MakeDirs: true}
	}
	if err := g.checkOutputs(outs); err != nil {
		return err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return fmt.Errorf("man: %w", err)
	}
	header := &doc.GenManHeader{Title: "ASO", Section: "1", Source: "aso " + Version, Manual: "aso manual"}
	for i, c := range cmds {
		if err := writeManPage(c, header, outs[i].Path); err != nil {
			return fmt.Errorf("man: %w", err)
		}
	}
	_, err := fmt.Fprintf(g.Stdout, "man pages written to %s\n", o.Dir)
	return err
}

// defaultManDir is where `aso man` writes without DIR: the user's own man
// directory, which man searches (man-db looks beside each directory of
// PATH, ~/.local/bin included), or the system's local one for root.
func defaultManDir(g *Globals) string {
	if d := g.getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "man", "man1")
	}
	if os.Geteuid() == 0 {
		return "/usr/local/share/man/man1"
	}
	home := g.getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".local", "share", "man", "man1")
}

// manCommands lists c and every available command under it: each has a
// page.
func manCommands(c *cobra.Command) []*cobra.Command {
	if !c.IsAvailableCommand() && c.HasParent() {
		return nil
	}
	out := []*cobra.Command{c}
	for _, sub := range c.Commands() {
		out = append(out, manCommands(sub)...)
	}
	return out
}

// manName is the file name of c's page: aso-run.1.
func manName(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1"
}

// writeManPage writes the page of c to path.
func writeManPage(c *cobra.Command, header *doc.GenManHeader, path string) error {
	h := *header
	var buf bytes.Buffer
	if err := doc.GenMan(c, &h, &buf); err != nil {
		return err
	}
	return os.WriteFile(path, manSections(c, buf.Bytes()), 0o644)
}

// manSections adds to the page cobra generated the sections it lacks:
// EXIT STATUS, ENVIRONMENT and FILES before SEE ALSO, and names its
// EXAMPLE section EXAMPLES, as man-pages(7) does.
func manSections(c *cobra.Command, page []byte) []byte {
	page = bytes.Replace(page, []byte("\n.SH EXAMPLE\n"), []byte("\n.SH EXAMPLES\n"), 1)
	var b bytes.Buffer
	b.WriteString(".SH EXIT STATUS\n")
	for _, u := range exitsOf(c) {
		if u.code < 0 {
			fmt.Fprintf(&b, ".PP\n%s\n", roff(u.note))
			continue
		}
		text := exitMeaning[u.code]
		if u.note != "" {
			text += "; " + u.note
		}
		fmt.Fprintf(&b, ".TP\n\\fB%d\\fP\n%s\n", u.code, roff(text))
	}
	b.WriteString("\n.SH ENVIRONMENT\n")
	for _, e := range environmentOf(c) {
		fmt.Fprintf(&b, ".TP\n\\fB%s\\fP\n%s\n", e.name, roff(e.text))
	}
	b.WriteString("\n.SH FILES\n")
	for _, f := range filesOf(c) {
		fmt.Fprintf(&b, ".TP\n\\fI%s\\fP\n%s\n", roff(f.name), roff(f.text))
	}
	b.WriteString("\n\n")
	if i := bytes.Index(page, []byte(".SH SEE ALSO")); i >= 0 {
		return append(page[:i:i], append(b.Bytes(), page[i:]...)...)
	}
	return append(page, b.Bytes()...)
}

// roff escapes text for a man page: backslashes, and a dot or quote
// that would start a line.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			lines[i] = `\&` + l
		}
	}
	return strings.Join(lines, "\n")
}

// manEntry is one entry of ENVIRONMENT or FILES.
type manEntry struct{ name, text string }

// environmentOf lists the environment variables that c reads: one per
// flag, then those of the store and of the credentials.
func environmentOf(c *cobra.Command) []manEntry {
	var out []manEntry
	add := func(fl *pflag.Flag) {
		if env := envOf(fl); env != "" {
			usage := strings.TrimSuffix(fl.Usage, " [$"+env+"]")
			out = append(out, manEntry{env, "--" + fl.Name + ": " + usage})
		}
	}
	c.NonInheritedFlags().VisitAll(add)
	c.InheritedFlags().VisitAll(add)
	out = append(out,
		manEntry{"XDG_CONFIG_HOME, HOME", "where the configuration file is looked for (see FILES)"},
		manEntry{"XDG_STATE_HOME", "the default file store is $XDG_STATE_HOME/aso/state.aso (~/.local/state/aso/state.aso)"},
		manEntry{"USER, LOGNAME", "the user when --user is not given, and who is named in the history of the transfers an operator command changes"})
	for _, s := range extraSettings {
		out = append(out, manEntry{envName(s.Name), "the CouchDB connection: " + s.Name + " (no flag: see aso config)"})
	}
	switch c.Name() {
	case "run", "rm", "verify":
		out = append(out,
			manEntry{"X509_USER_PROXY", "the X.509 proxy when --proxy is not given (then /tmp/x509up_u<uid>)"},
			manEntry{"X509_CERT_DIR", "the CA certificates when --cert-dir is not given (then /etc/grid-security/certificates)"})
	}
	if c.Name() == "run" {
		out = append(out, manEntry{"BEARER_TOKEN_FILE", "the FTS bearer token file when --token-file is not given"})
	}
	if c.Name() == "man" {
		out = append(out, manEntry{"XDG_DATA_HOME", "without DIR, the pages go to $XDG_DATA_HOME/man/man1"})
	}
	return out
}

// filesOf lists the files c reads or writes by default.
func filesOf(c *cobra.Command) []manEntry {
	out := []manEntry{
		{"~/.config/aso/aso.yaml", "the configuration file ($XDG_CONFIG_HOME/aso/aso.yaml), unless --config or ASO_CONFIG names another"},
		{"/etc/aso/aso.yaml", "the configuration file when the one above does not exist"},
		{"~/.local/state/aso/state.aso", "the default file store ($XDG_STATE_HOME/aso/state.aso), when --state names none"},
	}
	switch c.Name() {
	case "run":
		out = append(out,
			manEntry{"/tmp/x509up_u<uid>", "the X.509 proxy when neither --proxy nor X509_USER_PROXY names one"},
			manEntry{"/etc/grid-security/certificates", "the CA certificates when neither --cert-dir nor X509_CERT_DIR names them"})
	case "man":
		out = append(out, manEntry{"~/.local/share/man/man1", "where the pages go without DIR (/usr/local/share/man/man1 for root)"})
	}
	return out
}
