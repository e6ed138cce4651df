package cmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"golang.org/x/term"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
)

// Log field names, shared by every log line.
const (
	FieldTransfer = "transfer_id"
	FieldJob      = "fts_job"
	FieldPhase    = "phase"
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

	// Stdin is what `aso enqueue -` reads; nil means os.Stdin.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Log            *logrus.Logger
	// Getenv reads the environment; tests replace it.
	Getenv func(string) string
}

// AddFlags registers the global flags on the root command.
func (g *Globals) AddFlags(cmd *cobra.Command) {
	f := cmd.PersistentFlags()
	f.StringVar(&g.StateURL, "state", "", "state store: file:PATH, couchdb://HOST:PORT/DB or http(s)://HOST:PORT/DB, or comma-separated URLs of the nodes of one CouchDB cluster (default file:$XDG_STATE_HOME/aso/state.aso)")
	f.StringVar(&g.User, "user", "", "the user whose transfers to work on (default: the login name)")
	f.StringVar(&g.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.StringVar(&g.LogFormat, "log-format", "", "log format: text or json (default: text on a terminal, json otherwise)")
	f.StringVar(&g.ConfigFile, "config", "", "configuration file (YAML, JSON or TOML); keys are flag names")
}

// Load fills every flag of cmd that was not given on the command line from
// the environment (ASO_FLAG_NAME) or the configuration file, in that order,
// then sets up logging.
func (g *Globals) Load(cmd *cobra.Command) error {
	if g.Getenv == nil {
		g.Getenv = os.Getenv
	}
	v := viper.New()
	cfg := g.ConfigFile
	if cfg == "" {
		cfg = g.Getenv("ASO_CONFIG")
	}
	if cfg != "" {
		v.SetConfigFile(cfg)
		if err := v.ReadInConfig(); err != nil {
			return usagef("config file %s: %v", cfg, err)
		}
	}
	var errs []string
	apply := func(fl *pflag.Flag) {
		if fl.Changed || fl.Name == "help" {
			return
		}
		env := "ASO_" + strings.ToUpper(strings.ReplaceAll(fl.Name, "-", "_"))
		val, ok := g.Getenv(env), false
		if val != "" {
			ok = true
		} else if v.IsSet(fl.Name) {
			val, ok = configValue(v.Get(fl.Name)), true
		}
		if !ok {
			return
		}
		if err := setFlag(fl, val); err != nil {
			errs = append(errs, fmt.Sprintf("%s (from %s or the config file): %v", fl.Name, env, err))
		}
	}
	cmd.Flags().VisitAll(apply)
	cmd.InheritedFlags().VisitAll(apply)
	if len(errs) > 0 {
		sort.Strings(errs)
		return usagef("%s", strings.Join(errs, "; "))
	}
	return g.setupLogging()
}

func configValue(x any) string {
	switch t := x.(type) {
	case []any:
		parts := make([]string, len(t))
		for i, p := range t {
			parts[i] = fmt.Sprint(p)
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(x)
}

func setFlag(fl *pflag.Flag, val string) error {
	if sv, ok := fl.Value.(pflag.SliceValue); ok {
		return sv.Replace(strings.Split(val, ","))
	}
	return fl.Value.Set(val)
}

func (g *Globals) setupLogging() error {
	if g.Log == nil {
		g.Log = logrus.New()
	}
	g.Log.SetOutput(g.Stderr)
	lvl, err := logrus.ParseLevel(g.LogLevel)
	if err != nil {
		return usagef("--log-level %q: want debug, info, warn or error", g.LogLevel)
	}
	g.Log.SetLevel(lvl)
	format := g.LogFormat
	if format == "" {
		format = "json"
		if f, ok := g.Stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			format = "text"
		}
	}
	switch format {
	case "text":
		g.Log.SetFormatter(&logrus.TextFormatter{FullTimestamp: true})
	case "json":
		g.Log.SetFormatter(&logrus.JSONFormatter{})
	default:
		return usagef("--log-format %q: want text or json", format)
	}
	return nil
}

// UserName returns --user, or the login name.
func (g *Globals) UserName() (string, error) {
	if g.User != "" {
		return g.User, nil
	}
	for _, k := range []string{"USER", "LOGNAME"} {
		if u := g.Getenv(k); u != "" {
			return u, nil
		}
	}
	return "", usagef("no user: give --user or set ASO_USER")
}

// ExecuteContext runs aso with args, writing to stdout and stderr, and returns
// the exit code. Errors are printed to stderr as "aso: <message>".
func ExecuteContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return ExecuteWith(ctx, args, Env{Stdin: os.Stdin, Stdout: stdout, Stderr: stderr, Getenv: os.Getenv})
}

// Env is the process environment aso runs in: its standard streams and its
// environment variables. Tests pass their own instead of the process's.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Getenv reads an environment variable; nil means os.Getenv.
	Getenv func(string) string
}

// ExecuteWith runs aso with args in env and returns the exit code. Errors
// are printed to env.Stderr as "aso: <message>".
func ExecuteWith(ctx context.Context, args []string, env Env) int {
	g := &Globals{Stdin: env.Stdin, Stdout: env.Stdout, Stderr: env.Stderr, Getenv: env.Getenv}
	root := NewRootCommand(g)
	root.SetArgs(args)
	root.SetIn(g.stdin())
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	err := root.ExecuteContext(ctx)
	if err != nil && isCobraUsage(err) {
		err = usageError{err}
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "aso: %v\n", err)
	}
	return ExitCode(err)
}

func (g *Globals) stdin() io.Reader {
	if g.Stdin == nil {
		return os.Stdin
	}
	return g.Stdin
}

// storeOpeners maps a --state URL scheme to the backend that opens it; each
// backend's wiring file registers itself.
var storeOpeners = map[string]func(ctx context.Context, g *Globals, url string, cfg state.Config) (state.Store, error){}

// OpenStore opens the state store named by --state. Errors and logs show the
// URL with any password replaced by "xxxxx".
func (g *Globals) OpenStore(ctx context.Context, cfg state.Config) (state.Store, error) {
	u := g.StateURL
	if u == "" {
		u = defaultStateURL(g.Getenv)
	}
	shown := RedactURL(u)
	if g.Log != nil {
		g.Log.WithFields(logrus.Fields{"state": shown, FieldUser: cfg.Agent.User}).Debug("opening the state store")
	}
	scheme, _, ok := strings.Cut(u, ":")
	if !ok {
		return nil, usagef("--state %q: want file:PATH, couchdb://HOST:PORT/DB or http(s)://HOST:PORT/DB", shown)
	}
	open, ok := storeOpeners[scheme]
	if !ok {
		return nil, usagef("--state %q: unknown scheme %q", shown, scheme)
	}
	return open(ctx, g, u, cfg)
}

// RedactURL returns u with the password of its user information, if any,
// replaced by "xxxxx", for logs and error messages (see couch.Redact).
func RedactURL(u string) string { return couch.Redact(u) }

func defaultStateURL(getenv func(string) string) string {
	dir := getenv("XDG_STATE_HOME")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			home = os.TempDir()
		}
		dir = home + "/.local/state"
	}
	return "file:" + dir + "/aso/state.aso"
}

// isCobraUsage recognises the argument errors cobra returns untyped.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least", "requires at most", "invalid argument", "flag needs an argument"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
