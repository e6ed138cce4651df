package srm_test

import (
	"context"
	"errors"
	"fmt"
	"hash/adler32"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/srm"
)

func TestDeleter_Check(t *testing.T) {
	requireGfalRm(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "f.root")
	data := []byte("the payload of a physics file\n")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := fmt.Sprintf("%08x", adler32.Checksum(data))
	d := &srm.Deleter{Timeout: 30 * time.Second}
	ctx := context.Background()

	got := d.Check(ctx, "file://"+file, int64(len(data)))
	if got.Err != nil || got.Missing || got.Size != int64(len(data)) || got.Adler32 != sum {
		t.Errorf("existing file: %+v, want size %d adler32 %s", got, len(data), sum)
	}
	// a plugin that prints the checksum in capitals, shorter than 8 digits
	got = d.Check(ctx, "mock://h/p?size=1024&checksum=BADF00D", 0)
	if got.Err != nil || got.Size != 1024 || got.Adler32 != "0badf00d" {
		t.Errorf("mock file: %+v, want size 1024 adler32 0badf00d", got)
	}
	// a file of another size: its checksum is not read
	got = d.Check(ctx, "file://"+file, int64(len(data))+1)
	if got.Err != nil || got.Size != int64(len(data)) || got.Adler32 != "" {
		t.Errorf("another size: %+v, want the size without a checksum", got)
	}
	got = d.Check(ctx, "file://"+filepath.Join(dir, "absent"), 0)
	if !got.Missing || got.Err != nil {
		t.Errorf("absent file: %+v, want Missing without error", got)
	}
	got = d.Check(ctx, "mock://h/p?errno=13", 0)
	if got.Missing || got.Errno != 13 || !errors.Is(got.Err, fs.ErrPermission) || !strings.Contains(got.Err.Error(), "gfal-stat") {
		t.Errorf("refused stat: %+v, want errno 13 naming gfal-stat", got)
	}
	got = d.Check(ctx, "file://"+dir, 0)
	if got.Err == nil || !strings.Contains(got.Err.Error(), "not a regular file") {
		t.Errorf("directory: %+v, want an error saying it is not a regular file", got)
	}
	got = d.Check(ctx, "-rf", 0)
	if !errors.Is(got.Err, srm.ErrBadURL) {
		t.Errorf("bad URL: %+v, want ErrBadURL", got)
	}
}

// TestDeleter_CheckUsesSiblingsAndTimeout: with gfal-rm given as a path,
// gfal-stat and gfal-sum are taken from its directory when they are there,
// else from PATH; a hung command is killed at the timeout.
func TestDeleter_CheckUsesSiblingsAndTimeout(t *testing.T) {
	requireGfalRm(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "runs.log")
	for _, name := range []string{"gfal-stat", "gfal-sum"} {
		writeScript(t, dir, name, `printf '%s %s\n' "$(basename "$0")" "$*" >> '`+log+`'
exec /usr/bin/`+name+` "$@"`)
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d := &srm.Deleter{Command: filepath.Join(dir, "gfal-rm"), Timeout: 30 * time.Second}
	if got := d.Check(context.Background(), "file://"+file, 0); got.Err != nil || got.Size != 0 || got.Adler32 != "00000001" {
		t.Fatalf("empty file: %+v, want size 0 adler32 00000001", got)
	}
	runs, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	want := "gfal-stat -t 30 -- file://" + file + "\ngfal-sum -t 30 -- file://" + file + " ADLER32\n"
	if string(runs) != want {
		t.Errorf("runs:\n%s\nwant:\n%s", runs, want)
	}

	// a wrapper gfal-rm alone in its directory: gfal-stat and gfal-sum from PATH
	wrapped := t.TempDir()
	writeScript(t, wrapped, "gfal-rm", `exec gfal-rm "$@"`)
	d = &srm.Deleter{Command: filepath.Join(wrapped, "gfal-rm"), Timeout: 30 * time.Second}
	if got := d.Sibling("gfal-sum"); got != "gfal-sum" {
		t.Errorf("Sibling of a lone wrapper: %q, want gfal-sum from PATH", got)
	}
	if got := d.Check(context.Background(), "file://"+file, 0); got.Err != nil || got.Adler32 != "00000001" {
		t.Errorf("lone wrapper: %+v, want the file read by the gfal-stat and gfal-sum in PATH", got)
	}

	hang := t.TempDir()
	writeScript(t, hang, "gfal-stat", "sleep 60")
	d = &srm.Deleter{Command: filepath.Join(hang, "gfal-rm"), Timeout: 300 * time.Millisecond}
	start := time.Now()
	got := d.Check(context.Background(), "file://"+file, 0)
	if !errors.Is(got.Err, srm.ErrTimeout) || got.Missing {
		t.Errorf("hung gfal-stat: %+v, want ErrTimeout", got)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("hung gfal-stat held Check for %v", time.Since(start))
	}
}
