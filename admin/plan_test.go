package admin

import (
	"testing"

	"github.com/asyncstageout/aso/state"
)

func TestPlan_Question(t *testing.T) {
	p := NewPlan("kill")
	for i := 0; i < 2345; i++ {
		p.Add(&state.Transfer{User: []string{"alice", "bob", "carol"}[i%3], State: state.StateNew})
	}
	if got, want := p.Question(), "kill 2,345 transfers of 3 users? [y/N] "; got != want {
		t.Fatalf("question %q, want %q", got, want)
	}
	one := NewPlan("purge")
	one.Add(&state.Transfer{User: "alice", State: state.StateDone})
	if got, want := one.Question(), "purge 1 transfer of 1 user? [y/N] "; got != want {
		t.Fatalf("question %q, want %q", got, want)
	}
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1000: "-1,000"} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
