package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// A fleet run whose references failed after its drain was measured keeps
// its drain's figures in the table, with no reference columns, and says
// what failed; a run that failed before its drain shows only the error.
func TestFleetTable_KeepsTheDrainOfARunWhoseReferencesFailed(t *testing.T) {
	runs := []FleetRun{
		{Backend: "couch", Users: 1000, Transfers: 100000, Parents: 4, MaxAgents: 8, DrainSeconds: 726.6, TransfersPerSecond: 137.6,
			HTTPRequests: 18950, HTTPPerTransfer: 0.1895, DiscoveryRequests: 57, MaxSlotIdle: 13.88, Agents: 1000, LostRaces: 20,
			Error: "reference: the same, 4 in flight: context deadline exceeded"},
		{Backend: "memfile", Users: 10, Transfers: 100, Parents: 1, MaxAgents: 8, Error: "aso enqueue: exit status 2"},
	}
	var b bytes.Buffer
	printFleetTable(&b, runs, 5*time.Second)
	out := b.String()
	lines := strings.Split(out, "\n")
	var couch, mem string
	for _, l := range lines {
		switch f := strings.Fields(l); {
		case len(f) > 0 && f[0] == "couch":
			couch = l
		case len(f) > 0 && f[0] == "memfile":
			mem = l
		}
	}
	for _, want := range []string{"726.6", "0.19", "13.88", "1000", "2.0%"} {
		if !strings.Contains(couch, want) {
			t.Errorf("couch row %q lacks %s", couch, want)
		}
	}
	if strings.Contains(couch, "error") || strings.Count(couch, " - ") < 4 {
		t.Errorf("couch row %q: want its four reference columns as -, and no error in the row", couch)
	}
	if !strings.Contains(out, "couch: the drain was measured, then: reference: the same, 4 in flight: context deadline exceeded") {
		t.Errorf("the reference's failure is not said under the table:\n%s", out)
	}
	if !strings.Contains(mem, "error: aso enqueue: exit status 2") {
		t.Errorf("memfile row %q: want the error in place of the figures", mem)
	}
	if strings.Contains(out, "couch references:") {
		t.Errorf("references listed for a run whose references failed:\n%s", out)
	}
}

// The reference of one user's transfers a batch is listed with the others
// (the limit when it is the fastest), and a line under the table gives its
// time and its share of the drain time.
func TestFleetTable_SaysTheOneUserABatchReference(t *testing.T) {
	r := FleetRun{Backend: "couch", Users: 200, Transfers: 20000, Parents: 4, MaxAgents: 8, DrainSeconds: 40, TransfersPerSecond: 500,
		References: []RefResult{
			{Name: "80000 revisions in _bulk_docs batches of 2000, one after another", InFlight: 1, Seconds: 14.5},
			{Name: "the same, 2 in flight", InFlight: 2, Seconds: 14.2},
			{Name: "the same, one user's 100 transfers a batch, 32 in flight as the fleets' agents", InFlight: 32, Seconds: 15.2},
		}}
	r.setLimit()
	r.PerUserSeconds = 15.2
	var b bytes.Buffer
	printFleetTable(&b, []FleetRun{r}, 5*time.Second)
	out := b.String()
	if !strings.Contains(out, "couch: one user a batch (the best one writer per user does): 15.2 s, 38% of the drain time") {
		t.Errorf("no line of the one-user-a-batch reference's share:\n%s", out)
	}
	if !strings.Contains(out, "reference 14.20 s: the same, 2 in flight  <- the limit") ||
		!strings.Contains(out, "reference 15.20 s: the same, one user's 100 transfers a batch, 32 in flight as the fleets' agents\n") {
		t.Errorf("the references are not listed with the fastest marked as the limit:\n%s", out)
	}
	r.PerUserSeconds = 0 // memfile, or a run before it was measured
	b.Reset()
	printFleetTable(&b, []FleetRun{r}, 5*time.Second)
	if strings.Contains(b.String(), "one user a batch (") {
		t.Errorf("a run without the reference says its share:\n%s", b.String())
	}
}
