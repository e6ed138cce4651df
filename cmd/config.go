package cmd

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/asyncstageout/aso/internal/ranges"
	"github.com/asyncstageout/aso/internal/statusview"
)

// extraSetting is a setting with no flag: the environment or the file sets it.
type extraSetting struct {
	Name, Default string
	Secret        bool
}

// extraSettings are the CouchDB connection settings (see couchSettingsHelp).
var extraSettings = []extraSetting{
	{Name: "couchdb-credentials"},
	{Name: "couchdb-credentials-admin"},
	{Name: "couchdb-credentials-agent"},
	{Name: "couchdb-credentials-producer"},
	{Name: "couchdb-credentials-user"},
	{Name: "couchdb-credentials-operator"},
	{Name: "couchdb-credentials-reader"},
	{Name: "couchdb-user"},
	{Name: "couchdb-password", Secret: true},
	{Name: "couchdb-ca-file"},
	{Name: "couchdb-timeout", Default: "30s"},
}

// ConfigOptions are the arguments of `aso config`.
type ConfigOptions struct {
	JSON bool
	Root *cobra.Command
}

// AddFlags registers the flags of `aso config`.
func (o *ConfigOptions) AddFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&o.JSON, "json", false, `print {"config_file": {"path", "from"}, "settings": [{"command", "name", "value", "source", "env"}], "errors"} as one JSON document`)
}

func newConfigCommand(g *Globals) *cobra.Command {
	o := &ConfigOptions{}
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print every setting's effective value and where it came from",
		Long: `config prints, for every command, the value each setting takes and where it came
from: flag, environment (ASO_NAME, the name in capitals with _ for -), file (the configuration file) or default.
Secrets are masked. A value that is not valid is shown and makes config exit 64.
Every count and duration has a range, which each command's --help gives after the flag.

--all, --all-users and --older-than are taken from the command line only ("command line
only" below): they widen what a command destroys or reaches, so the environment and the
file never set them, and one set there is an error.

The configuration file is --config, else $ASO_CONFIG (set but empty: no file), else the
first of ~/.config/aso/aso.yaml ($XDG_CONFIG_HOME/aso/aso.yaml) and /etc/aso/aso.yaml
that exists. Its keys are setting names; one file serves every command, so it may hold
the settings of several commands, but a key that no command has is an error.

` + couchSettingsHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Root = cmd.Root()
			return runConfig(cmd.Context(), o, g)
		},
	}
	o.AddFlags(cmd)
	return cmd
}

// ConfigRow is one setting of `aso config`: a line of its table, an
// element of settings in its JSON.
type ConfigRow struct {
	Command string `json:"command"` // "(all)", "(couchdb)" or the command's name
	Name    string `json:"name"`
	Value   string `json:"value"` // secrets masked
	Source  string `json:"source"`
	Env     string `json:"env"` // the environment variable that sets it
}

// ConfigJSON is what `aso config --json` prints.
type ConfigJSON struct {
	ConfigFile struct {
		Path string `json:"path"` // "" for none
		From string `json:"from"`
	} `json:"config_file"`
	Settings []ConfigRow `json:"settings"`
	// Errors are the values that are not valid (aso config exits 64).
	Errors []string `json:"errors"`
}

func runConfig(_ context.Context, o *ConfigOptions, g *Globals) error {
	c, err := g.config()
	if err != nil {
		return err
	}
	rows, errs := configRows(o.Root, g, c)
	for i := range rows {
		if strings.Contains(rows[i].Value, "@") {
			rows[i].Value = RedactURL(rows[i].Value)
		}
	}
	if o.JSON {
		out := ConfigJSON{Settings: rows, Errors: statusview.NonNil(errs)}
		out.ConfigFile.Path, out.ConfigFile.From = c.src.Path, c.src.From
		if err := writeJSON(g.Stdout, out); err != nil {
			return err
		}
	} else if err := printConfig(g, c.src, rows); err != nil {
		return err
	}
	if len(errs) > 0 {
		return usagef("%s", strings.Join(errs, "; "))
	}
	return nil
}

// configRows returns every setting of the command tree under root with
// its value and source, and the errors of the values that are not valid.
func configRows(root *cobra.Command, g *Globals, c *config) ([]ConfigRow, []string) {
	var rows []ConfigRow
	var errs []string
	root.PersistentFlags().VisitAll(func(fl *pflag.Flag) {
		if fl.Name != "help" && fl.Name != "version" && !fl.Hidden {
			rows = append(rows, ConfigRow{"(all)", fl.Name, fl.Value.String(), g.sources[fl.Name], envName(fl.Name)})
		}
	})
	for _, s := range extraSettings {
		val := c.v.GetString(s.Name)
		from, _ := c.source(s.Name, false)
		if _, ok := ranges.Of("", s.Name); ok && from != fromDefault {
			if _, err := durationSetting(s.Name, val); err != nil {
				errs = append(errs, fmt.Sprintf("(couchdb): %s %q (from %s): %v", s.Name, val, from, err))
			}
		}
		if s.Secret && val != "" {
			val = "xxxxx"
		}
		rows = append(rows, ConfigRow{"(couchdb)", s.Name, val, from, envName(s.Name)})
	}
	cmds := root.Commands()
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name() < cmds[j].Name() })
	for _, cmd := range cmds {
		flags := cmd.LocalNonPersistentFlags()
		v := c.viper(flags)
		flags.VisitAll(func(fl *pflag.Flag) {
			if fl.Name == "help" || fl.Hidden { // hidden: set by aso itself
				return
			}
			from, given, err := c.resolve(v, cmd.Name(), fl)
			if err != nil {
				errs = append(errs, cmd.Name()+": "+err.Error())
			}
			value := fl.Value.String()
			if err != nil {
				value = given // a refused value as it was given: "30", not the 0s left by its parse
			}
			if commandLineOnly[fl.Name] {
				from = "command line only"
			}
			rows = append(rows, ConfigRow{cmd.Name(), fl.Name, value, from, envName(fl.Name)})
		})
	}
	return rows, errs
}

// printConfig prints where the file came from and the table of settings.
func printConfig(g *Globals, src configSource, rows []ConfigRow) error {
	if src.Path != "" {
		fmt.Fprintf(g.Stdout, "config file: %s (from %s)\n\n", src.Path, src.From)
	} else {
		fmt.Fprintf(g.Stdout, "config file: %s\n\n", src.From)
	}
	tw := tabwriter.NewWriter(g.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMMAND\tSETTING\tVALUE\tSOURCE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Command, r.Name, r.Value, r.Source)
	}
	return tw.Flush()
}
