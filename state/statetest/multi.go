package statetest

import (
	"errors"

	"github.com/asyncstageout/aso/state"
)

var multiCases = []testCase{
	{"PrepareSubmits/PerJobResults", func(e *env) {
		s := e.store(Alice, "agent-a")
		m := s
		all := e.enqueue(s, Req(Alice, 1), Req(Alice, 2), Req(Alice, 3), Req(Alice, 4))
		ts := e.claim(s, 3)
		if len(ts) != 3 {
			e.t.Fatalf("claimed %d, want 3", len(ts))
		}
		var free state.Transfer // never claimed: not ours
		for _, id := range all {
			if tr := e.get(s, id); tr.State == state.StateNew {
				free = tr
			}
		}
		res, err := m.PrepareSubmits(ctx, []state.PrepareJob{
			{Transfers: ts[:2], SID: "sid-a", Endpoint: "https://fts-a.example.org:8446"},
			{Transfers: []state.Transfer{ts[2], free}, SID: "sid-b", Endpoint: "https://fts-b.example.org:8446"},
		})
		if err != nil {
			e.t.Fatalf("PrepareSubmits: %v", err)
		}
		if len(res) != 2 || len(res[0]) != 2 || len(res[1]) != 2 {
			e.t.Fatalf("PrepareSubmits: results of sizes %v, want 2 jobs of 2", sizes(res))
		}
		e.ok("PrepareSubmits job a", res[0], nil, 2)
		if res[1][0].Err != nil || res[1][0].ID != ts[2].ID {
			e.t.Fatalf("job b item 0: %+v, want %s written", res[1][0], ts[2].ID)
		}
		if res[1][1].ID != free.ID || !errors.Is(res[1][1].Err, state.ErrLeaseLost) {
			e.t.Fatalf("job b item 1: %+v, want ErrLeaseLost for %s", res[1][1], free.ID)
		}
		for i, want := range []string{"sid-a", "sid-a", "sid-b"} {
			if tr := e.get(s, ts[i].ID); tr.SubmitSID != want || tr.Rev != append(res[0], res[1]...)[i].Rev {
				e.t.Fatalf("%s: submit_sid %q rev %s, want %q and the result's revision", tr.ID, tr.SubmitSID, tr.Rev, want)
			}
		}
		// the endpoint is written with the sid: adoption after a crash asks the server the sid went to
		for i, want := range []string{"https://fts-a.example.org:8446", "https://fts-a.example.org:8446", "https://fts-b.example.org:8446"} {
			if tr := e.get(s, ts[i].ID); tr.FTSEndpoint != want {
				e.t.Fatalf("%s: fts_endpoint %q, want %q", tr.ID, tr.FTSEndpoint, want)
			}
		}
		if tr := e.wantState(s, free.ID, state.StateNew); tr.SubmitSID != "" || tr.Owner != "" {
			e.t.Fatalf("a transfer not held was written: %+v", tr)
		}

		for i := range ts {
			ts[i] = e.get(s, ts[i].ID) // as written: sid, endpoint and revision
		}
		cres, err := m.SetTransferIDs(ctx, []state.CommitJob{
			{Commits: commitsOf(ts[:2]), JobID: "job-a"},
			{Commits: commitsOf(ts[2:]), JobID: "job-b"},
		})
		if err != nil {
			e.t.Fatalf("SetTransferIDs: %v", err)
		}
		if len(cres) != 2 {
			e.t.Fatalf("SetTransferIDs: results of sizes %v, want 2 jobs", sizes(cres))
		}
		e.ok("SetTransferIDs job a", cres[0], nil, 2)
		e.ok("SetTransferIDs job b", cres[1], nil, 1)
		for i, want := range []string{"job-a", "job-a", "job-b"} {
			if tr := e.wantState(s, ts[i].ID, state.StateSubmitted); tr.FTSJob != want || tr.FTSEndpoint == "" {
				e.t.Fatalf("%s: fts_job %q endpoint %q, want %q and the endpoint kept", tr.ID, tr.FTSJob, tr.FTSEndpoint, want)
			}
		}
	}},
}

func sizes(res [][]state.Result) []int {
	out := make([]int, len(res))
	for i, r := range res {
		out[i] = len(r)
	}
	return out
}
