package state_test

import (
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
)

func TestSpreadOrder(t *testing.T) {
	at := func(m int) state.Time { return state.At(time.Date(2026, 1, 1, 0, m, 0, 0, time.UTC)) }
	tr := func(id string, prio int, link string, m int) state.Transfer {
		src, dst, _ := strings.Cut(link, ">")
		return state.Transfer{ID: id, Priority: prio, Source: src, Destination: dst, LastUpdate: at(m)}
	}
	// claim order: priority descending, then oldest first
	cands := []state.Transfer{
		tr("hi-slow", 5, "S>H", 9),
		tr("s1", 0, "S>H", 1), tr("s2", 0, "S>H", 2), tr("s3", 0, "S>H", 3), tr("s4", 0, "S>H", 4),
		tr("f1", 0, "F>H", 5), tr("g1", 0, "G>H", 6), tr("f2", 0, "F>H", 7),
	}
	var got []string
	order := state.SpreadOrder(len(cands), func(i int) int { return cands[i].Priority }, func(i int) string { return cands[i].Link() })
	for _, i := range order {
		got = append(got, cands[i].ID)
	}
	want := "hi-slow s1 f1 g1 s2 f2 s3 s4"
	if strings.Join(got, " ") != want {
		t.Fatalf("SpreadOrder = %v, want %s", got, want)
	}
}

func TestLinkBudget(t *testing.T) {
	b := state.NewLinkBudget(state.ClaimRequest{MaxPerLink: 3, Held: map[string]int{"S->H": 2}})
	if !b.Take("S->H") || b.Take("S->H") {
		t.Fatal("a link with 2 active and a cap of 3 must take exactly one more")
	}
	b.Return("S->H")
	if !b.Take("S->H") {
		t.Fatal("a returned reservation must be available again")
	}
	for i := 0; i < 3; i++ {
		if !b.Take("F->H") {
			t.Fatalf("take %d of an idle link refused", i)
		}
	}
	if b.Take("F->H") {
		t.Fatal("a fourth take of a link capped at 3")
	}
	if !state.NewLinkBudget(state.ClaimRequest{}).Take("X->Y") {
		t.Fatal("no cap refuses")
	}
}
