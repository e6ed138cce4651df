package habits

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// module is the module path; paths below are relative to it ("" is main).
const module = "github.com/asyncstageout/aso"

// Layers is the dependency rule: a product package imports only packages
// of lower layers. A package of the module that is in no layer and is not
// Harness fails TestDependencies until it is placed.
var Layers = [][]string{
	{"internal/jwtpayload", "internal/gridcert", "internal/exitcode", "internal/eta", "internal/httplog", "internal/ranges", "internal/holder"},
	{"state"},
	{"fts", "srm", "tokens"},
	{"state/couch", "state/memfile", "fts/ftssim", "internal/outputs", "internal/statusview", "verify", "enqueue"},
	{"agent", "admin"},
	{"fleet", "serve"},
	{"cmd"},
	{""},
}

// Harness lists the packages that are not product: test support (a path
// element ending in "test"), the bench and chaos programs, the README
// tour's internal/demo, internal/tools and this package. They may import
// product packages below cmd and each other; no product package imports
// them, and the binary links none of them.
func Harness(rel string) bool {
	switch {
	case rel == "bench", rel == "chaos", rel == "internal/demo", rel == "internal/habits",
		strings.HasPrefix(rel, "internal/tools/"):
		return true
	}
	for _, e := range strings.Split(rel, "/") {
		if strings.HasSuffix(e, "test") {
			return true
		}
	}
	return false
}

// layerOf returns the layer of a package (relative path); harnesses are
// -1, and ok is false for a package in no layer.
func layerOf(rel string) (layer int, ok bool) {
	if Harness(rel) {
		return -1, true
	}
	for i, l := range Layers {
		for _, p := range l {
			if p == rel {
				return i, true
			}
		}
	}
	return 0, false
}

// rel strips the module path from an import path; ok is false for a
// package of another module.
func rel(path string) (string, bool) {
	if path == module {
		return "", true
	}
	r, ok := strings.CutPrefix(path, module+"/")
	return r, ok
}

// arrowOffenders lists every import of imports (package -> its imports,
// import paths) that breaks the rule, one line each, sorted.
func arrowOffenders(imports map[string][]string) []string {
	var out []string
	for from, tos := range imports {
		rf, ok := rel(from)
		if !ok {
			continue
		}
		lf, ok := layerOf(rf)
		if !ok {
			out = append(out, fmt.Sprintf("%s: in no layer of habits.Layers: place it", from))
			continue
		}
		for _, to := range tos {
			rt, ok := rel(to)
			if !ok {
				continue
			}
			lt, ok := layerOf(rt)
			cmdLayer := len(Layers) - 2
			switch {
			case !ok:
				continue // named once, as an importer
			case lf >= 0 && lt < 0:
				out = append(out, fmt.Sprintf("%s imports the harness %s", from, to))
			case lf < 0 && lt >= cmdLayer:
				out = append(out, fmt.Sprintf("%s (a harness) imports %s: drive the binary instead", from, to))
			case lf >= 0 && lt >= lf:
				out = append(out, fmt.Sprintf("%s (layer %d) imports %s (layer %d): arrows point down only", from, lf, to, lt))
			}
		}
	}
	sort.Strings(out)
	return out
}

// goList runs go list in the module root with args and returns its lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	c := exec.Command("go", append([]string{"list"}, args...)...)
	c.Dir = filepath.Join("..", "..")
	out, err := c.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// TestDependencies: every non-test import of the module follows Layers.
func TestDependencies(t *testing.T) {
	imports := map[string][]string{}
	for _, l := range goList(t, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...") {
		f := strings.Fields(l)
		imports[f[0]] = f[1:]
	}
	for _, b := range arrowOffenders(imports) {
		t.Error(b)
	}
}

// TestBinaryLinksNoHarness: the aso binary (go list -deps .) links no
// harness package.
func TestBinaryLinksNoHarness(t *testing.T) {
	n := 0
	for _, p := range goList(t, "-deps", ".") {
		r, ok := rel(p)
		if !ok {
			continue
		}
		n++
		if Harness(r) {
			t.Errorf("the binary links the harness %s", p)
		}
	}
	if n < len(Layers) {
		t.Fatalf("go list -deps . found %d packages of the module", n)
	}
}

// TestArrowOffenders: an upward import, a harness imported by product, a
// harness importing cmd and an unplaced package are each named; a
// downward import and a harness importing product are not.
func TestArrowOffenders(t *testing.T) {
	m := func(r string) string { return module + "/" + r }
	got := arrowOffenders(map[string][]string{
		m("agent"):               {m("state"), m("fts"), "fmt"},
		m("internal/statusview"): {m("agent")},
		m("fleet"):               {m("state/statetest")},
		m("internal/proctest"):   {m("cmd"), m("state/couch")},
		m("newroom"):             {m("state")},
		m("state"):               {m("state")},
	})
	want := []string{
		m("fleet") + " imports the harness " + m("state/statetest"),
		m("internal/proctest") + " (a harness) imports " + m("cmd") + ": drive the binary instead",
		m("internal/statusview") + " (layer 3) imports " + m("agent") + " (layer 4): arrows point down only",
		m("newroom") + ": in no layer of habits.Layers: place it",
		m("state") + " (layer 1) imports " + m("state") + " (layer 1): arrows point down only",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("arrowOffenders:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
