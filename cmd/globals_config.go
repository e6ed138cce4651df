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

// config is what configures an invocation below its command line: the
// configuration file and the ASO_ variables of its environment, read once.
type config struct {
	src  configSource
	file map[string]any // the file's settings
	env  map[string]any // the settings the environment sets, even to ""
	// v holds file and environment, with no flag bound.
	v *viper.Viper
}

// Load fills every flag of cmd that was not given on the command line from
// the environment (ASO_FLAG_NAME, even when empty) or the configuration
// file, in that order (viper), checks every value that one of the three
// gave (a default is not checked), then sets up logging.
func (g *Globals) Load(cmd *cobra.Command) error {
	g.command = cmd.Name()
	c, err := g.config()
	if err != nil {
		return err
	}
	g.sources = map[string]string{}
	var errs []string
	v := c.viper(cmd.Flags())
	cmd.Flags().VisitAll(func(fl *pflag.Flag) {
		if fl.Name == "help" || fl.Name == "version" {
			return
		}
		from, _, err := c.resolve(v, cmd.Name(), fl)
		g.sources[fl.Name] = from
		if err != nil {
			errs = append(errs, err.Error())
		}
	})
	if len(errs) > 0 {
		sort.Strings(errs)
		return usagef("%s", strings.Join(errs, "; "))
	}
	return g.setupLogging()
}

// viper returns a viper instance of the settings with flags bound, so that
// viper's own precedence decides each value: a flag given on the command
// line, then the environment, then the file, then the default. Viper reads
// its environment layer from the process alone, and tests run many
// invocations in one process, each with an environment of its own; so the
// environment is merged over the file instead, which keeps the same order.
func (c *config) viper(flags *pflag.FlagSet) *viper.Viper {
	v := viper.New()
	for _, s := range extraSettings {
		v.SetDefault(s.Name, s.Default)
	}
	_ = v.MergeConfigMap(c.file)
	_ = v.MergeConfigMap(c.env)
	if flags != nil {
		_ = v.BindPFlags(flags)
	}
	return v
}

// source says where the value of setting came from (as `aso config` shows
// it), and how an error names that place.
func (c *config) source(setting string, onCommandLine bool) (from, where string) {
	if onCommandLine {
		return fromFlag, ""
	}
	if _, ok := c.env[setting]; ok {
		return fromEnv + " " + envName(setting), " (from " + envName(setting) + ")"
	}
	if _, ok := c.file[setting]; ok {
		return fromFile + " " + c.src.Path, " (from config file " + c.src.Path + ")"
	}
	return fromDefault, ""
}

// resolve sets fl, a flag of command bound in v, to its value in v when
// the environment or the file gave it, checks the value when any but the
// default gave it, and returns where it came from and the value as given. A setting of commandLineOnly is
// never taken from the environment or the file: one set there is an error.
func (c *config) resolve(v *viper.Viper, command string, fl *pflag.Flag) (from, given string, err error) {
	from, where := c.source(fl.Name, fl.Changed)
	given = fl.Value.String()
	if from == fromDefault {
		return from, given, nil
	}
	if from != fromFlag {
		given = configValue(v.Get(fl.Name))
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

// envName is the environment variable of a setting: ASO_ and the name in
// upper case with underscores.
func envName(setting string) string {
	return "ASO_" + strings.ToUpper(strings.ReplaceAll(setting, "-", "_"))
}

// lookupEnv reads an environment variable, telling an empty one from an
// unset one.
func (g *Globals) lookupEnv(k string) (string, bool) {
	if g.LookupEnv != nil {
		return g.LookupEnv(k)
	}
	return os.LookupEnv(k)
}

// getenv reads an environment variable, "" when unset.
func (g *Globals) getenv(k string) string {
	v, _ := g.lookupEnv(k)
	return v
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

// config returns the invocation's configuration file and environment, read
// once. A key of the file that no command knows is an error naming the key
// and the file.
func (g *Globals) config() (*config, error) {
	if g.conf != nil {
		return g.conf, nil
	}
	src, err := g.findConfig()
	if err != nil {
		return nil, err
	}
	c := &config{src: src, file: map[string]any{}, env: map[string]any{}}
	if src.Path != "" {
		v := viper.New()
		v.SetConfigFile(src.Path)
		if err := v.ReadInConfig(); err != nil {
			return nil, usagef("config file %s: %v", src.Path, err)
		}
		if err := checkKeys(v, src.Path, g.knownKeys); err != nil {
			return nil, err
		}
		c.file = v.AllSettings()
	}
	keys := g.knownKeys
	if keys == nil { // a Globals built without its command tree
		keys = settingKeys(&cobra.Command{})
	}
	for k := range keys {
		if val, ok := g.lookupEnv(envName(k)); ok {
			c.env[k] = val
		}
	}
	c.v = c.viper(nil)
	g.conf = c
	return c, nil
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
	if dir := g.getenv("XDG_CONFIG_HOME"); dir != "" {
		paths = append(paths, filepath.Join(dir, "aso", "aso.yaml"))
	} else if home := g.getenv("HOME"); home != "" {
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
