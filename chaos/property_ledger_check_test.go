package chaos_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/state"
)

// TestLedger_SeesEveryBrokenPromise proves that the property test's check
// reports each way a kept file can be lost: deleted, changed, a done
// transfer without its file or with other bytes.
func TestLedger_SeesEveryBrokenPromise(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) (string, digest) {
		p := filepath.Join(dir, name)
		writeFile(t, p, []byte(content))
		return p, digestOf([]byte(content))
	}
	l := newLedger()
	src, d := file("source", "the source")
	l.sources[src] = d
	placed, d := file("placed", "put there by hand")
	l.placed[placed] = d
	if bad := unchanged("source", l.sources); len(bad) != 0 {
		t.Fatalf("untouched files reported: %v", bad)
	}
	must(t, os.WriteFile(src, []byte("the sourcE"), 0o644))
	must(t, os.Remove(placed))
	if bad := unchanged("source", l.sources); len(bad) != 1 || !strings.Contains(bad[0], "was changed") {
		t.Errorf("a changed source: got %v", bad)
	}
	if bad := unchanged("hand-placed file", l.placed); len(bad) != 1 || !strings.Contains(bad[0], "was deleted") {
		t.Errorf("a deleted hand-placed file: got %v", bad)
	}

	dst, d := file("destination", "copied bytes")
	tr := &state.Transfer{ID: "t1", Size: d.size, Checksums: map[string]string{"adler32": d.adler}}
	if got := l.checkDone(tr, dst); got != "" {
		t.Fatalf("a done transfer with its bytes: %s", got)
	}
	must(t, os.WriteFile(dst, []byte("copied byteS"), 0o644))
	if got := l.checkDone(tr, dst); !strings.Contains(got, "was changed") {
		t.Errorf("a done transfer's file changed: got %q", got)
	}
	must(t, os.Remove(dst))
	if got := l.checkDone(tr, dst); !strings.Contains(got, "was deleted") {
		t.Errorf("a done transfer's file deleted: got %q", got)
	}
	other := &state.Transfer{ID: "t2", Size: d.size, Checksums: map[string]string{"adler32": "00000001"}}
	if got := l.checkDone(other, src); !strings.Contains(got, "not the") {
		t.Errorf("done over other bytes: got %q", got)
	}
	if got := l.checkDone(other, filepath.Join(dir, "none")); !strings.Contains(got, "no file") {
		t.Errorf("done without a file: got %q", got)
	}
}
