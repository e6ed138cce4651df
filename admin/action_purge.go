package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/asyncstageout/aso/state"
)

// Purge is `aso purge`: the ended transfers po selects are removed in
// bulk, appended first to the archive file at path if one is given, and
// one line (or, with JSON, one object) says how many. Its targets (their
// Store to be set) are what it would remove, for the dry run and the
// question.
func Purge(po state.PurgeOptions, path string) (*Action, *Targets) {
	before := po.Before.UTC()
	a := &Action{Verb: "purge", Effect: "removed: ended and last updated before " + before.Format(time.RFC3339), labels: labels{done: "purged", past: "purged"}}
	if path != "" {
		a.Effect += ", archived first to " + path
	}
	a.would = func(t *state.Transfer) (Outcome, bool) {
		return Outcome{Outcome: "would_purge", LastUpdate: &t.LastUpdate}, true
	}
	a.whole = func(ctx context.Context, st state.Store, update func(int, string), end func()) error {
		if path != "" {
			arch, err := openArchive(path)
			if err != nil {
				return err
			}
			defer arch.f.Close()
			po.Archive = arch
		}
		po.Progress = func(n int) { update(n, "removed") }
		n, err := st.Purge(ctx, po)
		end()
		a.Tally.Done = n
		if a.JSON {
			enc := json.NewEncoder(a.Out)
			enc.SetEscapeHTML(false)
			if werr := enc.Encode(purged{User: po.User, Purged: n, Before: before, Archive: path}); werr != nil {
				return werr
			}
		} else {
			who := "user " + po.User
			if po.User == "" {
				who = "every user"
			}
			fmt.Fprintf(a.Out, "purged %d terminal transfers of %s last updated before %s\n", n, who, before.Format(time.RFC3339))
			if path != "" && n > 0 {
				fmt.Fprintf(a.Out, "archived to %s\n", path)
			}
		}
		if err != nil {
			return fmt.Errorf("purge: %w", err)
		}
		return nil
	}
	t := &Targets{User: po.User, Selecting: true, Keep: po.Purgeable,
		Filter: state.Filter{User: po.User, States: []state.State{state.StateDone, state.StateFailed, state.StateKilled}}}
	return a, t
}

// purged is what aso purge --json prints: user is "" for every user.
type purged struct {
	User    string    `json:"user"`
	Purged  int       `json:"purged"`
	Before  time.Time `json:"before"`
	Archive string    `json:"archive,omitempty"`
}
