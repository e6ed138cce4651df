package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/asyncstageout/aso/serve"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/couch/couchtest"
)

// TestMetrics_InvalidUserNames: transfers of a user whose name is not a
// user name (written before the rule) are counted in
// aso_fleet_invalid_user_transfers, the reason a fleet skips that user,
// and are left out of the series by user.
func TestMetrics_InvalidUserNames(t *testing.T) {
	u := couchtest.DB(t)
	ctx := context.Background()
	if err := couch.Init(ctx, couch.Options{URL: u}); err != nil {
		t.Fatal(err)
	}
	docs := map[string][]byte{}
	for i, user := range []string{"../victim", "../victim", "alice"} {
		r := state.Request{User: user, Source: "T2_A", Destination: "T1_B", SourceLFN: fmt.Sprintf("/store/a/%d", i), DestinationLFN: "/store/b", Size: 1}
		docs[r.ID()], _ = json.Marshal(state.NewTransfer(r, time.Now().Add(-time.Hour), "old-producer"))
	}
	couchtest.PutUnchecked(t, u, docs)
	st, err := couch.Open(ctx, couch.Options{URL: u}, state.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	hs, _ := start(t, backend{name: "couchdb", st: st}, serve.Options{CacheTTL: time.Second})
	code, body := get(t, nil, hs+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	mf := parse(t, body)
	if got := mf["aso_fleet_invalid_user_transfers"].GetMetric(); len(got) != 1 || got[0].GetGauge().GetValue() != 2 {
		t.Errorf("aso_fleet_invalid_user_transfers %v, want 2", got)
	}
	for _, m := range mf["aso_fleet_transfers"].GetMetric() {
		if label(m, "user") != "alice" {
			t.Errorf("a series of user %q: want alice's only", label(m, "user"))
		}
	}
}
