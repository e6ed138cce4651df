package srm_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/asyncstageout/aso/srm"
)

// TestSameFile: URLs that name one file through another spelling are the
// same file; other hosts, ports, paths or schemes are not.
func TestSameFile(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"file:///data/store/a.root", "file:///data/store/a.root", true},
		{"file:///data/store/a.root", "file:///data//store/./a.root", true},
		{"davs://SE.example.org/store/a.root", "davs://se.example.org:443/store/a.root", true},
		{"davs://se.example.org/store/a.root", "https://se.example.org/store/a.root", true},
		{"root://xrd.example.org//store/a.root", "xroot://xrd.example.org:1094/store/a.root", true},
		{"srm://srm.example.org:8443/srm/managerv2?SFN=/pnfs/a.root", "srm://srm.example.org/srm/managerv2?SFN=/pnfs//a.root", true},
		{"davs://se.example.org/store/a.root", "davs://se.example.org/store/b.root", false},
		{"davs://se.example.org/store/a.root", "davs://other.example.org/store/a.root", false},
		{"davs://se.example.org:8443/store/a.root", "davs://se.example.org/store/a.root", false},
		{"gsiftp://se.example.org/store/a.root", "davs://se.example.org/store/a.root", false},
		{"file:///data/store/A.root", "file:///data/store/a.root", false},
		{"", "", false},
		{"not a url", "file:///x", false},
	} {
		if got := srm.SameFile(c.a, c.b); got != c.want {
			t.Errorf("SameFile(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := srm.SameFile(c.b, c.a); got != c.want {
			t.Errorf("SameFile(%q, %q) = %v, want %v", c.b, c.a, got, c.want)
		}
	}
}

// TestDelete_RefusesTheSource: the real gfal-rm is never given a URL that
// names its transfer's own source, however it is spelled; the source stays,
// the refusal is REFUSED with ErrIsSource, and the other targets of the
// call are deleted as usual.
func TestDelete_RefusesTheSource(t *testing.T) {
	requireGfalRm(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "store", "a.root")
	other := filepath.Join(dir, "store", "b.root")
	for _, p := range []string{src, other} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("data"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spelled := "file://" + filepath.Join(dir, "store") + "//./a.root"
	got, err := (&srm.Deleter{}).Delete(context.Background(), []srm.Target{
		{URL: spelled, Source: "file://" + src},
		{URL: "file://" + other, Source: "file://" + src},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Status != srm.StatusRefused || !errors.Is(got[0].Err, srm.ErrIsSource) {
		t.Errorf("the source: %+v, want REFUSED with ErrIsSource", got[0])
	}
	if got[1].Status != srm.StatusDeleted || got[1].Err != nil {
		t.Errorf("the other target: %+v, want DELETED", got[1])
	}
	if _, err := os.Stat(src); err != nil {
		t.Errorf("the source is gone: %v", err)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Errorf("the other target is still there: %v", err)
	}
}
