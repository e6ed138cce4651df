package srm_test

import (
	"context"
	"errors"
	"fmt"
	"hash/adler32"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/srm/davtest"
)

// TestInspector_HTTP reads files with the real gfal-stat and gfal-sum of
// the http plugin from a storage that answers as a WebDAV storage does:
// the size from PROPFIND, the checksum from HEAD's Digest; a missing file
// is Missing by its errno, a refusal and a failing server are errors with
// theirs, and a storage that keeps no checksum is an error, not a match.
func TestInspector_HTTP(t *testing.T) {
	requireGfalRm(t)
	dir := t.TempDir()
	data := []byte("an output file of a grid job\n")
	if err := os.WriteFile(filepath.Join(dir, "f.root"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	srv := davtest.NewServer(t, dir)
	in := &srm.Inspector{Timeout: 20 * time.Second}
	ctx := context.Background()
	sum := fmt.Sprintf("%08x", adler32.Checksum(data))

	got := in.Check(ctx, srv.URLOf("f.root"), int64(len(data)))
	if got.Err != nil || got.Missing || got.Size != int64(len(data)) || got.Adler32 != sum {
		t.Fatalf("file: %+v, want size %d adler32 %s", got, len(data), sum)
	}
	if reqs := srv.Requests(); !slices.Contains(reqs, "PROPFIND /f.root 207") || !slices.Contains(reqs, "HEAD /f.root 200") || slices.Contains(reqs, "GET /f.root 200") {
		t.Errorf("requests %q: want the size by PROPFIND and the checksum by HEAD, no data read", reqs)
	}
	if got := in.Stat(ctx, srv.URLOf("f.root")); got.Err != nil || got.Size != int64(len(data)) || got.Adler32 != "" {
		t.Errorf("Stat: %+v, want the size and no checksum", got)
	}
	if got := in.Check(ctx, srv.URLOf("absent"), 0); !got.Missing || got.Err != nil {
		t.Errorf("absent: %+v, want Missing", got)
	}
	if got := in.Check(ctx, srv.URLOf("sub"), 0); got.NotFile != "directory" || got.Err != nil || got.Missing {
		t.Errorf("directory: %+v, want NotFile directory", got)
	}
	srv.Fail("forbidden", http.StatusForbidden)
	if got := in.Check(ctx, srv.URLOf("forbidden"), 0); got.Missing || got.Errno != int(syscall.EPERM) || !errors.Is(got.Err, fs.ErrPermission) {
		t.Errorf("403: %+v, want errno EPERM, not missing", got)
	}
	srv.Fail("broken", http.StatusServiceUnavailable)
	if got := in.Check(ctx, srv.URLOf("broken"), 0); got.Missing || got.Errno != int(syscall.EIO) {
		t.Errorf("503: %+v, want errno EIO, not missing", got)
	}
	srv.NoDigest()
	if got := in.Check(ctx, srv.URLOf("f.root"), 0); got.Missing || got.Adler32 != "" || got.Errno != int(syscall.ENOSYS) {
		t.Errorf("no digest: %+v, want errno ENOSYS from gfal-sum", got)
	}
}

// TestInspector_UnreachableIsNotMissing: a storage that does not answer
// is an error with gfal's errno, never a missing file.
func TestInspector_UnreachableIsNotMissing(t *testing.T) {
	requireGfalRm(t)
	srv := davtest.NewServer(t, t.TempDir())
	url := srv.URLOf("f")
	srv.Close()
	got := (&srm.Inspector{Timeout: 20 * time.Second}).Check(context.Background(), url, 0)
	if got.Missing || got.Err == nil || got.Errno == 0 {
		t.Errorf("closed server: %+v, want an error with an errno", got)
	}
}
