package ftssim_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts/ftssim"
)

func TestFailureReasons_Read(t *testing.T) {
	got, err := ftssim.ReadFailureReasons(strings.NewReader("# comment\n\n  SOURCE [2] Result HTTP 404 : File not found  after 1 attempts  \nTransfer has been forced-killed because it was stalled\n"))
	if err != nil {
		t.Fatal(err)
	}
	wantEq(t, "reasons", got, []string{"SOURCE [2] Result HTTP 404 : File not found  after 1 attempts", "Transfer has been forced-killed because it was stalled"})
	for name, c := range map[string]struct{ in, err string }{
		"empty":       {"", "no failure reason"},
		"comments":    {"# only\n\n", "no failure reason"},
		"bad utf-8":   {"SOURCE [2] ok\nTRANSFER [5] \xff\n", "line 2: not valid UTF-8"},
		"too long":    {"x\n\n" + strings.Repeat("y", 2049), "line 3: reason of 2049 bytes"},
		"long but ok": {strings.Repeat("z", 2048), ""},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ftssim.ReadFailureReasons(strings.NewReader(c.in))
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("error %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("error %v, want one containing %q", err, c.err)
			}
		})
	}
}

// defaultRecoverable is FTS's retry decision for each default reason, worked
// out by hand from FTS's rules (messages implying a retry, ETIMEDOUT,
// ECANCELED, messages forbidding a retry, then the errno lists by scope).
var defaultRecoverable = map[string]bool{
	"SOURCE [2] Result HTTP 404 : File not found  after 1 attempts":                                                                            false, // SOURCE ENOENT
	"SOURCE [1] HTTP 403 : Permission refused":                                                                                                 false, // SOURCE EPERM
	"DESTINATION [13] Result HTTP 403 : Permission refused":                                                                                    false, // DESTINATION EACCES
	"DESTINATION [1] HTTP 403 : Permission refused":                                                                                            false, // DESTINATION EPERM
	"TRANSFER [5] TRANSFER ERROR: Copy failed (3rd pull). Last attempt: copy HTTP 507 : Insufficient Storage":                                  true,  // EIO is not listed
	"TRANSFER [5] TRANSFER ERROR: Copy failed (3rd pull). Last attempt: copy HTTP 500 : Unexpected server error: 500":                          true,
	"TRANSFER [5] DESTINATION MAKE_PARENT HTTP 500 : Unexpected server error: 500  with url davs://se.example.org:1094/store/user/alice/dir":   true,
	"SOURCE [112] Result curl error (56): Failure when receiving data from the peer after 1 attempts":                                          true,
	"DESTINATION [112] Result curl error (56): Failure when receiving data from the peer after 1 attempts":                                     true,
	"TRANSFER [112] TRANSFER ERROR: Copy failed (3rd pull). Last attempt: copy curl error (52): Server returned nothing (no headers. no data)": true,
	"DESTINATION [13] Result curl error (35): SSL connect error after 1 attempts":                                                              false, // DESTINATION EACCES
	"DESTINATION [110] curl error (28): Timeout was reached":                                                                                   true,  // ETIMEDOUT
	"TRANSFER [110] TRANSFER  Operation timed out (copy)":                                                                                      true,
	"SOURCE [5] Source and user-defined ADLER32 checksum do not match (0a1b2c3d != 5e6f7a8b)":                                                  false, // "checksum do not match"
	"DESTINATION [17] Destination file exists and overwrite is not enabled":                                                                    false, // DESTINATION EEXIST
	"SOURCE [2] [ERROR] Server responded with an error: [3011] No such file or directory":                                                      false,
	"TRANSFER [22] Error on XrdCl::CopyProcess::Run(): [ERROR] Server responded with an error: [3000]":                                         true,
	"TRANSFER [110] Error on XrdCl::CopyProcess::Run(): [ERROR] Operation expired":                                                             true,
	"DESTINATION [70] DESTINATION OVERWRITE [srm_plugin_prepare_dest_put][srm_plugin_delete_existing_copy][gfal_srm_unlinkG][gfal_srm_rm_srmv2_internal] error reported from srm_ifce, [SE][srmRm][SRM_INTERNAL_ERROR] Timed out": true, // "SRM_INTERNAL_ERROR"
	"SOURCE [2] SOURCE [srm2__srmPrepareToGet] error reported from srm_ifce, [SE][PrepareToGet][SRM_INVALID_PATH] No such file or directory":                                                                                      false,
	"DESTINATION [28] DESTINATION [srm2__srmPrepareToPut] error reported from srm_ifce, [SE][PrepareToPut][SRM_NO_FREE_SPACE] No free space":                                                                                      false, // "SRM_NO_FREE_SPACE"
	"SOURCE [2] globus_ftp_client: the server responded with an error 550 File not found":                                                                                                                                         false,
	"TRANSFER [110] TRANSFER  Transfer canceled because the gsiftp performance marker timeout of 360 seconds has been exceeded, or all performance markers during that period indicated zero bytes transferred":                   true,
	"Transfer canceled because the gsiftp performance marker timeout of 360 seconds has been exceeded, or all performance markers during that period indicated zero bytes transferred":                                            true, // "performance marker"
	"Transfer has been forced-killed because it was stalled": true, // no scope, no errno: TRANSFER, not listed
}

var scopeRE = regexp.MustCompile(`^(SOURCE|DESTINATION|TRANSFER|GENERAL_FAILURE) \[(\d+)\] `)

