package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
)

// refsStore answers DestinationRefs from refs (or with err); the rest of
// the contract is not called.
type refsStore struct {
	Store
	refs  map[state.Destination][]state.DestRef
	err   error
	calls int
}

func (s *refsStore) DestinationRefs(_ context.Context, dests []state.Destination) (map[state.Destination][]state.DestRef, error) {
	s.calls++
	if s.err != nil {
		return nil, s.err
	}
	out := map[state.Destination][]state.DestRef{}
	for _, d := range dests {
		if r, ok := s.refs[d]; ok {
			out[d] = r
		}
	}
	return out, nil
}

// TestDeletionRule: a copy is deleted only when the transfer recorded its
// ownership, an attempt of it began writing there (this one, or an earlier
// one whose copy remained), and no other transfer owns the destination
// now; every other case is left in place with its reason. All candidates
// of a batch are judged with one read of the owners.
func TestDeletionRule(t *testing.T) {
	owned := state.At(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	const pfn = "davs://se.example.org/store/user/alice/f.root"
	mk := func(id, lfn string, owns bool, written string) *state.Transfer {
		tr := &state.Transfer{ID: id, User: "alice", State: state.StateSubmitted, Destination: "T1_XX_Home", DestinationLFN: lfn,
			DestPFN: pfn, DestWritten: written}
		if owns {
			tr.DestOwnedSince = owned
		}
		return tr
	}
	ref := func(id string, st state.State, owns bool) state.DestRef {
		return state.DestRef{ID: id, User: "bob", State: st, Owned: owns}
	}
	for _, tc := range []struct {
		name string
		c    candidate
		refs []state.DestRef
		err  error
		want string // "" deleted, else a part of why it is left
	}{
		{"ours", candidate{mk("t", "/a", true, ""), true}, []state.DestRef{ref("t", state.StateSubmitted, true)}, nil, ""},
		{"an earlier attempt's copy", candidate{mk("t", "/a", true, pfn), false}, nil, nil, ""},
		{"an earlier attempt's copy at another PFN", candidate{mk("t", "/a", true, "davs://old.example.org/f"), false}, nil, nil,
			"no attempt of this transfer began writing there"},
		{"no ownership recorded", candidate{mk("t", "/a", false, ""), true}, nil, nil, "recorded no ownership"},
		{"no attempt wrote", candidate{mk("t", "/a", true, ""), false}, nil, nil, "no attempt of this transfer began writing there"},
		{"a done owner", candidate{mk("t", "/a", true, ""), true}, []state.DestRef{ref("d", state.StateDone, false)}, nil,
			"transfer d (user bob, done) owns the destination"},
		{"an active owner", candidate{mk("t", "/a", true, ""), true}, []state.DestRef{ref("s", state.StateSubmitted, true)}, nil,
			"transfer s (user bob, submitted) owns the destination"},
		{"a queued owner", candidate{mk("t", "/a", true, ""), true}, []state.DestRef{ref("n", state.StateNew, true)}, nil, "transfer n"},
		{"a queued request, never submitted", candidate{mk("t", "/a", true, ""), true}, []state.DestRef{ref("n", state.StateNew, false)}, nil, ""},
		{"a failed one", candidate{mk("t", "/a", true, ""), true}, []state.DestRef{ref("f", state.StateFailed, true)}, nil, ""},
		{"a killed one", candidate{mk("t", "/a", true, ""), true}, []state.DestRef{ref("k", state.StateKilled, true)}, nil, ""},
		{"owners unreadable", candidate{mk("t", "/a", true, ""), true}, nil, errors.New("view missing"),
			"who owns the destination could not be read (view missing)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &refsStore{refs: map[state.Destination][]state.DestRef{tc.c.t.Dest(): tc.refs}, err: tc.err}
			why := deletionRule{store: s}.judge(context.Background(), []candidate{tc.c})
			switch {
			case tc.want == "" && why[0] != "":
				t.Errorf("left in place (%s), want deleted", why[0])
			case tc.want != "" && (!strings.HasPrefix(why[0], "left in place: ") || !strings.Contains(why[0], tc.want)):
				t.Errorf("why %q, want left in place: ...%s...", why[0], tc.want)
			}
		})
	}
	t.Run("one read a batch", func(t *testing.T) {
		s := &refsStore{refs: map[state.Destination][]state.DestRef{{Site: "T1_XX_Home", LFN: "/b"}: {ref("d", state.StateDone, false)}}}
		why := deletionRule{store: s}.judge(context.Background(), []candidate{
			{mk("1", "/a", true, ""), true}, {mk("2", "/b", true, ""), true}, {mk("3", "/c", false, ""), true}, {mk("4", "/d", true, ""), true},
		})
		if s.calls != 1 || why[0] != "" || why[1] == "" || why[2] == "" || why[3] != "" {
			t.Errorf("%d reads, why %q; want 1 read, 1 and 4 deleted", s.calls, why)
		}
	})
}
