package cmd

import (
	"os"

	"github.com/sirupsen/logrus"
	"golang.org/x/term"
)

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
