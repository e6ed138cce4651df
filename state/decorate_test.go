package state_test

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
)

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

type event struct {
	when  string
	op    state.Op
	items int
	err   error
}

// recorder is hooks that record each call, and refuse the ops in refuse.
type recorder struct {
	events []event
	refuse map[state.Op]error
}

type ctxKey struct{}

func (r *recorder) hooks() state.Hooks {
	return state.Hooks{
		Before: func(ctx context.Context, op state.Op) (context.Context, error) {
			r.events = append(r.events, event{when: "before", op: op})
			if err := r.refuse[op]; err != nil {
				return nil, err
			}
			return context.WithValue(ctx, ctxKey{}, op), nil
		},
		After: func(ctx context.Context, op state.Op, c state.Call) {
			if got, _ := ctx.Value(ctxKey{}).(state.Op); got != op {
				panic("After did not get the context Before returned")
			}
			r.events = append(r.events, event{when: "after", op: op, items: c.Items, err: c.Err})
		},
	}
}

// TestWrap_HooksAroundEachCall: Before and After run around every call, in
// order, After with the number of items and the call's error.
func TestWrap_HooksAroundEachCall(t *testing.T) {
	ctx := context.Background()
	mf := openMemfile(t, 3)
	var r recorder
	s := state.Wrap(mf, r.hooks())
	c, err := s.NewTransfers(ctx, state.ClaimRequest{Limit: 10})
	if err != nil || len(c.Transfers) != 3 {
		t.Fatalf("NewTransfers: %d, %v", len(c.Transfers), err)
	}
	ts := c.Transfers
	if _, err := s.PrepareSubmits(ctx, []state.PrepareJob{{Transfers: ts[:1], SID: "a"}, {Transfers: ts[1:], SID: "b"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ActiveTransfersOf(ctx, "u", []string{"job"}); err != nil {
		t.Fatal(err)
	}
	_, lockErr := s.RenewLock(ctx, state.Lock{User: "u", Holder: "nobody"}, time.Minute)
	if lockErr == nil {
		t.Fatal("renewing a lock never taken succeeded")
	}
	want := []event{
		{"before", state.OpNewTransfers, 0, nil}, {"after", state.OpNewTransfers, 3, nil},
		{"before", state.OpPrepareSubmits, 0, nil}, {"after", state.OpPrepareSubmits, 3, nil},
		{"before", state.OpActiveTransfersOf, 0, nil}, {"after", state.OpActiveTransfersOf, 0, nil},
		{"before", state.OpRenewLock, 0, nil}, {"after", state.OpRenewLock, 0, lockErr},
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
	r := recorder{refuse: map[state.Op]error{state.OpNewTransfers: fenced}}
	s := state.Wrap(mf, r.hooks())
	if c, err := s.NewTransfers(ctx, state.ClaimRequest{Limit: 10}); !errors.Is(err, fenced) || c.Transfers != nil {
		t.Fatalf("NewTransfers refused: %v, %v", c, err)
	}
	if c, err := s.NewTransfers(ctx, state.ClaimRequest{Limit: 10, MaxPerLink: 1}); !errors.Is(err, fenced) || c.Transfers != nil {
		t.Fatalf("a capped NewTransfers refused: %v, %v", c, err)
	}
	left, err := s.List(ctx, state.Filter{States: []state.State{state.StateNew}})
	if err != nil || len(left) != 2 {
		t.Fatalf("after the refusals: %d new transfers (%v), want 2 unclaimed", len(left), err)
	}
	want := []event{
		{"before", state.OpNewTransfers, 0, nil}, {"before", state.OpNewTransfers, 0, nil},
		{"before", state.OpList, 0, nil}, {"after", state.OpList, 2, nil},
	}
	if !slices.Equal(r.events, want) {
		t.Errorf("hooks saw\n%v\nwant\n%v", r.events, want)
	}
}

// TestWrap_EveryMethodIsHooked: every method of AgentStore goes through
// the hooks as its own Op, so a call added to the contract cannot bypass
// the write fence or the metrics.
func TestWrap_EveryMethodIsHooked(t *testing.T) {
	mf := openMemfile(t, 1)
	var r recorder
	s := state.Wrap(mf, r.hooks())
	typ := reflect.TypeOf((*state.AgentStore)(nil)).Elem()
	v := reflect.ValueOf(s)
	seen := map[state.Op]bool{}
	for i := range typ.NumMethod() {
		m := typ.Method(i)
		fn := v.MethodByName(m.Name)
		args := make([]reflect.Value, fn.Type().NumIn())
		args[0] = reflect.ValueOf(context.Background())
		for k := 1; k < len(args); k++ {
			args[k] = reflect.Zero(fn.Type().In(k))
		}
		n := len(r.events)
		fn.Call(args)
		if len(r.events) == n || r.events[n].when != "before" {
			t.Errorf("%s: no hook ran", m.Name)
			continue
		}
		op := r.events[n].op
		if op.String() != snake(m.Name) && !(m.Name == "PrepareSubmits" || m.Name == "SetTransferIDs") {
			t.Errorf("%s ran as op %s", m.Name, op)
		}
		if seen[op] {
			t.Errorf("%s: op %s is also another method's", m.Name, op)
		}
		seen[op] = true
	}
	if len(seen) != len(state.Ops()) {
		t.Errorf("the methods ran as %d ops; there are %d", len(seen), len(state.Ops()))
	}
}

// TestOp_Writes: exactly the calls that write transfers on the agent's
// behalf pass the write fence; reads and the lock calls do not.
func TestOp_Writes(t *testing.T) {
	var writes []string
	for _, op := range state.Ops() {
		if op.Writes() {
			writes = append(writes, op.String())
		}
	}
	want := []string{"new_transfers", "prepare_submit", "set_transfer_id", "abort_transfers", "renew_leases",
		"set_transient_state", "set_terminal_state", "take_back"}
	if !slices.Equal(writes, want) {
		t.Fatalf("writing ops %v, want %v", writes, want)
	}
}

// snake is name in snake case: "SetTerminalState" -> "set_terminal_state".
func snake(name string) string {
	var out []rune
	for i, c := range name {
		if c >= 'A' && c <= 'Z' {
			if i > 0 {
				out = append(out, '_')
			}
			c += 'a' - 'A'
		}
		out = append(out, c)
	}
	return string(out)
}
