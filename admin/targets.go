package admin

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/asyncstageout/aso/state"
)

// Targets are the transfers an operator command acts on: the IDs given,
// or the selection of a filter.
type Targets struct {
	Store state.Store
	// User is who the given IDs must belong to ("": anyone); another
	// user's transfer is reported not found, naming its owner.
	User string
	// Filter selects the transfers when Selecting; Keep, if set, drops
	// those of each page it refuses.
	Filter    state.Filter
	Keep      func(*state.Transfer) bool
	Selecting bool
	// IDs are the full IDs given (see Resolve), when not Selecting.
	IDs []string
}

// Resolve turns the IDs of the command line into full transfer IDs of
// t.User (every user if ""): a full ID is kept as it is; a shorter one of
// at least MinIDPrefix hexadecimal digits is looked up (one store call
// each: these are typed by hand). An unknown prefix is kept, for the
// command to report as not found; an ambiguous one is a usage error
// listing matches.
func (t *Targets) Resolve(ctx context.Context, args []string) error {
	ids, err := ResolveIDs(ctx, t.Store, t.User, args)
	t.IDs = ids
	return err
}

// each calls fn on every page of the selection, or on every batch of the
// given IDs, with the stored transfers among them (one store call a page
// or batch). A given ID of another user than t.User is passed to other
// (nil: left out in silence) and not to fn.
func (t *Targets) each(ctx context.Context, other func(id, owner string), fn func(ids []string, ts []state.Transfer) error) error {
	if t.Selecting {
		return Pages(ctx, t.Store, t.Filter, 0, func(ts []state.Transfer) error {
			if t.Keep != nil {
				ts = slices.DeleteFunc(ts, func(x state.Transfer) bool { return !t.Keep(&x) })
			}
			ids := make([]string, len(ts))
			for i := range ts {
				ids[i] = ts[i].ID
			}
			return fn(ids, ts)
		})
	}
	for ids := t.IDs; len(ids) > 0; {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(len(ids), BatchSize)
		ts, err := t.Store.List(ctx, state.Filter{IDs: ids[:n]})
		if err != nil {
			return fmt.Errorf("read transfers: %w", err)
		}
		owner := make(map[string]string, len(ts))
		for _, x := range ts {
			owner[x.ID] = x.User
		}
		mine := ids[:0:0]
		for _, id := range ids[:n] {
			if u, ok := owner[id]; ok && t.User != "" && u != t.User {
				if other != nil {
					other(id, u)
				}
				continue
			}
			mine = append(mine, id)
		}
		ts = slices.DeleteFunc(ts, func(x state.Transfer) bool { return t.User != "" && x.User != t.User })
		if err := fn(mine, ts); err != nil {
			return err
		}
		ids = ids[n:]
	}
	return nil
}

// listPage is how many transfers one List call of a command returns: the
// commands hold one page at a time, whatever the number of transfers.
const listPage = 1000

// Pages calls fn on every page of the transfers f selects, in the order
// of List, one store call per page, stopping after limit transfers (0: all).
func Pages(ctx context.Context, st state.Store, f state.Filter, limit int, fn func([]state.Transfer) error) error {
	seen := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		f.Limit = listPage
		if limit > 0 {
			f.Limit = min(listPage, limit-seen)
		}
		ts, err := st.List(ctx, f)
		if err != nil {
			return fmt.Errorf("list transfers: %w", err)
		}
		if len(ts) > 0 {
			if err := fn(ts); err != nil {
				return err
			}
			k := state.KeyOf(&ts[len(ts)-1])
			f.After = &k
		}
		seen += len(ts)
		if len(ts) < f.Limit || (limit > 0 && seen >= limit) {
			return nil
		}
	}
}

// MinIDPrefix is the shortest transfer ID prefix a command accepts.
const MinIDPrefix = 8

// ResolveIDs is Targets.Resolve for any command that names transfers
// (status ID too).
func ResolveIDs(ctx context.Context, st state.Store, user string, args []string) ([]string, error) {
	out := make([]string, 0, len(args))
	for _, a := range args {
		id := strings.ToLower(a)
		switch {
		case state.ValidID(id):
			out = append(out, id)
			continue
		case len(id) < MinIDPrefix || len(id) > 64 || strings.Trim(id, "0123456789abcdef") != "":
			return nil, usagef("transfer ID %q: want at least %d of its 64 hexadecimal digits", a, MinIDPrefix)
		}
		ts, err := st.List(ctx, state.Filter{IDPrefix: id, User: user, Limit: 10})
		if err == nil && len(ts) == 0 && user != "" {
			// none of user's: another user's transfer is named in full, so
			// that it is reported as whose it is (and left alone)
			ts, err = st.List(ctx, state.Filter{IDPrefix: id, Limit: 2})
			if len(ts) > 1 {
				ts = nil
			}
		}
		if err != nil {
			return nil, fmt.Errorf("look up transfer ID prefix %s: %w", id, err)
		}
		switch len(ts) {
		case 0:
			out = append(out, id)
		case 1:
			out = append(out, ts[0].ID)
		default:
			lines := make([]string, len(ts))
			for i := range ts {
				lines[i] = fmt.Sprintf("  %s  %s  %s  %s", ts[i].ID, ts[i].User, ts[i].State, ts[i].DestinationLFN)
			}
			more := ""
			if len(ts) == 10 {
				more = "\n  ..."
			}
			return nil, usagef("transfer ID prefix %s is ambiguous; it matches:\n%s%s\ngive more digits", id, strings.Join(lines, "\n"), more)
		}
	}
	return out, nil
}

// OwnerMismatch says that a transfer named for user belongs to owner, and
// how to name it: what status, kill and retry say alike.
func OwnerMismatch(owner, user string) string {
	return fmt.Sprintf("it belongs to %s, not %s: give --user %s or --all-users", owner, user, owner)
}
