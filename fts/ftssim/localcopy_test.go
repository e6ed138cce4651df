package ftssim_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts/ftssim"
)

// localFixture is a LocalFiles simulator and a directory with a 9-byte
// source file "src" (ADLER32 118d0382).
func localFixture(t *testing.T, opts ftssim.Options) (*fixture, string) {
	t.Helper()
	opts.LocalFiles = true
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "src"), []byte("hello fts"), 0o644); err != nil {
		t.Fatal(err)
	}
	return newFixture(t, opts), dir
}

func fileURL(path string) string { return "file://" + path }

func readOrMissing(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return "<missing>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLocal_Copy(t *testing.T) {
	f, dir := localFixture(t, ftssim.Options{TransferTime: time.Minute})
	dst := filepath.Join(dir, "a", "b", "dst")
	tr := transfer(fileURL(filepath.Join(dir, "src")), fileURL(dst))
	tr["checksum"] = "adler32:118D0382"
	id := f.submit(jobBody(map[string]any{"verify_checksum": true}, tr))
	f.job(id)
	f.clk.Advance(59 * time.Second)
	wantEq(t, "still ACTIVE", files(t, f.job(id))[0]["file_state"], "ACTIVE")
	wantEq(t, "not copied while ACTIVE", readOrMissing(t, dst), "<missing>")
	f.clk.Advance(time.Second)
	j := f.job(id)
	fl := files(t, j)[0]
	wantEq(t, "state", fl["file_state"], "FINISHED")
	wantEq(t, "filesize", fl["filesize"], 9)
	wantEq(t, "destination", readOrMissing(t, dst), "hello fts")
	wantEq(t, "job", j["job_state"], "FINISHED")
}

func TestLocal_Failures(t *testing.T) {
	cases := []struct {
		name      string
		params    map[string]any
		checksum  string
		existing  string // destination content before the transfer
		missing   bool   // the source does not exist
		reason    string
		wantDst   string
		wantState string
	}{
		{name: "checksum mismatch", params: map[string]any{"verify_checksum": true, "retry": 2}, checksum: "ADLER32:00000001",
			reason: "SOURCE [5] Source and user-defined ADLER32 checksum do not match (118d0382 != 00000001)", wantDst: "<missing>", wantState: "FAILED"},
		{name: "target checksum mismatch", params: map[string]any{"verify_checksum": false}, checksum: "ADLER32:00000001",
			reason: "DESTINATION [5] Destination and user-defined ADLER32 checksum do not match (118d0382 != 00000001)", wantDst: "<missing>", wantState: "FAILED"},
		{name: "checksum not verified", params: map[string]any{"verify_checksum": "none"}, checksum: "ADLER32:00000001",
			reason: "", wantDst: "hello fts", wantState: "FINISHED"},
		{name: "destination exists", params: map[string]any{"retry": 2}, existing: "old",
			reason: "DESTINATION [17] Destination file exists and overwrite is not enabled", wantDst: "old", wantState: "FAILED"},
		{name: "overwrite", params: map[string]any{"overwrite": true}, existing: "old",
			reason: "", wantDst: "hello fts", wantState: "FINISHED"},
		{name: "missing source", params: map[string]any{"retry": 2}, missing: true,
			reason: "SOURCE [2] No such file or directory", wantDst: "<missing>", wantState: "FAILED"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, dir := localFixture(t, ftssim.Options{})
			src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "out", "dst")
			if c.missing {
				src = filepath.Join(dir, "nope")
			}
			if c.existing != "" {
				if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(dst, []byte(c.existing), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			tr := transfer(fileURL(src), fileURL(dst))
			if c.checksum != "" {
				tr["checksum"] = c.checksum
			}
			fl := files(t, f.job(f.submit(jobBody(c.params, tr))))[0]
			wantEq(t, "state", fl["file_state"], c.wantState)
			wantEq(t, "reason", fl["reason"], c.reason)
			wantEq(t, "not retried", fl["retry"], 0)
			wantEq(t, "destination", readOrMissing(t, dst), c.wantDst)
			if entries, _ := os.ReadDir(filepath.Dir(dst)); len(entries) > 1 {
				t.Errorf("leftovers next to the destination: %v", entries)
			}
		})
	}
}

