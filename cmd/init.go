package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/memfile"
)

// InitOptions are the options of `aso init` (it has none of its own: the
// store is --state, the connection settings come from the environment).
type InitOptions struct{}

func newInitCommand(g *Globals) *cobra.Command {
	opts := &InitOptions{}
	return &cobra.Command{
		Use:   "init",
		Short: "Create the state store: a file store, or the CouchDB database with its view, index and validation function",
		Long: `init creates the state store named by --state; no other command creates one, so
that a mistyped --state fails instead of serving a new empty store.

A file store (--state file:PATH, the default) is created with its directory;
one that exists is left as it is (and checked).

A CouchDB database is prepared for aso: init creates the database if it is
missing, the view the agent queries (claims and active jobs), the Mango index
of listings, and the design document whose validate_doc_update function
rejects malformed transfers and illegal state transitions. It removes the
indexes of earlier versions: run it again after an upgrade.

init is idempotent.

` + couchSettingsHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runInit(cmd.Context(), opts, g) },
	}
}

func runInit(ctx context.Context, _ *InitOptions, g *Globals) error {
	u := g.StateURL
	if u == "" {
		u = defaultStateURL(g.Getenv)
	}
	scheme, _, _ := strings.Cut(u, ":")
	switch scheme {
	case "file":
		return initFile(g, u)
	case "couchdb", "http", "https":
	default:
		return usagef("--state %q: init works on file:PATH, couchdb://, http:// or https:// stores", couch.Redact(u))
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

// initFile creates the file store at u, or says that it exists.
func initFile(g *Globals, u string) error {
	path, err := memfilePath(u)
	if err != nil {
		return err
	}
	created, err := memfile.Create(path)
	if err != nil {
		return fileStoreError(err, path)
	}
	if !created {
		_, err = fmt.Fprintf(g.Stdout, "%s is already a file store: nothing to do\n", path)
		return err
	}
	if g.Log != nil {
		g.Log.WithField("state", u).Info("file store created")
	}
	_, err = fmt.Fprintf(g.Stdout, "created the file store %s\n", path)
	return err
}
