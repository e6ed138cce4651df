package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/asyncstageout/aso/internal/statusview"
	"github.com/asyncstageout/aso/state"
)

// SelectOptions are the filters `aso list`, `aso kill` and `aso retry`
// share: which transfers a command works on.
type SelectOptions struct {
	States   []string
	Link     string
	LFN      string
	FTSJob   string
	Class    string
	Since    string
	Verified string
	AllUsers bool
}

// AddFlags registers the filter flags.
func (o *SelectOptions) AddFlags(f *pflag.FlagSet) {
	f.StringSliceVar(&o.States, "in-state", nil, "only transfers in these states (comma-separated: new, acquired, submitted, done, failed, killed)")
	f.StringVar(&o.Link, "link", "", "only transfers on this link, SRC->DST (site names)")
	f.StringVar(&o.LFN, "lfn", "", "only transfers whose source or destination LFN starts with this, or matches it as a glob (* ? [...], * does not cross /)")
	f.StringVar(&o.FTSJob, "fts-job", "", "only transfers last submitted in this FTS job")
	f.StringVar(&o.Class, "error-class", "", "only transfers whose last failure has this error class (source_missing, no_space, ...: see Error classes in docs/operators.md)")
	f.StringVar(&o.Since, "since", "", "only transfers updated since: a duration back from now (2h, 30m) or an RFC 3339 time")
	f.StringVar(&o.Verified, "verified", "", "only transfers whose last verification (aso verify) found this: present, missing, differs or unreadable")
	f.BoolVar(&o.AllUsers, "all-users", false, "transfers of every user, not only --user's (the login name by default)")
}

// any reports whether a filter flag (beyond the user) was given.
func (o *SelectOptions) any() bool { return o.selection().Any() }

func (o *SelectOptions) selection() *statusview.Selection {
	return &statusview.Selection{States: o.States, Link: o.Link, LFN: o.LFN, FTSJob: o.FTSJob, Class: o.Class, Since: o.Since, Verified: o.Verified}
}

// filter checks the flags and returns the state.Filter they select, for
// the user selectUser returns.
func (o *SelectOptions) filter(g *Globals, now time.Time) (state.Filter, error) {
	user, err := o.user(g)
	if err != nil {
		return state.Filter{}, err
	}
	f, err := o.selection().Filter(user, now)
	if err != nil {
		return f, usagef("--%v", err)
	}
	return f, nil
}

// user returns the user whose transfers are selected: --user, else the
// login name; "" with --all-users.
func (o *SelectOptions) user(g *Globals) (string, error) {
	return g.usersOf(o.AllUsers)
}

// listPage is how many transfers one List call of a command returns: the
// commands hold one page at a time, whatever the number of transfers.
const listPage = 1000

// eachPage calls fn on every page of the transfers f selects, in the order
// of List, one store call per page, stopping after limit transfers (0: all).
func eachPage(ctx context.Context, st state.Store, f state.Filter, limit int, fn func([]state.Transfer) error) error {
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

// minIDPrefix is the shortest transfer ID prefix a command accepts.
const minIDPrefix = 8

// resolveIDs turns the IDs of the command line into full transfer IDs of
// user (every user if ""): a full ID is kept as it is; a shorter one of at
// least minIDPrefix hexadecimal digits is looked up (one store call each:
// these are typed by hand). An unknown prefix is kept, for the command to
// report as not found; an ambiguous one is a usage error listing matches.
func resolveIDs(ctx context.Context, st state.Store, user string, args []string) ([]string, error) {
	out := make([]string, 0, len(args))
	for _, a := range args {
		id := strings.ToLower(a)
		switch {
		case state.ValidID(id):
			out = append(out, id)
			continue
		case len(id) < minIDPrefix || len(id) > 64 || strings.Trim(id, "0123456789abcdef") != "":
			return nil, usagef("transfer ID %q: want at least %d of its 64 hexadecimal digits", a, minIDPrefix)
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

// loginName names the person running the command, for the history of the
// transfers it changes: $USER, $LOGNAME, else the account of the process.
func loginName(g *Globals) string {
	for _, k := range []string{"USER", "LOGNAME"} {
		if u := g.getenv(k); u != "" {
			return u
		}
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return fmt.Sprintf("uid%d", os.Getuid())
}

// jsonLines writes one JSON object per line.
type jsonLines struct{ enc *json.Encoder }

func newJSONLines(w io.Writer) jsonLines {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return jsonLines{enc: enc}
}

func (j jsonLines) write(v any) error { return j.enc.Encode(v) }
