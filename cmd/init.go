package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/asyncstageout/aso/state/couch"
)

// InitOptions are the options of `aso init` (it has none of its own: the
// database is --state, the connection settings come from the environment).
type InitOptions struct{}

func newInitCommand(g *Globals) *cobra.Command {
	opts := &InitOptions{}
	return &cobra.Command{
		Use:   "init",
		Short: "Create the CouchDB database, its view, index and validation function",
		Long: `init prepares the CouchDB database named by --state for aso: it creates the
database if it is missing, the view the agent queries (claims and active jobs),
the Mango index of listings, and the design document whose validate_doc_update
function rejects malformed transfers and illegal state transitions. It is
idempotent, and removes the indexes of earlier versions: run it again after an
upgrade.
File stores (--state file:PATH) need no init.

` + couchSettingsHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runInit(cmd.Context(), opts, g) },
	}
}

func runInit(ctx context.Context, _ *InitOptions, g *Globals) error {
	u := g.StateURL
	if u == "" {
		return usagef("init needs --state couchdb://HOST:PORT/DB (or http(s)://HOST:PORT/DB)")
	}
	scheme, _, _ := strings.Cut(u, ":")
	switch scheme {
	case "file":
		_, err := fmt.Fprintf(g.Stdout, "%s is a file store: nothing to initialise\n", u)
		return err
	case "couchdb", "http", "https":
	default:
		return usagef("--state %q: init works on couchdb://, http:// or https:// databases", couch.Redact(u))
	}
	o, err := couchOptions(g, u)
	if err != nil {
		return err
	}
	if err := couch.Init(ctx, o); err != nil {
		return err
	}
	if g.Log != nil {
		g.Log.WithField("state", couch.Redact(u)).Info("database initialised")
	}
	_, err = fmt.Fprintf(g.Stdout, "initialised %s\n", couch.Redact(u))
	return err
}
