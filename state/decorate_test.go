package state_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
)

// Stand-ins for abilities the memfile store lacks, each returning what
// the test can recognise.
type confirmer struct{}

func (confirmer) Unsettled(context.Context) ([]state.Transfer, error) {
	return []state.Transfer{{ID: "unsettled"}}, nil
}

type pager struct{}

func (pager) ActiveJobs(context.Context, string) ([]state.JobRef, error) {
	return []state.JobRef{{ID: "job", Transfers: 1}}, nil
}

func (pager) ActiveTransfersOf(context.Context, string, []string) ([]state.Job, error) {
	return []state.Job{{ID: "job", Transfers: []state.Transfer{{ID: "a"}, {ID: "b"}}}}, nil
}

func openMemfile(t *testing.T, n int) *memfile.Store {
	t.Helper()
	mf, err := memfile.Open(filepath.Join(t.TempDir(), "state.aso"), state.Config{Agent: state.Agent{User: "u", Owner: "o"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mf.Close() })
	var reqs []state.Request
	for i := range n {
		reqs = append(reqs, state.Request{User: "u", Source: "T2_A", Destination: "T2_B",
			SourceLFN: "/store/user/u/" + string(rune('a'+i)), DestinationLFN: "/store/user/u/out/" + string(rune('a'+i))})
	}
	if _, err := mf.Enqueue(context.Background(), reqs); err != nil {
		t.Fatal(err)
	}
	return mf
}

func has[T any](s any) bool { _, ok := state.As[T](s); return ok }

// optional are the optional abilities of a store.
var optional = []struct {
	name string
	has  func(any) bool
}{
	{"MultiSubmitter", has[state.MultiSubmitter]}, {"ActivePager", has[state.ActivePager]},
	{"Confirmer", has[state.Confirmer]}, {"Recoverer", has[state.Recoverer]},
	{"RunRecorder", has[state.RunRecorder]}, {"LinkClaimer", has[state.LinkClaimer]}, {"QueueEnder", has[state.QueueEnder]},
	{"UserLister", has[state.UserLister]}, {"LockAdmin", has[state.LockAdmin]}, {"Purger", has[state.Purger]},
	{"Configured", has[state.Configured]},
}

// abilities reports which optional abilities As finds on s.
func abilities(s any) []string {
	var out []string
	for _, o := range optional {
		if o.has(s) {
			out = append(out, o.name)
		}
	}
	return out
}

// TestWrap_KeepsExactlyTheAbilities: a decorated store has, through As,
// exactly the optional abilities of the store it wraps, also under a
// second decorator; the decorator itself claims none of them.
func TestWrap_KeepsExactlyTheAbilities(t *testing.T) {
	mf := openMemfile(t, 0)
	cases := []struct {
		name  string
		store state.AgentStore
		want  []string
	}{
		{"none", struct{ state.AgentStore }{mf}, nil},
		{"multi", struct {
			state.AgentStore
			state.MultiSubmitter
		}{mf, mf}, []string{"MultiSubmitter"}},
		{"pager and confirmer", struct {
			state.AgentStore
			pager
			confirmer
		}{mf, pager{}, confirmer{}}, []string{"ActivePager", "Confirmer"}},
		{"recovery, run record, links", struct {
			state.AgentStore
			state.Recoverer
			state.RunRecorder
			state.LinkClaimer
		}{mf, mf, mf, mf}, []string{"Recoverer", "RunRecorder", "LinkClaimer"}},
		{"admin abilities", struct {
			state.AgentStore
			state.UserLister
			state.LockAdmin
			state.Purger
		}{mf, mf, mf, mf}, []string{"UserLister", "LockAdmin", "Purger"}},
		{"memfile", mf, abilities(mf)},
		{"memfile with a confirmer", struct {
			*memfile.Store
			confirmer
		}{mf, confirmer{}}, append(slices.Clone(abilities(mf)), "Confirmer")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			slices.Sort(tc.want)
			raw := abilities(tc.store)
			slices.Sort(raw)
			if !slices.Equal(raw, tc.want) {
				t.Fatalf("the test store has %v, want %v", raw, tc.want)
			}
			once := state.Wrap(tc.store, state.Hooks{})
			twice := state.Wrap(once, state.Hooks{})
			for name, s := range map[string]state.AgentStore{"wrapped": once, "wrapped twice": twice} {
				got := abilities(s)
				slices.Sort(got)
				if !slices.Equal(got, tc.want) {
					t.Errorf("%s: As finds %v, want %v", name, got, tc.want)
				}
				if _, ok := s.(state.MultiSubmitter); ok {
					t.Errorf("%s: the decorator itself claims MultiSubmitter", name)
				}
				if _, ok := s.(state.Confirmer); ok {
					t.Errorf("%s: the decorator itself claims Confirmer", name)
				}
			}
		})
	}
	if len(abilities(mf)) < 5 {
		t.Errorf("memfile has only %v: the table no longer covers a store with many abilities", abilities(mf))
	}
}

