package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/memfile"
)

// InitOptions are the options of `aso init` (the store is --state, the
// connection settings come from the environment or the configuration).
type InitOptions struct {
	// Users also makes the users of the role credentials configured.
	Users bool
}

func newInitCommand(g *Globals) *cobra.Command {
	opts := &InitOptions{}
	cmd := &cobra.Command{
		Use:   "init [--users]",
		Short: "Create the state store: a file store, or the CouchDB database with its members, view, index and validation function",
		Long: `init creates the state store named by --state; no other command creates one, so
that a mistyped --state fails instead of serving a new empty store.

A file store (--state file:PATH, the default) is created with its directory;
one that exists is left as it is (and checked).

A CouchDB database is prepared for aso: init creates the database if it is
missing, makes aso's roles its members (aso-producer, aso-user, aso-agent,
aso-operator, aso-reader; its _security object), the view the agent queries
(claims and active jobs), the Mango index of listings, and the design document
whose validate_doc_update function rejects malformed transfers, illegal state
transitions and what a writer's role may not write. It removes the indexes of
earlier versions: run it again after an upgrade. It needs a server admin's
credentials (couchdb-credentials-admin).

--users also makes each role whose credentials file is configured
(couchdb-credentials-agent, -producer, -user, -operator, -reader) a user of the
CouchDB server with that role and the file's password, creating the _users
database if it is missing; a user that already has both is left as it is.

init is idempotent.

` + couchSettingsHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runInit(cmd.Context(), opts, g) },
	}
	cmd.Flags().BoolVar(&opts.Users, "users", false, "also create the CouchDB users of the role credentials configured (see below)")
	return cmd
}

func runInit(ctx context.Context, opts *InitOptions, g *Globals) error {
	u := g.stateURL()
	scheme, _, _ := strings.Cut(u, ":")
	switch scheme {
	case "file":
		if opts.Users {
			return usagef("--users makes CouchDB users: a file store has none")
		}
		return initFile(g, u)
	case "couchdb", "http", "https":
	default:
		return usagef("--state %q: init works on file:PATH, couchdb://, http:// or https:// stores", couch.Redact(u))
	}
	o, err := couchOptions(g, u)
	if err != nil {
		return err
	}
	var accounts []couch.Account
	if opts.Users {
		if accounts, err = roleAccounts(g); err != nil {
			return err
		}
	}
	if err := checkCouchRole(ctx, g, o); err != nil {
		return err
	}
	if err := couch.Init(ctx, o); err != nil {
		return err
	}
	if g.Log != nil {
		g.Log.WithField("state", couch.Redact(u)).Info("database initialised")
	}
	if _, err := fmt.Fprintf(g.Stdout, "initialised %s\n", couch.Redact(u)); err != nil {
		return err
	}
	if !opts.Users {
		return nil
	}
	done, err := couch.EnsureAccounts(ctx, o, accounts)
	for i, what := range done {
		fmt.Fprintf(g.Stdout, "user %s (%s): %s\n", accounts[i].Name, accounts[i].Role, what)
	}
	return err
}

// roleAccounts returns the accounts of the role credentials configured
// (every role but admin); it is a usage error when there is none.
func roleAccounts(g *Globals) ([]couch.Account, error) {
	var out []couch.Account
	for _, r := range credentialRoles {
		if r.role == couch.RoleAdmin {
			continue
		}
		file, err := couchSetting(g, credentialSetting(r.name))
		if err != nil {
			return nil, err
		}
		if file == "" {
			continue
		}
		name, pass, err := readCredentials(file)
		if err != nil {
			return nil, err
		}
		out = append(out, couch.Account{Name: name, Password: pass, Role: r.role})
	}
	if len(out) == 0 {
		return nil, usagef("--users: no role credentials are configured: set couchdb-credentials-agent, -producer, -user, -operator or -reader (see aso init --help)")
	}
	return out, nil
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
