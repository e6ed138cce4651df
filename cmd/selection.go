package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/user"
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
