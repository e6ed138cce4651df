package serve

import (
	"sort"
	"time"

	"github.com/asyncstageout/aso/internal/statusview"
	"github.com/asyncstageout/aso/state"
)

// Overview is what the overview, user and link pages show, and what
// their JSON API returns. Its counting fields have the names, shapes and
// numbers of `aso status --json` (of --all-users on the overview, of
// --user on a user's page); the fields that need a read of every document
// (stale, stuck_acquired, invalid, conflicted, oldest_waiting) are on the
// status page, /api/status.
type Overview struct {
	At             time.Time                      `json:"at"`
	User           string                         `json:"user,omitempty"`
	Link           string                         `json:"link,omitempty"`
	Total          int                            `json:"total"`
	ByState        map[state.State]int            `json:"by_state"`
	ByLink         map[string]map[state.State]int `json:"by_link"`
	ByUser         map[string]map[state.State]int `json:"by_user,omitempty"`
	ByErrorClass   map[string]int                 `json:"by_error_class"`
	FailureReasons []statusview.ReasonCount       `json:"failure_reasons"`
	Locks          []statusview.LockView          `json:"locks"`
	// Retrying counts the new transfers waiting to be retried after a
	// failure (they are in by_state's new).
	Retrying int `json:"retrying"`
	// Links are the rate and failure share of each link over the last
	// hour, Users each user's queue, Hours the transfers finished by hour
	// over the last week.
	Links []LinkRate            `json:"links"`
	Users []UserQueue           `json:"users"`
	Hours []state.FinishedCount `json:"finished_by_hour"`
	// Verified is what aso verify last found, for the users shown (not by
	// link: nil on a link's page, and when nothing was verified).
	Verified *VerifiedView `json:"verified,omitempty"`
}

// VerifiedView counts the transfers by what their last verification found,
// and says when the newest one was made.
type VerifiedView struct {
	Last     time.Time      `json:"last"`
	ByResult map[string]int `json:"by_result"` // by state.VerifyResult
}

// LinkRate is a link's queue, and what finished on it over the last hour.
type LinkRate struct {
	Link       string `json:"link"`
	Waiting    int    `json:"waiting"` // new and acquired
	Active     int    `json:"active"`  // submitted
	DoneHour   int    `json:"done_last_hour"`
	FailedHour int    `json:"failed_last_hour"`
	// FailureShare is failed / (done + failed) over the last hour; nil
	// when nothing finished.
	FailureShare *float64 `json:"failure_share_last_hour"`
}

// UserQueue is a user's queue and its agent's run lock.
type UserQueue struct {
	User    string `json:"user"`
	Waiting int    `json:"waiting"`
	Active  int    `json:"active"`
	Done    int    `json:"done"`
	Failed  int    `json:"failed"`
	// OldestWaiting is the last update of the user's oldest new transfer.
	OldestWaiting time.Time            `json:"oldest_waiting,omitzero"`
	Lock          *statusview.LockView `json:"lock,omitempty"`
}

// overviewOf builds the Overview of snap's groups of user and link (each
// "" for all).
func overviewOf(snap *snapshot, user, link string) *Overview {
	keep := func(g *state.CountGroup) bool {
		return (user == "" || g.User == user) && (link == "" || g.Link == link)
	}
	o := &Overview{
		At: snap.At, User: user, Link: link, ByState: statusview.AllStates(nil),
		ByLink: map[string]map[state.State]int{}, ByErrorClass: statusview.ErrorClasses(nil),
		FailureReasons: statusview.Reasons(snap.Counts.Groups, keep), Locks: []statusview.LockView{},
		Links: []LinkRate{}, Users: []UserQueue{}, Hours: []state.FinishedCount{},
	}
	if user == "" {
		o.ByUser = map[string]map[state.State]int{}
	}
	users := map[string]*UserQueue{}
	for i := range snap.Counts.Groups {
		g := &snap.Counts.Groups[i]
		if !keep(g) {
			continue
		}
		o.count(g)
		u := users[g.User]
		if u == nil {
			u = &UserQueue{User: g.User}
			users[g.User] = u
		}
		u.add(g)
	}
	for _, l := range snap.Locks {
		if u := users[l.User]; u != nil || (user != "" && l.User == user) {
			o.Locks = append(o.Locks, l)
			if u != nil {
				u.Lock = &o.Locks[len(o.Locks)-1]
			}
		}
	}
	for _, u := range users {
		o.Users = append(o.Users, *u)
	}
	sort.Slice(o.Users, func(i, j int) bool { return o.Users[i].User < o.Users[j].User })
	o.links(snap)
	o.Verified = verifiedOf(snap.Counts.Verified, user, link)
	for _, h := range snap.Counts.Hours {
		if link == "" || h.Link == link {
			o.Hours = append(o.Hours, h)
		}
	}
	return o
}

// verifiedOf sums the verification counts of user ("" every user's);
// nil on a link's page, or when none was verified.
func verifiedOf(counts []state.VerifiedCount, user, link string) *VerifiedView {
	if link != "" {
		return nil
	}
	var v *VerifiedView
	for _, c := range counts {
		if user != "" && c.User != user {
			continue
		}
		if v == nil {
			v = &VerifiedView{ByResult: map[string]int{}}
			for _, r := range state.VerifyResults {
				v.ByResult[string(r)] = 0
			}
		}
		v.ByResult[string(c.Result)] += c.Count
		if c.Last.After(v.Last) {
			v.Last = c.Last
		}
	}
	return v
}

// count adds group g to o's counts.
func (o *Overview) count(g *state.CountGroup) {
	o.Total += g.Count
	o.ByState[g.State] += g.Count
	if o.ByLink[g.Link] == nil {
		o.ByLink[g.Link] = statusview.AllStates(nil)
	}
	o.ByLink[g.Link][g.State] += g.Count
	if o.ByUser != nil {
		if o.ByUser[g.User] == nil {
			o.ByUser[g.User] = statusview.AllStates(nil)
		}
		o.ByUser[g.User][g.State] += g.Count
	}
	switch {
	case g.State == state.StateFailed:
		o.ByErrorClass[g.ErrorClass] += g.Count
	case g.State == state.StateNew && g.Reason != "":
		o.Retrying += g.Count
	}
}

func (u *UserQueue) add(g *state.CountGroup) {
	switch g.State {
	case state.StateNew, state.StateAcquired:
		u.Waiting += g.Count
		if g.State == state.StateNew && (u.OldestWaiting.IsZero() || g.Oldest.Before(u.OldestWaiting)) {
			u.OldestWaiting = g.Oldest
		}
	case state.StateSubmitted:
		u.Active += g.Count
	case state.StateDone:
		u.Done += g.Count
	case state.StateFailed:
		u.Failed += g.Count
	}
}

// links fills o.Links from its counts by link and snap's last hour.
func (o *Overview) links(snap *snapshot) {
	last := lastHour(snap.Counts.Minutes, snap.At)
	for link, m := range o.ByLink {
		r := LinkRate{Link: link, Waiting: m[state.StateNew] + m[state.StateAcquired], Active: m[state.StateSubmitted],
			DoneHour: last[linkState{link, state.StateDone}], FailedHour: last[linkState{link, state.StateFailed}]}
		if n := r.DoneHour + r.FailedHour; n > 0 {
			share := float64(r.FailedHour) / float64(n)
			r.FailureShare = &share
		}
		o.Links = append(o.Links, r)
	}
	sort.Slice(o.Links, func(i, j int) bool { return o.Links[i].Link < o.Links[j].Link })
}
