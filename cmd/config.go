package cmd

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// extraSetting is a setting with no flag: the environment or the file sets it.
type extraSetting struct {
	Name, Default string
	Secret        bool
}

// extraSettings are the CouchDB connection settings (see couchSettingsHelp).
var extraSettings = []extraSetting{
	{Name: "couchdb-credentials"},
	{Name: "couchdb-user"},
	{Name: "couchdb-password", Secret: true},
	{Name: "couchdb-ca-file"},
	{Name: "couchdb-timeout", Default: "30s"},
}

// ConfigOptions are the arguments of `aso config`.
type ConfigOptions struct {
	Root *cobra.Command
}

func newConfigCommand(g *Globals) *cobra.Command {
	o := &ConfigOptions{}
	return &cobra.Command{
		Use:   "config",
		Short: "Print every setting's effective value and where it came from",
		Long: `config prints, for every command, the value each setting takes and where it came
from: flag, environment (ASO_NAME, the name in capitals with _ for -), file (the configuration file) or default.
Secrets are masked. A value that is not valid is shown and makes config exit 2.

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
}

// configRow is one line of `aso config`.
type configRow struct{ command, name, value, source string }

func runConfig(_ context.Context, o *ConfigOptions, g *Globals) error {
	v, err := g.configFile()
	if err != nil {
		return err
	}
	src := g.configSrc
	if src.Path != "" {
		fmt.Fprintf(g.Stdout, "config file: %s (from %s)\n\n", src.Path, src.From)
	} else {
		fmt.Fprintf(g.Stdout, "config file: %s\n\n", src.From)
	}
	var rows []configRow
	var errs []string
	o.Root.PersistentFlags().VisitAll(func(fl *pflag.Flag) {
		if fl.Name != "help" && fl.Name != "version" && !fl.Hidden {
			rows = append(rows, configRow{"(all)", fl.Name, fl.Value.String(), g.sources[fl.Name]})
		}
	})
	for _, s := range extraSettings {
		val, from := s.Default, fromDefault
		if ev, ok := g.lookupEnv(envName(s.Name)); ok {
			val, from = ev, fromEnv+" "+envName(s.Name)
		} else if v.IsSet(s.Name) {
			val, from = configValue(v.Get(s.Name)), fromFile+" "+src.Path
		}
		if s.Secret && val != "" {
			val = "xxxxx"
		}
		rows = append(rows, configRow{"(couchdb)", s.Name, val, from})
	}
	cmds := o.Root.Commands()
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name() < cmds[j].Name() })
	for _, c := range cmds {
		c.LocalNonPersistentFlags().VisitAll(func(fl *pflag.Flag) {
			if fl.Name == "help" || fl.Hidden { // hidden: set by aso itself
				return
			}
			from, err := g.resolveFlag(fl, v)
			if err != nil {
				errs = append(errs, c.Name()+": "+err.Error())
			}
			rows = append(rows, configRow{c.Name(), fl.Name, fl.Value.String(), from})
		})
	}
	tw := tabwriter.NewWriter(g.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMMAND\tSETTING\tVALUE\tSOURCE")
	for _, r := range rows {
		val := r.value
		if strings.Contains(val, "@") {
			val = RedactURL(val)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.command, r.name, val, r.source)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(errs) > 0 {
		return usagef("%s", strings.Join(errs, "; "))
	}
	return nil
}
