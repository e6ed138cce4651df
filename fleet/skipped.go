package fleet

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/asyncstageout/aso/state"
)

// skipped keeps the users with due work whose name is not a user name
// (state.CheckUser), and why: transfers another producer wrote, or written
// before the rule, whose agent would refuse its --user and fail the round
// for everyone. No agent runs for them; the fleet says so once a user and
// names them in its last line; aso status --all-users lists their
// documents as invalid, and aso serve counts them in
// aso_fleet_invalid_user_transfers.
type skipped struct {
	why map[string]string
	log *logrus.Entry
}

// named returns due without the users whose name is not a user name,
// keeping those.
func (s *skipped) named(due []state.UserDue) []state.UserDue {
	out := make([]state.UserDue, 0, len(due))
	for _, u := range due {
		err := state.CheckUser(u.User)
		if err == nil {
			out = append(out, u)
			continue
		}
		if _, seen := s.why[u.User]; !seen {
			s.why[u.User] = err.Error()
			s.log.WithField("reason", err.Error()).Warn(fmt.Sprintf("user %q skipped: no agent runs for it (%v); its transfers are listed as invalid documents by aso status --all-users", u.User, err))
		}
	}
	return out
}

// String names the users skipped and why, for the fleet's last line (""
// for none), each name quoted: it comes from a document.
func (s *skipped) String() string {
	var parts []string
	for u, why := range s.why {
		parts = append(parts, strconv.Quote(u)+" ("+why+")")
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}
