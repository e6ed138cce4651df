package serve_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/asyncstageout/aso/serve"
)

const deployDir = "../deploy"

func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is not installed: make test-setup installs it (Debian's prometheus package)")
	}
	return p
}

// TestRules: promtool accepts the rules, and their tests pass: each alert
// fires on the series that should fire it and not on their look-alikes.
func TestRules(t *testing.T) {
	p := promtool(t)
	dir := filepath.Join(deployDir, "prometheus")
	for _, args := range [][]string{{"check", "rules", "aso-rules.yml"}, {"test", "rules", "aso-rules.test.yml"}} {
		c := exec.Command(p, args...)
		c.Dir = dir
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	names := exported(t)
	for _, e := range ruleExprs(t) {
		checkNames(t, "aso-rules.yml", e, names, nil)
	}
}

// exported returns the metric names a scrape of aso serve holds.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	u, _ := start(t, memfileBackend(t, 20), serve.Options{})
	_, body := get(t, nil, u+"/metrics")
	names := map[string]bool{}
	for n := range parse(t, body) {
		names[n] = true
	}
	if !names["aso_fleet_transfers"] || !names["aso_fleet_last_run_exit_code"] {
		t.Fatalf("the scrape lacks series: %v", names)
	}
	return names
}

type ruleFile struct {
	Groups []struct {
		Rules []struct{ Record, Alert, Expr string }
	}
}

func ruleExprs(t *testing.T) []string {
	t.Helper()
	var rf ruleFile
	b, err := os.ReadFile(filepath.Join(deployDir, "prometheus", "aso-rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &rf); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			out = append(out, r.Expr)
		}
	}
	return out
}

// recorded returns the names the rules record.
func recorded(t *testing.T) map[string]bool {
	t.Helper()
	var rf ruleFile
	b, _ := os.ReadFile(filepath.Join(deployDir, "prometheus", "aso-rules.yml"))
	if err := yaml.Unmarshal(b, &rf); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				out[r.Record] = true
			}
		}
	}
	return out
}

var metricName = regexp.MustCompile(`\baso(_[a-z_]+|:[a-z_:0-9]+)`)

// checkNames fails if expr reads a metric that aso serve does not export
// (aso_...) or the rules do not record (aso:...).
func checkNames(t *testing.T, where, expr string, exported, recorded map[string]bool) {
	t.Helper()
	for _, n := range metricName.FindAllString(expr, -1) {
		if !exported[n] && !recorded[n] && !(recorded == nil && strings.Contains(n, ":")) {
			t.Errorf("%s: %q reads %s, which aso serve does not export", where, expr, n)
		}
	}
}

// TestGrafanaDashboard: deploy/grafana/aso.json is a dashboard Grafana
// imports: valid JSON with a schema version, a Prometheus data source
// input, panels that each name it and have a position and targets, every
// target an expression promtool parses that reads only the metrics aso
// serve exports or the rules record.
func TestGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(deployDir, "grafana", "aso.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Inputs        []struct{ Name, Type, PluginID string } `json:"__inputs"`
		UID, Title    string
		SchemaVersion int
		Panels        []struct {
			ID, Type, Title string `json:"-"`
			PanelID         int    `json:"id"`
			PanelType       string `json:"type"`
			PanelTitle      string `json:"title"`
			Datasource      struct{ Type, UID string }
			GridPos         struct{ X, Y, W, H int } `json:"gridPos"`
			Targets         []struct {
				RefID      string `json:"refId"`
				Expr       string
				Datasource struct{ Type, UID string }
			}
		}
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("aso.json: %v", err)
	}
	if d.SchemaVersion < 36 || d.UID == "" || d.Title == "" || len(d.Panels) == 0 {
		t.Fatalf("aso.json: schemaVersion %d, uid %q, title %q, %d panels", d.SchemaVersion, d.UID, d.Title, len(d.Panels))
	}
	if len(d.Inputs) != 1 || d.Inputs[0].Type != "datasource" || d.Inputs[0].PluginID != "prometheus" {
		t.Fatalf("aso.json: __inputs %+v, want one Prometheus data source", d.Inputs)
	}
	ds := "${" + d.Inputs[0].Name + "}"
	names, rec := exported(t), recorded(t)
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	ids := map[int]bool{}
	for _, p := range d.Panels {
		where := fmt.Sprintf("panel %d %q", p.PanelID, p.PanelTitle)
		if ids[p.PanelID] || p.PanelType == "" || p.Datasource.Type != "prometheus" || p.Datasource.UID != ds || p.GridPos.W == 0 || p.GridPos.H == 0 || len(p.Targets) == 0 {
			t.Errorf("%s: duplicate id, no type, a data source other than %s, no size or no target: %+v", where, ds, p)
		}
		ids[p.PanelID] = true
		for i, tg := range p.Targets {
			if tg.Expr == "" || tg.RefID == "" || tg.Datasource.UID != ds {
				t.Errorf("%s target %d: expr %q, refId %q, data source %q", where, i, tg.Expr, tg.RefID, tg.Datasource.UID)
			}
			checkNames(t, where, tg.Expr, names, rec)
			expr := strings.ReplaceAll(tg.Expr, "$user", ".*")
			fmt.Fprintf(&rules, "      - record: dashboard:panel%d:%d\n        expr: %q\n", p.PanelID, i, expr)
		}
	}
	f := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(f, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool(t), "check", "rules", f).CombinedOutput(); err != nil {
		t.Fatalf("promtool does not parse the dashboard's expressions: %v\n%s", err, out)
	}
}
