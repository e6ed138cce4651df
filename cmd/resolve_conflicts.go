package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
)

// ResolveConflictsOptions are the flags of `aso resolve-conflicts`.
type ResolveConflictsOptions struct {
	AllUsers bool
	JSON     bool
}

// AddFlags registers the flags of `aso resolve-conflicts`.
func (o *ResolveConflictsOptions) AddFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&o.AllUsers, "all-users", false, "every user's documents, not only --user's")
	cmd.Flags().BoolVar(&o.JSON, "json", false, `print {"resolved", "deleted", "left"} as one JSON object`)
}

func newResolveConflictsCommand(g *Globals) *cobra.Command {
	o := &ResolveConflictsOptions{}
	cmd := &cobra.Command{
		Use:   "resolve-conflicts",
		Short: "Delete the conflicting revisions a CouchDB cluster left, once the agents set them aside",
		Long: "resolve-conflicts ends the conflicts of the CouchDB database (--state) among the transfers\n" +
			"and the run lock of --user (--all-users: everyone's). An agent that reads a conflicted\n" +
			"transfer of its user keeps the winner the rules pick and sets the other revisions aside\n" +
			"(superseded_revs), but may not delete them; this command deletes them. A transfer whose\n" +
			"revisions no agent weighed yet is resolved first, by the same rules. A run lock's\n" +
			"revisions are deleted unless live. It needs the aso-operator role\n" +
			"(couchdb-credentials-operator). Exits 1 when documents are left conflicted; each is\n" +
			"named with the reason.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runResolveConflicts(cmd.Context(), o, g) },
	}
	o.AddFlags(cmd)
	return cmd
}

// conflictResolver is the ability of a CouchDB store to end conflicts.
type conflictResolver interface {
	ResolveConflicts(ctx context.Context, user string) (couch.ConflictReport, error)
}

func runResolveConflicts(ctx context.Context, o *ResolveConflictsOptions, g *Globals) error {
	user, err := g.usersOf(o.AllUsers)
	if err != nil {
		return err
	}
	return withStore(ctx, g, user, func(st state.Store) error {
		r, ok := st.(conflictResolver)
		if !ok {
			return usagef("resolve-conflicts works on CouchDB databases; the state store %T has no conflicts", st)
		}
		rep, err := r.ResolveConflicts(ctx, user)
		if err != nil {
			return err
		}
		if o.JSON {
			if err := writeJSON(g.Stdout, rep); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(g.Stdout, "resolved %d transfers, deleted %d conflicting revisions\n", rep.Resolved, rep.Deleted)
			for _, l := range rep.Left {
				fmt.Fprintf(g.Stdout, "left: %s\n", l)
			}
		}
		if len(rep.Left) > 0 {
			return fmt.Errorf("resolve-conflicts: %d documents left conflicted", len(rep.Left))
		}
		return nil
	})
}
