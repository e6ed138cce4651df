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
// same file, through any protocol or port of one storage; other hosts,
// paths or schemes are not.
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
		{"davs://se.example.org:2880/store/a.root", "davs://se.example.org/store/a.root", true},
		{"gsiftp://se.example.org/store/a.root", "davs://se.example.org/store/a.root", true},
		{"root://se.example.org//store/a.root", "https://se.example.org/store/x/../a.root", true},
		{"srm://se.example.org:8443/srm/managerv2?SFN=/store/a.root", "gsiftp://se.example.org:2811/store/a.root", true},
		{"davs://se.example.org./store/a.root", "root://SE.example.org:1094//store//a.root", true},
		{"https://se.example.org:443/store/./x/../a.root", "http://se.example.org/store/a.root", true},
		{"root://se.example.org//store/a.root", "root://se.example.org//store/a.root.1", false},
		{"mock://se.example.org/store/a.root", "davs://se.example.org/store/a.root", false},
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
// names its transfer's own source, however it is spelled and through a
// symbolic link to its directory (issue 43 case 5); the source stays,
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
	alias := filepath.Join(t.TempDir(), "alias")
	mustLink(t, dir, alias)
	got, err := (&srm.Deleter{}).Delete(context.Background(), []srm.Target{
		{URL: spelled, Source: "file://" + src},
		{URL: "file://" + other, Source: "file://" + src},
		{URL: "file://" + alias + "/store/a.root", Source: "file://" + src},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 2} {
		if got[i].Status != srm.StatusRefused || !errors.Is(got[i].Err, srm.ErrIsSource) {
			t.Errorf("the source as %s: %+v, want REFUSED with ErrIsSource", got[i].URL, got[i])
		}
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

// TestSameFile_Local: a file:// URL is known by the file it reaches: through
// a symbolic link in any component (the root of a site, a directory, the
// file), a hard link, and ".." after a link, as the kernel resolves it;
// a file that does not exist yet by its nearest existing directory, so a
// destination under a link to the source's directory is the source's name.
func TestSameFile_Local(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	mustMkdir(t, filepath.Join(src, "store", "sub"))
	mustWrite(t, filepath.Join(src, "store", "a.root"))
	mustWrite(t, filepath.Join(src, "store", "b.root"))
	mustLink(t, src, filepath.Join(dir, "dst"))                                   // a site root that is the source's
	mustLink(t, "src/./store", filepath.Join(dir, "rel"))                         // a relative link to a directory
	mustLink(t, filepath.Join(src, "store", "sub"), filepath.Join(dir, "subdir")) // .. after it is store
	mustLink(t, filepath.Join(src, "store", "a.root"), filepath.Join(dir, "a.link"))
	mustMkdir(t, filepath.Join(dir, "x"))
	mustLink(t, "../src/store", filepath.Join(dir, "x", "up"))
	if err := os.Link(filepath.Join(src, "store", "a.root"), filepath.Join(dir, "hard.root")); err != nil {
		t.Fatal(err)
	}
	f := func(p string) string { return "file://" + dir + "/" + p }
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{f("src/store/a.root"), f("dst/store/a.root"), true},
		{f("src/store/a.root"), f("rel/a.root"), true},
		{f("src/store/a.root"), f("subdir/../a.root"), true},
		{f("src/store/a.root"), f("a.link"), true},
		{f("src/store/a.root"), f("x/up/a.root"), true},
		{f("src/store/a.root"), f("hard.root"), true},
		{f("src/store/a.root"), "file://localhost" + dir + "/dst//store/./a.root", true},
		{f("src/store/new.root"), f("dst/store/new.root"), true},      // neither exists yet
		{f("src/store/new/deep.root"), f("rel/new/deep.root"), true},  // nor its directory
		{f("src/store/a.root"), f("dst/store/gone/../a.root"), true},  // made by mkdir -p
		{f("src/store/a.root"), f("dst/store/b.root"), false},         // another file
		{f("src/store/a.root"), f("dst/store/a.root.part"), false},    // another name in the directory
		{f("src/store/new.root"), f("src/store/sub/new.root"), false}, // another directory
		{f("src/store/a.root"), f("src/STORE/a.root"), false},         // case matters
		{f("src/store/a.root"), "davs://localhost" + dir + "/src/store/a.root", false},
	} {
		if got := srm.SameFile(c.a, c.b); got != c.want {
			t.Errorf("SameFile(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := srm.SameFile(c.b, c.a); got != c.want {
			t.Errorf("SameFile(%q, %q) = %v, want %v", c.b, c.a, got, c.want)
		}
	}
}

func mustMkdir(t testing.TB, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t testing.TB, p string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(p), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustLink(t testing.TB, target, p string) {
	t.Helper()
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}
