package state_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/state"
)

// TestCheckUser: a user name is a CMS user name (lowercase letters,
// digits, _ and -, starting with a letter or a digit); a name that could
// escape a file name, a document ID or a URL path, or be read as a flag,
// is refused with a *ValidationError naming the field and the rule, and a
// request of such a user does not validate.
func TestCheckUser(t *testing.T) {
	for _, ok := range []string{"alice", "a", "0xdeadbeef", "cms_user", "cms-user", "jdoe2", strings.Repeat("a", 128)} {
		if err := state.CheckUser(ok); err != nil {
			t.Errorf("CheckUser(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "../victim", "/etc/passwd", "a/b", "..", ".", "Alice", "alice.smith", "-rf", "_x",
		"a b", "alice\x1b[2J", "alice\n", "al:ice", "al@ice", "ålice", strings.Repeat("a", 129)} {
		err := state.CheckUser(bad)
		var ve *state.ValidationError
		if !errors.As(err, &ve) || ve.Field != "user" || ve.Value != bad || !errors.Is(err, state.ErrInvalid) {
			t.Errorf("CheckUser(%q) = %v, want a *ValidationError of field user", bad, err)
			continue
		}
		if bad != "" && !strings.Contains(ve.Reason, state.UserRule) {
			t.Errorf("CheckUser(%q): reason %q does not say the rule", bad, ve.Reason)
		}
		r := state.Request{User: bad, Source: "T2_A", Destination: "T1_B", SourceLFN: "/store/a", DestinationLFN: "/store/b"}
		if err := r.Validate(); err == nil {
			t.Errorf("a request of user %q validates", bad)
		}
	}
}
