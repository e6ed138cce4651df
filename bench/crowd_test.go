package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/state"
)

// TestCrowd_Doc: the crowd is the same at every build, each document a
// valid transfer with its history, seven in ten done, two failed, one
// queued and not due, and the fleet round's users have nothing queued.
func TestCrowd_Doc(t *testing.T) {
	c := crowd{docs: 2000, users: 100}
	count := map[state.State]int{}
	for k := range c.docs {
		d, err := c.doc(k)
		if err != nil {
			t.Fatalf("document %d: %v", k, err)
		}
		if err := d.Validate(); err != nil {
			t.Fatalf("document %d is not a valid transfer: %v", k, err)
		}
		if len(d.History) < 4 {
			t.Fatalf("document %d: history %v, want its life", k, d.History)
		}
		again, _ := c.doc(k)
		a, _ := json.Marshal(d)
		b, _ := json.Marshal(again)
		if !bytes.Equal(a, b) {
			t.Fatalf("document %d differs from one build to the next:\n%s\n%s", k, a, b)
		}
		u := k % c.users
		if d.User != crowdUser(u) {
			t.Fatalf("document %d: user %q, want %q", k, d.User, crowdUser(u))
		}
		if d.State == state.StateNew && (u < fleetUsersWithWk || state.Claimable(&d, d.User, crowdBase.AddDate(50, 0, 0))) {
			t.Fatalf("document %d of user %d is queued and due (retry after %v)", k, u, d.RetryAfter)
		}
		count[d.State]++
	}
	if count[state.StateDone] != 1400 || count[state.StateFailed]+count[state.StateNew] != 600 || count[state.StateNew] == 0 {
		t.Errorf("states %v, want 1400 done, 600 failed or queued, some queued", count)
	}
}

// TestPrintCrowd: each figure is printed beside its target, met or not.
func TestPrintCrowd(t *testing.T) {
	c := &CrowdSeries{Server: "test", Docs: 1000, Users: 100, N: 100,
		Empty:   CrowdSide{DrainSeconds: 10, Drains: []float64{10}, IdleSeconds: 1, StatusSeconds: 1, IdleRequests: 5},
		Crowded: CrowdSide{DrainSeconds: 10.5, Drains: []float64{10.5}, IdleSeconds: 1.5, StatusSeconds: 1, IdleRequests: 7},
		Fleet:   &FleetRound{UsersWithWork: 10, PerUser: 100, Discovery: 2, Agents: 10}}
	var b strings.Builder
	printCrowd(&b, c)
	out := b.String()
	for _, want := range []string{
		"drain s (median)  10.00  10.50  1.05  <= 1.1: met",
		"idle start s (best)   1.00   1.50  1.50  <= 1.1: MISSED",
		"idle start HTTP requests      5      7     -    <= 6: MISSED",
		"10 starts: met",
	} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("printCrowd: no %q in\n%s", want, out)
		}
	}
}