func TestLocal_FinishedDirty(t *testing.T) {
	f, dir := localFixture(t, ftssim.Options{})
	id := f.submit(jobBody(nil,
		transfer(fileURL(filepath.Join(dir, "src")), fileURL(filepath.Join(dir, "d1"))),
		transfer(fileURL(filepath.Join(dir, "nope")), fileURL(filepath.Join(dir, "d2")))))
	j := f.job(id)
	fl := files(t, j)
	wantEq(t, "states", []any{fl[0]["file_state"], fl[1]["file_state"]}, []any{"FINISHED", "FAILED"})
	wantEq(t, "job", j["job_state"], "FINISHEDDIRTY")
	wantEq(t, "job reason", j["reason"], "One or more files failed. Please have a look at the details for more information")
}

func TestLocal_EmptyFile(t *testing.T) {
	f, dir := localFixture(t, ftssim.Options{})
	if err := os.WriteFile(filepath.Join(dir, "empty"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tr := transfer(fileURL(filepath.Join(dir, "empty")), fileURL(filepath.Join(dir, "copy")))
	tr["filesize"] = 99 // what the user claims; the copy has 0 bytes
	fl := files(t, f.job(f.submit(jobBody(nil, tr))))[0]
	wantEq(t, "state", fl["file_state"], "FINISHED")
	wantEq(t, "filesize", fl["filesize"], 0)
	wantEq(t, "copy", readOrMissing(t, filepath.Join(dir, "copy")), "")
}

func TestLocal_SourceNotRegular(t *testing.T) {
	f, dir := localFixture(t, ftssim.Options{})
	for src, reason := range map[string]string{
		"/dev/zero": "SOURCE [22] Source is not a regular file",
		dir:         "SOURCE [21] Source is a directory",
	} {
		fl := files(t, f.job(f.submit(jobBody(nil, transfer(fileURL(src), fileURL(filepath.Join(dir, "x")))))))[0]
		wantEq(t, "reason", fl["reason"], reason)
		wantEq(t, "state", fl["file_state"], "FAILED")
	}
}

// TestLocal_ChecksBeforeDrawnFailures: url-copy checks the source and the
// destination before copying, so a drawn transfer failure (FailureRate 1)
// never hides a missing source or an existing destination.
func TestLocal_ChecksBeforeDrawnFailures(t *testing.T) {
	f, dir := localFixture(t, ftssim.Options{FailureRate: 1, FailureReasons: []string{"TRANSFER [110] Connection timed out"}})
	exists := filepath.Join(dir, "exists")
	if err := os.WriteFile(exists, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	params := map[string]any{"retry": -1}
	fl := files(t, f.job(f.submit(jobBody(params, transfer(fileURL(filepath.Join(dir, "src")), fileURL(exists))))))[0]
	wantEq(t, "existing destination", fl["reason"], "DESTINATION [17] Destination file exists and overwrite is not enabled")
	wantEq(t, "destination untouched", readOrMissing(t, exists), "old")
	fl = files(t, f.job(f.submit(jobBody(params, transfer(fileURL(filepath.Join(dir, "nope")), fileURL(filepath.Join(dir, "d2")))))))[0]
	wantEq(t, "missing source", fl["reason"], "SOURCE [2] No such file or directory")
	fl = files(t, f.job(f.submit(jobBody(params, transfer(fileURL(filepath.Join(dir, "src")), fileURL(filepath.Join(dir, "d3")))))))[0]
	wantEq(t, "drawn failure after the checks", fl["reason"], "TRANSFER [110] Connection timed out")
	wantEq(t, "nothing copied", readOrMissing(t, filepath.Join(dir, "d3")), "<missing>")
}
