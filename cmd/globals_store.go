package cmd

import (
	"context"
	"os"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
)

// OpenStore opens the state store named by --state. Errors and logs show the
// URL with any password replaced by "xxxxx".
func (g *Globals) OpenStore(ctx context.Context, cfg state.Config) (state.Store, error) {
	u := g.stateURL()
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

// stateURL is --state, else the default file store:
// $XDG_STATE_HOME/aso/state.aso (~/.local/state/aso/state.aso).
func (g *Globals) stateURL() string {
	if g.StateURL != "" {
		return g.StateURL
	}
	dir := g.getenv("XDG_STATE_HOME")
	if dir == "" {
		home := g.getenv("HOME")
		if home == "" {
			home = os.TempDir()
		}
		dir = home + "/.local/state"
	}
	return "file:" + dir + "/aso/state.aso"
}
