package cmd

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// Load fills every flag of cmd that was not given on the command line from
// the environment (ASO_FLAG_NAME) or the configuration file, in that order,
// then sets up logging.
func (g *Globals) Load(cmd *cobra.Command) error {
	if g.Getenv == nil {
		g.Getenv = os.Getenv
	}
	v, err := g.configFile()
	if err != nil {
		return err
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

// configFile returns the configuration file's settings, read once per
// process into the one viper instance every command and backend shares;
// with no file named, the instance is empty.
func (g *Globals) configFile() (*viper.Viper, error) {
	if g.config != nil {
		return g.config, nil
	}
	getenv := g.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	v := viper.New()
	cfg := g.ConfigFile
	if cfg == "" {
		cfg = getenv("ASO_CONFIG")
	}
	if cfg != "" {
		v.SetConfigFile(cfg)
		if err := v.ReadInConfig(); err != nil {
			return nil, usagef("config file %s: %v", cfg, err)
		}
	}
	g.config = v
	return v, nil
}
