package cmd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// systemConfigFile is the last place the configuration file is looked for.
var systemConfigFile = "/etc/aso/aso.yaml"

// Sources of a setting's value, as `aso config` shows them.
const (
	fromFlag    = "flag"
	fromEnv     = "environment"
	fromFile    = "file"
	fromDefault = "default"
)

// configSource says where the configuration file came from.
type configSource struct {
	Path string // empty: no file
	From string // "--config", "ASO_CONFIG", "search path" or "none"
}

// Load fills every flag of cmd that was not given on the command line from
// the environment (ASO_FLAG_NAME, even when empty) or the configuration
// file, in that order, checks every value that was given, then sets up
// logging.
func (g *Globals) Load(cmd *cobra.Command) error {
	if g.Getenv == nil {
		g.Getenv = os.Getenv
	}
	g.command = cmd.Name()
	v, err := g.configFile()
	if err != nil {
		return err
	}
	var errs []string
	seen := map[string]bool{}
	apply := func(fl *pflag.Flag) {
		if fl.Name == "help" || fl.Name == "version" || seen[fl.Name] {
			return
		}
		seen[fl.Name] = true
		src, _, err := g.resolveFlag(cmd.Name(), fl, v)
		g.setSource(fl.Name, src)
		if err != nil {
			errs = append(errs, err.Error())
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

// resolveFlag sets fl, a flag of command, from the environment or the file
// when the command line did not give it, checks the value when any of the
// three gave one, and returns where the value came from and the value as
// given. A setting of commandLineOnly is never taken from the environment or
// the file: one set there is an error.
func (g *Globals) resolveFlag(command string, fl *pflag.Flag, v *viper.Viper) (from, given string, err error) {
	from, given = fromFlag, fl.Value.String()
	where := ""
	if !fl.Changed {
		env := envName(fl.Name)
		if ev, ok := g.lookupEnv(env); ok {
			given, from, where = ev, fromEnv+" "+env, " (from "+env+")"
		} else if v.IsSet(fl.Name) {
			given, from, where = configValue(v.Get(fl.Name)), fromFile+" "+g.configSrc.Path, " (from config file "+g.configSrc.Path+")"
		} else {
			return fromDefault, given, nil
		}
		if commandLineOnly[fl.Name] {
			return from, given, fmt.Errorf("--%s%s: taken from the command line only, never from the environment or the configuration file, since it widens what the command acts on; unset it there and give --%s", fl.Name, where, fl.Name)
		}
		if err := setFlag(fl, given); err != nil {
			return from, given, fmt.Errorf("--%s %q%s: %s", fl.Name, given, where, expected(fl, err))
		}
	}
	if err := checkValue(command, fl); err != nil {
		return from, given, fmt.Errorf("--%s %q%s: %v", fl.Name, given, where, err)
	}
	return from, given, nil
}

func (g *Globals) setSource(name, src string) {
	if g.sources == nil {
		g.sources = map[string]string{}
	}
	g.sources[name] = src
}

// envName is the environment variable of a setting: ASO_ and the name in
// upper case with underscores.
func envName(setting string) string {
	return "ASO_" + strings.ToUpper(strings.ReplaceAll(setting, "-", "_"))
}

// lookupEnv reads an environment variable, telling an empty one from an
// unset one when the environment allows it.
func (g *Globals) lookupEnv(k string) (string, bool) {
	switch {
	case g.LookupEnv != nil:
		return g.LookupEnv(k)
	case g.Getenv != nil:
		v := g.Getenv(k)
		return v, v != ""
	}
	return os.LookupEnv(k)
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

// configFile returns the configuration file's settings, read once per
// process into the one viper instance every command and backend shares;
// with no file, the instance is empty. A key that no command knows is an
// error naming the key and the file.
func (g *Globals) configFile() (*viper.Viper, error) {
	if g.config != nil {
		return g.config, nil
	}
	src, err := g.findConfig()
	if err != nil {
		return nil, err
	}
	v := viper.New()
	if src.Path != "" {
		v.SetConfigFile(src.Path)
		if err := v.ReadInConfig(); err != nil {
			return nil, usagef("config file %s: %v", src.Path, err)
		}
		if err := checkKeys(v, src.Path, g.knownKeys); err != nil {
			return nil, err
		}
	}
	g.config, g.configSrc = v, src
	return v, nil
}

// findConfig picks the configuration file: --config, else $ASO_CONFIG (set
// but empty: no file), else the first of ~/.config/aso/aso.yaml
// ($XDG_CONFIG_HOME/aso/aso.yaml) and /etc/aso/aso.yaml that exists.
func (g *Globals) findConfig() (configSource, error) {
	if g.ConfigFile != "" {
		return configSource{g.ConfigFile, "--config"}, nil
	}
	if p, ok := g.lookupEnv("ASO_CONFIG"); ok {
		if p == "" {
			return configSource{"", "ASO_CONFIG (empty: no file)"}, nil
		}
		return configSource{p, "ASO_CONFIG"}, nil
	}
	for _, p := range g.configSearchPath() {
		_, err := os.Stat(p)
		switch {
		case err == nil:
			return configSource{p, "search path"}, nil
		case !errors.Is(err, fs.ErrNotExist):
			return configSource{}, usagef("config file %s: %v", p, err)
		}
	}
	return configSource{"", "none (searched " + strings.Join(g.configSearchPath(), ", ") + ")"}, nil
}

// configSearchPath lists where the configuration file is looked for when
// neither --config nor ASO_CONFIG names one.
func (g *Globals) configSearchPath() []string {
	var paths []string
	if dir, _ := g.lookupEnv("XDG_CONFIG_HOME"); dir != "" {
		paths = append(paths, filepath.Join(dir, "aso", "aso.yaml"))
	} else if home, _ := g.lookupEnv("HOME"); home != "" {
		paths = append(paths, filepath.Join(home, ".config", "aso", "aso.yaml"))
	}
	return append(paths, systemConfigFile)
}

// checkKeys rejects a key of the file that no command has. One file serves
// every command, so a key of another command is fine. known nil skips the
// check (a Globals built without its command tree).
func checkKeys(v *viper.Viper, path string, known map[string]bool) error {
	if known == nil {
		return nil
	}
	var unknown []string
	for _, k := range v.AllKeys() {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	return usagef("config file %s: unknown key(s) %s: no aso command has such a setting (see `aso config`)", path, strings.Join(unknown, ", "))
}

// settingKeys returns every setting of the command tree under root (every
// flag of every command but help, version and config) and the settings
// that have no flag.
func settingKeys(root *cobra.Command) map[string]bool {
	keys := map[string]bool{}
	for _, s := range extraSettings {
		keys[s.Name] = true
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		add := func(fl *pflag.Flag) {
			if fl.Name != "help" && fl.Name != "version" && fl.Name != "config" {
				keys[fl.Name] = true
			}
		}
		c.LocalFlags().VisitAll(add)
		c.PersistentFlags().VisitAll(add)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return keys
}
