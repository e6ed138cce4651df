package serve_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/asyncstageout/aso/serve"
	"github.com/asyncstageout/aso/state"
)

// parse reads a scrape's metric families.
func parse(t *testing.T, body string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("scrape does not parse: %v\n%s", err, body)
	}
	return mf
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestMetrics: on both backends, one scrape's counts are the store's
// summary, by state and by user; scrapes within the TTL cost no request
// of the store, and a scrape after it costs the same bounded number again
// (CouchDB: 4 view queries and 1 read of the locks, whatever the number of
// users and transfers); promtool accepts the exposition.
func TestMetrics(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is not installed: make test-setup installs it (Debian's prometheus package)")
	}
	for _, b := range []backend{memfileBackend(t, 200), couchBackend(t, 200)} {
		t.Run(b.name, func(t *testing.T) {
			u, clk := start(t, b, serve.Options{CacheTTL: 10 * time.Second})
			before := requests(b)
			code, body := get(t, nil, u+"/metrics")
			if code != 200 {
				t.Fatalf("/metrics: %d %s", code, body)
			}
			first := requests(b) - before
			if b.reqs != nil && (first == 0 || first > 5) {
				t.Fatalf("one scrape cost %d requests, want 1 to 5", first)
			}
			for range 3 {
				clk.Add(3 * time.Second)
				get(t, nil, u+"/metrics")
			}
			if got := requests(b) - before - first; got != 0 {
				t.Fatalf("3 scrapes within the TTL cost %d more requests, want 0", got)
			}
			clk.Add(2 * time.Second) // 11 s: past the TTL
			get(t, nil, u+"/metrics")
			if got := requests(b) - before - first; got != first {
				t.Fatalf("a scrape after the TTL cost %d requests, want %d as the first", got, first)
			}
			checkCounts(t, b, parse(t, body))
			cmd := exec.Command(promtool, "check", "metrics")
			cmd.Stdin = strings.NewReader(body)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("promtool check metrics: %v\n%s", err, out)
			}
		})
	}
}

func requests(b backend) int64 {
	if b.reqs == nil {
		return 0
	}
	return b.reqs.n.Load()
}

// checkCounts compares the scrape's transfers by state and by user with
// the store's summary.
func checkCounts(t *testing.T, b backend, mf map[string]*dto.MetricFamily) {
	t.Helper()
	sum, err := b.st.Summary(context.Background(), state.SummaryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byState, byUser := map[state.State]int{}, map[string]int{}
	for _, m := range mf["aso_fleet_transfers"].GetMetric() {
		n := int(m.GetGauge().GetValue())
		byState[state.State(label(m, "state"))] += n
		byUser[label(m, "user")] += n
	}
	for _, st := range state.States {
		if byState[st] != sum.ByState[st] {
			t.Errorf("aso_fleet_transfers{state=%q} sum to %d, the summary says %d", st, byState[st], sum.ByState[st])
		}
	}
	for u, m := range sum.ByUser {
		n := 0
		for _, c := range m {
			n += c
		}
		if byUser[u] != n {
			t.Errorf("aso_fleet_transfers{user=%q} sum to %d, the summary says %d", u, byUser[u], n)
		}
	}
	if sum.ByState[state.StateFailed] == 0 || len(mf["aso_fleet_finished_last_hour"].GetMetric()) == 0 || mf["aso_fleet_up"].GetMetric()[0].GetGauge().GetValue() != 1 {
		t.Fatalf("the world has no failed transfer, or the scrape no finished counts, or aso_fleet_up is not 1")
	}
}
