package cmd

import (
	"io"
	"os"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/asyncstageout/aso/state/couch"
)

// Log field names, shared by every log line.
const (
	FieldTransfer = "transfer_id"
	FieldUser     = "user"
)

// Globals holds the options every command shares, and the streams commands
// write to.
type Globals struct {
	StateURL   string
	User       string
	LogLevel   string
	LogFormat  string
	ConfigFile string
	Progress   string

	// Stdin is what `aso enqueue -` reads; nil means os.Stdin.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Log            *logrus.Logger
	// LookupEnv reads the environment telling empty from unset; nil means
	// os.LookupEnv. Tests replace it.
	LookupEnv func(string) (string, bool)

	// conf holds the configuration file and the environment once read
	// (config), knownKeys every setting of the command tree, sources where
	// each flag's value came from (Load).
	conf      *config
	knownKeys map[string]bool
	sources   map[string]string

	// command is the name of the running command (Load), couchCred the
	// CouchDB credentials it uses (couchOptions, checkCouchRole).
	command   string
	couchCred couchCredential
	// couchChecked is what the fleet that started this agent found when
	// it opened CouchDB (see fleetChecked); nil: open and check as usual.
	couchChecked *couch.Checked
}

// AddFlags registers the global flags on the root command.
func (g *Globals) AddFlags(cmd *cobra.Command) {
	f := cmd.PersistentFlags()
	f.StringVar(&g.StateURL, "state", "", "state store: file:PATH, couchdb://HOST:PORT/DB or http(s)://HOST:PORT/DB, or comma-separated URLs of the nodes of one CouchDB cluster (default file:$XDG_STATE_HOME/aso/state.aso)")
	f.StringVar(&g.User, "user", "", "the user whose transfers to work on (default: the login name)")
	f.StringVar(&g.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.StringVar(&g.LogFormat, "log-format", "", "log format: text or json (default: text on a terminal, json otherwise)")
	f.StringVar(&g.Progress, "progress", "auto", "progress display on standard error (run, enqueue, kill, retry, purge, status --all-users): auto (live on a terminal, else none), always (live on a terminal, else a plain line now and then), never")
	f.StringVar(&g.ConfigFile, "config", "", "configuration file (YAML, JSON or TOML); keys are setting names (default: $ASO_CONFIG, else ~/.config/aso/aso.yaml, else /etc/aso/aso.yaml; see aso config)")
}

// userFlagGiven reports whether --user was given on the command line. A
// user from ASO_USER or the configuration file is only a default, which
// --all-users overrides; --user and --all-users together are a usage
// error.
func (g *Globals) userFlagGiven() bool {
	src, loaded := g.sources["user"]
	return g.User != "" && (!loaded || src == fromFlag)
}

// usersOf returns the user a command acts for: "" (every user) with
// --all-users, else --user or the login name.
func (g *Globals) usersOf(allUsers bool) (string, error) {
	if !allUsers {
		return g.UserName()
	}
	if g.userFlagGiven() {
		return "", usagef("give --user or --all-users, not both")
	}
	return "", nil
}

// UserName returns --user, or the login name.
func (g *Globals) UserName() (string, error) {
	if g.User != "" {
		return g.User, nil
	}
	for _, k := range []string{"USER", "LOGNAME"} {
		if u := g.getenv(k); u != "" {
			if err := checkUser(u); err != nil {
				return "", usagef("no user: give --user; the login name %q ($%s) is %v", u, k, err)
			}
			return u, nil
		}
	}
	return "", usagef("no user: give --user or set ASO_USER")
}

func (g *Globals) stdin() io.Reader {
	if g.Stdin == nil {
		return os.Stdin
	}
	return g.Stdin
}

// stdinTerminal reports whether standard input is a terminal: only then
// is a question asked.
func (g *Globals) stdinTerminal() bool {
	f, ok := g.stdin().(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
