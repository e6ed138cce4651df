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