func TestFailureReasons_DefaultSet(t *testing.T) {
	plugins := map[string]string{"davs/HTTP": "HTTP ", "xrootd": "[ERROR]", "SRM": "srm_ifce", "gsiftp": "globus_ftp_client"}
	seen := map[string]bool{}
	bare := 0
	for _, r := range ftssim.DefaultFailureReasons {
		want, ok := defaultRecoverable[r]
		if !ok {
			t.Errorf("default reason %q has no expected retry decision in this test", r)
			continue
		}
		if got := ftssim.Recoverable(r); got != want {
			t.Errorf("Recoverable(%q) = %v, want %v", r, got, want)
		}
		if !scopeRE.MatchString(r) {
			bare++
		}
		for name, mark := range plugins {
			if strings.Contains(r, mark) {
				seen[name] = true
			}
		}
	}
	wantEq(t, "reasons", len(ftssim.DefaultFailureReasons), len(defaultRecoverable))
	wantEq(t, "plugins covered", len(seen), len(plugins))
	if bare < 2 {
		t.Errorf("%d reasons without a scope, want a few", bare)
	}
}

func TestFailureReasons_Recoverable(t *testing.T) {
	for reason, want := range map[string]bool{
		"TRANSFER [125] Transfer canceled":                         false, // ECANCELED
		"SOURCE [110] Permission denied":                           true,  // ETIMEDOUT first
		"DESTINATION [17] File exists":                             false,
		"DESTINATION [30] Read-only file system":                   false, // EROFS
		"DESTINATION [14] Bad address":                             false, // EFAULT
		"DESTINATION [2] Parent directory missing":                 true,  // ENOENT counts only at the source
		"SOURCE [20] Not a directory":                              false,
		"TRANSFER [28] No space left on device":                    false,
		"GENERAL_FAILURE [28] something":                           false, // under TRANSFER
		"TRANSFER [13] Name or service not known":                  true,  // a retry message beats the errno
		"SOURCE [5] The source file is not ONLINE":                 false,
		"TRANSFER [70] Communication error on send":                true,
		"DESTINATION [122] Result HTTP 507 : Insufficient Storage": true, // EDQUOT is not listed
		"SOURCE [2] proxy expired":                                 false,
		"Job has been canceled because it stayed in the queue for too long (max-time-in-queue timeout)": true,
	} {
		if got := ftssim.Recoverable(reason); got != want {
			t.Errorf("Recoverable(%q) = %v, want %v", reason, got, want)
		}
	}
}

// TestFailureReasons_RetriesFollowFTSRules: every failed attempt draws a
// reason; FTS retries it only if it is recoverable and retries are left.
func TestFailureReasons_RetriesFollowFTSRules(t *testing.T) {
	f := newFixture(t, ftssim.Options{FailureRate: 1, Seed: 3})
	const n = 40
	var trs []map[string]any
	for i := range n {
		trs = append(trs, transfer(fmt.Sprintf("davs://a.example.org/f%d", i), fmt.Sprintf("davs://b.example.org/f%d", i)))
	}
	id := f.submit(jobBody(map[string]any{"retry": 2, "retry_delay": 1}, trs...))
	for range 4 {
		f.job(id)
		f.clk.Advance(time.Second)
	}
	retried, failedAtOnce, reasons := 0, 0, map[string]bool{}
	for _, fl := range files(t, f.job(id)) {
		reason, _ := fl["reason"].(string)
		reasons[reason] = true
		retries := int(fl["retry"].(float64))
		wantEq(t, "state", fl["file_state"], "FAILED")
		if retries < 2 && ftssim.Recoverable(reason) {
			t.Errorf("file failed with recoverable %q after %d retries of 2", reason, retries)
		}
		rows := f.do(http.MethodGet, fmt.Sprintf("/jobs/%s/files/%.0f/retries", id, fl["file_id"]), nil).list(t)
		wantEq(t, "retry rows", len(rows), retries)
		for _, row := range rows {
			if r := row.(map[string]any)["reason"].(string); !ftssim.Recoverable(r) {
				t.Errorf("FTS retried non-recoverable %q", r)
			}
		}
		if retries > 0 {
			retried++
		} else {
			failedAtOnce++
		}
	}
	if retried == 0 || failedAtOnce == 0 || len(reasons) < 5 {
		t.Errorf("%d retried, %d failed at once, %d distinct reasons: the draw does not exercise both rules", retried, failedAtOnce, len(reasons))
	}
}

func TestLocalOnly_RefusesRemoteURLs(t *testing.T) {
	f := newFixture(t, ftssim.Options{LocalFiles: true, LocalOnly: true})
	r := f.do(http.MethodPost, "/jobs", jobBody(nil, transfer("file:///tmp/a", "davs://b.example.org/f")))
	wantEq(t, "code", r.code, http.StatusBadRequest)
	msg, _ := r.obj(t)["message"].(string)
	if !strings.Contains(msg, "copies only file:// URLs") || !strings.Contains(msg, "davs://b.example.org/f") {
		t.Errorf("message %q: want it to say only file:// is copied and name the URL", msg)
	}
	wantEq(t, "nothing received", len(f.srv.Files()), 0)
	if r := f.do(http.MethodPost, "/jobs", jobBody(nil, transfer("file:///tmp/a", "file:///tmp/b"))); r.code != 200 {
		t.Errorf("file:// submission: %d %s", r.code, r.body)
	}
}
