package cmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/asyncstageout/aso/admin"
	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/internal/statusview"
	"github.com/asyncstageout/aso/state"
)

// showTransfer prints one transfer: `aso status ID`.
func showTransfer(ctx context.Context, g *Globals, st state.Store, o *StatusOptions) error {
	user := g.User
	if o.AllUsers {
		user = ""
	}
	ids, err := admin.ResolveIDs(ctx, st, user, []string{o.ID})
	if err != nil {
		return err
	}
	o.ID = ids[0]
	t, err := st.Get(ctx, o.ID)
	if err == nil && user != "" && t.User != user {
		return fmt.Errorf("transfer %s: %s", o.ID, admin.OwnerMismatch(t.User, user))
	}
	if errors.Is(err, state.ErrNotFound) {
		return fmt.Errorf("transfer %s: not found", o.ID)
	}
	if err != nil {
		return fmt.Errorf("status %s: %w", o.ID, err)
	}
	deps, err := statusview.Dependencies(ctx, st, &t)
	if err != nil {
		return err
	}
	if o.JSON {
		return writeJSON(g.Stdout, statusview.NewTransfer(&t, deps))
	}
	printTransfer(g.Stdout, &t)
	printDeps(g.Stdout, deps)
	return nil
}

// printTransfer prints every field of t, its progress and its history.
func printTransfer(w io.Writer, t *state.Transfer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	field := func(name, format string, args ...any) {
		fmt.Fprintf(tw, "%s:\t"+format+"\n", append([]any{name}, args...)...)
	}
	field("ID", "%s", t.ID)
	field("State", "%s", t.State)
	field("User", "%s", t.User)
	if t.Group != "" || t.Role != "" {
		field("Group/role", "%s / %s", cmp.Or(t.Group, "-"), cmp.Or(t.Role, "-"))
	}
	field("Link", "%s", t.Link())
	field("Source LFN", "%s", t.SourceLFN)
	field("Destination LFN", "%s", t.DestinationLFN)
	field("Size", "%d bytes", t.Size)
	field("Checksums", "%s", checksums(t.Checksums))
	field("Priority", "%d", t.Priority)
	if t.Activity != 0 {
		field("Activity", "%d (scitag %d)", t.Activity, agent.Scitag(t.Activity))
	}
	if len(t.DependsOn) > 0 {
		field("Depends on", "%s", strings.Join(t.DependsOn, ", "))
	}
	field("Attempts", "%s", submissionsText(t))
	field("Failed attempts", "%d", t.Attempts)
	if !t.RetryAfter.IsZero() {
		field("Next retry", "not before %s", t.RetryAfter)
	}
	if t.Reason != "" {
		field("Reason", "%s", t.Reason)
	}
	if t.ErrorClass != "" {
		field("Error class", "%s", t.ErrorClass)
	}
	if t.SupersededBy != "" {
		field("Superseded by", "transfer %s, the owner of the destination after it", t.SupersededBy)
	}
	if t.KillRequested {
		field("Kill requested", "yes (the agent cancels it in FTS)")
	}
	switch {
	case t.Owner != "" && !t.LeaseExpires.IsZero():
		field("Owner", "%s, lease expires %s", t.Owner, t.LeaseExpires)
	case t.Owner != "":
		field("Owner", "%s", t.Owner)
	}
	if t.SubmitSID != "" {
		field("Submit SID", "%s", t.SubmitSID)
	}
	if t.FTSEndpoint != "" {
		field("FTS endpoint", "%s", t.FTSEndpoint)
	}
	if t.FTSJob != "" {
		field("FTS job", "%s (file %d)", t.FTSJob, t.FTSFileID)
		field("Source PFN", "%s", t.SourcePFN)
		field("Destination PFN", "%s", t.DestPFN)
	}
	if p := t.Progress; p != nil {
		field("Progress", "%s, %d bytes, %.2f MiB/s, %d FTS retries, updated %s", p.FTSState, p.Bytes, p.Throughput, p.Retries, p.Updated)
		if p.Reason != "" {
			field("FTS reason", "%s", p.Reason)
		}
	}
	field("Created", "%s", t.Created)
	field("Last update", "%s", t.LastUpdate)
	tw.Flush()

	fmt.Fprintf(w, "\nHistory: %d\n", len(t.History))
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AT\tFROM\tTO\tBY\tREASON")
	for _, h := range t.History {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", h.At, cmp.Or(string(h.From), "-"), h.To, h.By, h.Reason)
	}
	tw.Flush()
}

func checksums(m map[string]string) string {
	if len(m) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(m))
	for k, v := range m {
		parts = append(parts, k+" "+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
