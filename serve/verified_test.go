package serve_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/serve"
	"github.com/asyncstageout/aso/serve/servetest"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
)

// TestServe_LastVerification: what aso verify last found is counted by
// result on the overview, a user's page (with when) and /metrics, from the
// same snapshot.
func TestServe_LastVerification(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.aso")
	clk := &servetest.Clock{T: fillStart}
	open := func(user string) (state.Store, error) {
		return memfile.Open(path, state.Config{Agent: state.Agent{User: user, Owner: "ops@host:cli"}, Now: clk.Now})
	}
	ctx := context.Background()
	if err := servetest.Fill(ctx, open, 20, clk); err != nil {
		t.Fatal(err)
	}
	w, err := open("alice")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	done, err := w.List(ctx, state.Filter{User: "alice", States: []state.State{state.StateDone}})
	if err != nil || len(done) < 3 {
		t.Fatalf("%d done transfers of alice (%v), want at least 3", len(done), err)
	}
	res, err := w.RecordVerifications(ctx, []state.Verification{
		{ID: done[0].ID, Result: state.VerifyPresent}, {ID: done[1].ID, Result: state.VerifyMissing}, {ID: done[2].ID, Result: state.VerifyMissing},
	})
	if err != nil || res[0].Err != nil || res[1].Err != nil || res[2].Err != nil {
		t.Fatal(res, err)
	}
	st, err := memfile.OpenOptions(path, state.Config{}, memfile.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	u, _ := start(t, backend{name: "memfile", st: st}, serve.Options{CacheTTL: 10 * time.Second})

	_, body := get(t, nil, u+"/metrics")
	mf := parse(t, body)
	got := map[string]float64{}
	for _, m := range mf["aso_fleet_verified_transfers"].GetMetric() {
		got[label(m, "user")+" "+label(m, "result")] = m.GetGauge().GetValue()
	}
	if len(got) != 2 || got["alice present"] != 1 || got["alice missing"] != 2 {
		t.Errorf("aso_fleet_verified_transfers %v, want alice: 1 present, 2 missing", got)
	}
	last := mf["aso_fleet_last_verification_time_seconds"].GetMetric()
	if len(last) != 1 || label(last[0], "user") != "alice" || int64(last[0].GetGauge().GetValue()) != clk.Now().Unix() {
		t.Errorf("aso_fleet_last_verification_time_seconds %v, want alice's at %v", last, clk.Now())
	}

	_, body = get(t, nil, u+"/api/users/alice")
	var o struct {
		Verified *struct {
			Last     time.Time      `json:"last"`
			ByResult map[string]int `json:"by_result"`
		} `json:"verified"`
	}
	if err := json.Unmarshal([]byte(body), &o); err != nil || o.Verified == nil || o.Verified.ByResult["missing"] != 2 ||
		o.Verified.ByResult["present"] != 1 || !o.Verified.Last.Equal(clk.Now().UTC()) {
		t.Fatalf("/api/users/alice verified: %+v (%v)\n%s", o.Verified, err, body)
	}
	_, page := get(t, nil, u+"/users/alice")
	if !strings.Contains(page, `id="verified"`) || !strings.Contains(page, "2 missing") || !strings.Contains(page, "verified=missing") {
		t.Errorf("alice's page does not show the last verification:\n%s", page)
	}
	if _, page := get(t, nil, u+"/users/bob"); strings.Contains(page, `id="verified"`) {
		t.Errorf("bob's page shows a verification bob never had")
	}
}
