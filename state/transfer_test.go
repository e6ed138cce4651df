package state_test

import (
	"encoding/json"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
)

func TestTransferID(t *testing.T) {
	id := state.TransferID("alice", "T2_A", "/a", "T1_B", "/b")
	if id != state.TransferID("alice", "T2_A", "/a", "T1_B", "/b") {
		t.Fatal("TransferID is not deterministic")
	}
	if !state.ValidID(id) {
		t.Fatalf("TransferID %q is not a ValidID", id)
	}
	// sha256 of "alice\0T2_A\0/a\0T1_B\0/b\0": changing the encoding would
	// orphan every stored document
	if want := "00927ed918bc21763026b9d7f3493075c8815b85e141008e664d7589b7823d3d"; id != want {
		t.Fatalf("TransferID = %s, want %s", id, want)
	}
	others := [][5]string{
		{"bob", "T2_A", "/a", "T1_B", "/b"},
		{"alice", "T2_X", "/a", "T1_B", "/b"},
		{"alice", "T2_A", "/x", "T1_B", "/b"},
		{"alice", "T2_A", "/a", "T1_X", "/b"},
		{"alice", "T2_A", "/a", "T1_B", "/x"},
		{"alic", "eT2_A", "/a", "T1_B", "/b"}, // field boundaries matter
	}
	for _, o := range others {
		if state.TransferID(o[0], o[1], o[2], o[3], o[4]) == id {
			t.Fatalf("TransferID%v collides with the original", o)
		}
	}
	r := state.Request{User: "alice", Source: "T2_A", SourceLFN: "/a", Destination: "T1_B", DestinationLFN: "/b", Size: 5, Priority: 9}
	if r.ID() != id {
		t.Fatal("Request.ID differs from TransferID of its fields")
	}
}

func TestValidID(t *testing.T) {
	for id, want := range map[string]bool{
		strings.Repeat("0a", 32): true,
		strings.Repeat("0A", 32): false,
		strings.Repeat("0a", 31): false,
		strings.Repeat("0g", 32): false,
		"lock:alice":             false,
		strings.Repeat("0a", 33): false,
		strings.Repeat("f9", 32): true,
		"":                       false,
	} {
		if got := state.ValidID(id); got != want {
			t.Errorf("ValidID(%q) = %v, want %v", id, got, want)
		}
	}
	if !state.IsLockID(state.LockID("alice")) || state.IsLockID(strings.Repeat("0a", 32)) {
		t.Fatal("LockID/IsLockID disagree")
	}
}

func TestStates(t *testing.T) {
	for _, s := range state.States {
		if !s.Valid() {
			t.Errorf("%s is not Valid", s)
		}
		if got, want := s.Terminal(), s == "done" || s == "failed" || s == "killed"; got != want {
			t.Errorf("%s.Terminal() = %v", s, got)
		}
	}
	if state.State("running").Valid() {
		t.Error("unknown state is Valid")
	}
}

func TestTransition_History(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tr := state.NewTransfer(validRequest(), now, "cli")
	for i := 1; i <= 3*state.MaxHistory; i++ {
		to := state.StateAcquired
		if i%2 == 0 {
			to = state.StateNew
		}
		tr.Transition(to, now.Add(time.Duration(i)*time.Second), "agent", "")
		if len(tr.History) > state.MaxHistory {
			t.Fatalf("history grew to %d", len(tr.History))
		}
	}
	h := tr.History
	if len(h) != state.MaxHistory || h[0].Reason != "enqueued" {
		t.Fatalf("history of %d entries starting %+v; want %d keeping the creation", len(h), h[0], state.MaxHistory)
	}
	for i := 2; i < len(h); i++ {
		if !h[i].At.After(h[i-1].At.Time) || h[i].From != h[i-1].To {
			t.Fatalf("entries %d and %d out of order: %+v %+v", i-1, i, h[i-1], h[i])
		}
	}
	if last := h[len(h)-1]; !last.At.Equal(now.Add(3*state.MaxHistory*time.Second)) || tr.LastUpdate != last.At {
		t.Fatalf("last entry %+v, last_update %s", last, tr.LastUpdate)
	}
	tr.Transition(state.StateFailed, now, "agent", "boom")
	if tr.Reason != "boom" || tr.State != state.StateFailed {
		t.Fatalf("reason %q state %s", tr.Reason, tr.State)
	}
}

func TestTransfer_JSONRoundTrip(t *testing.T) {
	tr := state.NewTransfer(validRequest(), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "cli")
	b, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"lease_expires", "retry_after", "owner", "progress"} {
		if strings.Contains(string(b), `"`+absent+`"`) {
			t.Errorf("a new transfer encodes %s: %s", absent, b)
		}
	}
	for _, present := range []string{`"_id":"` + tr.ID, `"type":"transfer"`, `"state":"new"`, `"created":"2026-01-01T00:00:00.000000Z"`} {
		if !strings.Contains(string(b), present) {
			t.Errorf("encoding lacks %s: %s", present, b)
		}
	}
	var back state.Transfer
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.ID != tr.ID || !back.Created.Equal(tr.Created.Time) || back.Checksum() != tr.Checksum() || len(back.History) != 1 {
		t.Fatalf("round trip %+v", back)
	}
}

func TestSortForClaim(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var ts []state.Transfer
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 50; i++ {
		tr := state.Transfer{ID: state.TransferID("u", "S", "/"+string(rune('a'+i%26)), "D", "/x"), Priority: rng.IntN(3)}
		tr.LastUpdate = state.At(base.Add(time.Duration(rng.IntN(5)) * time.Second))
		ts = append(ts, tr)
	}
	state.SortForClaim(ts)
	ok := sort.SliceIsSorted(ts, func(i, j int) bool {
		a, b := ts[i], ts[j]
		if a.Priority != b.Priority {
			return a.Priority > b.Priority
		}
		if !a.LastUpdate.Equal(b.LastUpdate.Time) {
			return a.LastUpdate.Before(b.LastUpdate.Time)
		}
		return a.ID < b.ID
	})
	if !ok || ts[0].Priority != 2 || ts[len(ts)-1].Priority != 0 {
		t.Fatalf("not in claim order: first %+v last %+v", ts[0], ts[len(ts)-1])
	}
}