type event struct {
	when, op string
	items    int
	err      error
}

// recorder is hooks that record each call, and refuse the ops in refuse.
type recorder struct {
	events []event
	refuse map[string]error
}

type ctxKey struct{}

func (r *recorder) hooks() state.Hooks {
	return state.Hooks{
		Before: func(ctx context.Context, op string) (context.Context, error) {
			r.events = append(r.events, event{when: "before", op: op})
			if err := r.refuse[op]; err != nil {
				return nil, err
			}
			return context.WithValue(ctx, ctxKey{}, op), nil
		},
		After: func(ctx context.Context, op string, c state.Call) {
			if got, _ := ctx.Value(ctxKey{}).(string); got != op {
				panic("After did not get the context Before returned")
			}
			r.events = append(r.events, event{when: "after", op: op, items: c.Items, err: c.Err})
		},
	}
}

// TestWrap_HooksAroundEachCall: Before and After run around every call of
// the store and of its abilities, in order, After with the number of
// items and the call's error.
func TestWrap_HooksAroundEachCall(t *testing.T) {
	ctx := context.Background()
	mf := openMemfile(t, 3)
	var r recorder
	s := state.Wrap(struct {
		state.AgentStore
		state.MultiSubmitter
		pager
	}{mf, mf, pager{}}, r.hooks())
	ts, err := s.NewTransfers(ctx, 10)
	if err != nil || len(ts) != 3 {
		t.Fatalf("NewTransfers: %d, %v", len(ts), err)
	}
	m, _ := state.As[state.MultiSubmitter](s)
	if _, err := m.PrepareSubmits(ctx, []state.PrepareJob{{Transfers: ts[:1], SID: "a"}, {Transfers: ts[1:], SID: "b"}}); err != nil {
		t.Fatal(err)
	}
	p, _ := state.As[state.ActivePager](s)
	if _, err := p.ActiveTransfersOf(ctx, "u", []string{"job"}); err != nil {
		t.Fatal(err)
	}
	_, lockErr := s.RenewLock(ctx, state.Lock{User: "u", Holder: "nobody"}, time.Minute)
	if lockErr == nil {
		t.Fatal("renewing a lock never taken succeeded")
	}
	want := []event{
		{"before", "NewTransfers", 0, nil}, {"after", "NewTransfers", 3, nil},
		{"before", "PrepareSubmits", 0, nil}, {"after", "PrepareSubmits", 3, nil},
		{"before", "ActiveTransfersOf", 0, nil}, {"after", "ActiveTransfersOf", 2, nil},
		{"before", "RenewLock", 0, nil}, {"after", "RenewLock", 0, lockErr},
	}
	if !slices.Equal(r.events, want) {
		t.Errorf("hooks saw\n%v\nwant\n%v", r.events, want)
	}
}

// TestWrap_RefusalStopsTheCall: an error of Before is the call's, the
// store is not called (nothing is claimed), and After does not run; other
// calls pass.
func TestWrap_RefusalStopsTheCall(t *testing.T) {
	ctx := context.Background()
	mf := openMemfile(t, 2)
	fenced := errors.New("fenced")
	r := recorder{refuse: map[string]error{"NewTransfers": fenced, "NewTransfersByLink": fenced}}
	s := state.Wrap(mf, r.hooks())
	if ts, err := s.NewTransfers(ctx, 10); !errors.Is(err, fenced) || ts != nil {
		t.Fatalf("NewTransfers refused: %v, %v", ts, err)
	}
	lc, _ := state.As[state.LinkClaimer](s)
	if ts, err := lc.NewTransfersByLink(ctx, 10, state.ClaimOptions{}); !errors.Is(err, fenced) || ts != nil {
		t.Fatalf("NewTransfersByLink refused: %v, %v", ts, err)
	}
	qe, _ := state.As[state.QueueEnder](s)
	if ts, end, err := qe.NewTransfersEnd(ctx, 10); !errors.Is(err, fenced) || ts != nil || end {
		t.Fatalf("NewTransfersEnd refused: %v, %v, %v", ts, end, err)
	}
	left, err := s.List(ctx, state.Filter{States: []state.State{state.StateNew}})
	if err != nil || len(left) != 2 {
		t.Fatalf("after the refusals: %d new transfers (%v), want 2 unclaimed", len(left), err)
	}
	want := []event{
		{"before", "NewTransfers", 0, nil}, {"before", "NewTransfersByLink", 0, nil},
		{"before", "NewTransfers", 0, nil}, // NewTransfersEnd is a claim to the hooks
		{"before", "List", 0, nil}, {"after", "List", 2, nil},
	}
	if !slices.Equal(r.events, want) {
		t.Errorf("hooks saw\n%v\nwant\n%v", r.events, want)
	}
}
