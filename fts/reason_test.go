package fts_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/state"
)

// corpusRow is one line of testdata/fts/reasons.tsv.
type corpusRow struct {
	line      int
	reason    string
	class     state.ErrorClass
	retryable bool
}

func readCorpus(tb testing.TB) []corpusRow {
	tb.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", "fts", "reasons.tsv"))
	if err != nil {
		tb.Fatalf("open the reason corpus: %v", err)
	}
	defer f.Close()
	var rows []corpusRow
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) != 3 {
			tb.Fatalf("reasons.tsv:%d: %d columns, want 3 (reason, class, retryable)", n, len(cols))
		}
		retry, err := strconv.ParseBool(cols[2])
		if err != nil {
			tb.Fatalf("reasons.tsv:%d: retryable %q: %v", n, cols[2], err)
		}
		if c := state.ErrorClass(cols[1]); !c.Valid() {
			tb.Fatalf("reasons.tsv:%d: %q is not an error class", n, cols[1])
		}
		rows = append(rows, corpusRow{n, cols[0], state.ErrorClass(cols[1]), retry})
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return rows
}

func TestClassify_Corpus(t *testing.T) {
	rows := readCorpus(t)
	if len(rows) < 80 {
		t.Fatalf("the corpus has %d reasons, want at least 80", len(rows))
	}
	seen := map[state.ErrorClass]int{}
	for _, r := range rows {
		f := fts.Classify(r.reason, nil)
		seen[f.Class]++
		if f.Class != r.class || f.Retryable != r.retryable {
			t.Errorf("reasons.tsv:%d: %q\n  got %s retryable=%v, want %s retryable=%v (parsed %+v)",
				r.line, r.reason, f.Class, f.Retryable, r.class, r.retryable, f.Reason)
		}
	}
	for _, c := range state.ErrorClasses {
		// destination_busy is a refused submission's, never a file's
		// reason, and same_file aso's own, before any submission
		if seen[c] == 0 && c != state.ClassDestinationBusy && c != state.ClassSameFile {
			t.Errorf("no reason of the corpus is classified %s", c)
		}
	}
}

func TestParseReason(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want fts.Reason
	}{
		{"SOURCE [2] Result HTTP 404 : File not found  after 1 attempts",
			fts.Reason{Scope: "SOURCE", Errno: 2, Message: "Result HTTP 404 : File not found  after 1 attempts", HTTPStatus: 404}},
		{"TRANSFER [110] TRANSFER  Operation timed out (copy)",
			fts.Reason{Scope: "TRANSFER", Errno: 110, Message: "TRANSFER  Operation timed out (copy)"}},
		{"SOURCE [112] Result curl error (56): Failure when receiving data from the peer after 1 attempts",
			fts.Reason{Scope: "SOURCE", Errno: 112, Message: "Result curl error (56): Failure when receiving data from the peer after 1 attempts", CurlCode: 56}},
		{"SOURCE [2] [ERROR] Server responded with an error: [3011] No such file or directory",
			fts.Reason{Scope: "SOURCE", Errno: 2, Message: "[ERROR] Server responded with an error: [3011] No such file or directory", XRootDCode: 3011}},
		{"DESTINATION [28] [SE][PrepareToPut][SRM_NO_FREE_SPACE] No free space",
			fts.Reason{Scope: "DESTINATION", Errno: 28, Message: "[SE][PrepareToPut][SRM_NO_FREE_SPACE] No free space", SRMStatus: "SRM_NO_FREE_SPACE"}},
		{"TRANSFER [5] globus_ftp_client: the server responded with an error 452 452 Insufficient storage space",
			fts.Reason{Scope: "TRANSFER", Errno: 5, Message: "globus_ftp_client: the server responded with an error 452 452 Insufficient storage space", FTPCode: 452}},
		{"SOURCE error during TRANSFER_PREPARATION phase: [INVALID_PATH] No such file or directory",
			fts.Reason{Scope: "SOURCE", Phase: "TRANSFER_PREPARATION", Category: "INVALID_PATH", Message: "No such file or directory"}},
		{"Job has been canceled because it stayed in the queue for too long (max-time-in-queue timeout)",
			fts.Reason{Message: "Job has been canceled because it stayed in the queue for too long (max-time-in-queue timeout)"}},
		{"SOURCE [2]", fts.Reason{Scope: "SOURCE", Errno: 2}},
		// not the prefix: kept whole
		{"SOURCE [x] no errno", fts.Reason{Message: "SOURCE [x] no errno"}},
		{"SOURCE [99999999] too long", fts.Reason{Message: "SOURCE [99999999] too long"}},
		{"SOURCES [2] other word", fts.Reason{Message: "SOURCES [2] other word"}},
		{"  ", fts.Reason{}},
		// codes need their exact width
		{"TRANSFER [5] HTTP 5000 : odd", fts.Reason{Scope: "TRANSFER", Errno: 5, Message: "HTTP 5000 : odd"}},
	} {
		if got := fts.ParseReason(tc.in); got != tc.want {
			t.Errorf("ParseReason(%q)\n  = %+v\nwant %+v", tc.in, got, tc.want)
		}
	}
}

func TestClassify_RecoverableDecidesUnknown(t *testing.T) {
	yes, no := true, false
	const unknown = "TRANSFER [5] Transfer failed: unknown error"
	if f := fts.Classify(unknown, &no); f.Class != state.ClassUnknown || f.Retryable {
		t.Fatalf("unknown with recoverable=false: %+v, want not retryable", f)
	}
	if f := fts.Classify(unknown, &yes); !f.Retryable {
		t.Fatalf("unknown with recoverable=true: %+v, want retryable", f)
	}
	// without the flag FTS's errno rule decides: DESTINATION EACCES-like
	// errnos never recover, an unknown errno does
	if f := fts.Classify("SOURCE [36] name too long", nil); f.Class != state.ClassUnsupported || f.Retryable {
		t.Fatalf("SOURCE ENAMETOOLONG: %+v", f)
	}
	if f := fts.Classify("TRANSFER [12] Cannot allocate memory", nil); f.Class != state.ClassUnknown || !f.Retryable {
		t.Fatalf("TRANSFER ENOMEM: %+v", f)
	}
	// a known class keeps its policy whatever the flag says
	if f := fts.Classify("SOURCE [2] Result HTTP 404 : File not found  after 1 attempts", &yes); f.Retryable {
		t.Fatalf("source_missing with recoverable=true: %+v, want not retryable", f)
	}
}

func TestErrorClass_DestinationOurs(t *testing.T) {
	for _, c := range state.ErrorClasses {
		want := c != state.ClassDestinationExists && c != state.ClassQueueExpired && c != state.ClassDestinationBusy && c != state.ClassSameFile
		if got := c.DestinationOurs(); got != want {
			t.Errorf("%s.DestinationOurs() = %v, want %v", c, got, want)
		}
	}
}

func FuzzParseReason(f *testing.F) {
	for _, r := range readCorpus(f) {
		f.Add(r.reason)
	}
	f.Add("SOURCE [")
	f.Add("GENERAL_FAILURE [0]")
	f.Add("SOURCE error during X phase: [")
	f.Fuzz(func(t *testing.T, s string) {
		r := fts.ParseReason(s)
		c := fts.Classify(s, nil)
		if !c.Class.Valid() {
			t.Fatalf("Classify(%q) gave %q, not a class", s, c.Class)
		}
		if c.Reason != r {
			t.Fatalf("Classify and ParseReason disagree on %q", s)
		}
		if r.Errno < 0 || r.Errno > 999999 || r.HTTPStatus < 0 || r.HTTPStatus > 999 || r.CurlCode < 0 || r.CurlCode > 9999 {
			t.Fatalf("ParseReason(%q) = %+v: a code out of range", s, r)
		}
		if r.Scope == "" && (r.Errno != 0 || r.Category != "") {
			t.Fatalf("ParseReason(%q) = %+v: an errno or category without a scope", s, r)
		}
		if utf8.ValidString(s) && !utf8.ValidString(r.Message) {
			t.Fatalf("ParseReason(%q) cut a valid string into invalid UTF-8 %q", s, r.Message)
		}
		if !strings.Contains(s, r.Message) {
			t.Fatalf("ParseReason(%q): message %q is not part of the reason", s, r.Message)
		}
		// classification depends on the reason alone
		if again := fts.Classify(s, nil); again != c {
			t.Fatalf("Classify(%q) is not deterministic", s)
		}
	})
}

func TestParseStatus_Recoverable(t *testing.T) {
	body := []byte(`{"job_id":"j","job_state":"FAILED","http_status":"200 Ok","files":[
		{"file_id":1,"file_state":"FAILED","reason":"TRANSFER [5] x","recoverable":true},
		{"file_id":2,"file_state":"FAILED","reason":"TRANSFER [5] x","recoverable":false},
		{"file_id":3,"file_state":"FAILED","reason":"TRANSFER [5] x","recoverable":null},
		{"file_id":4,"file_state":"FAILED","reason":"TRANSFER [5] x"},
		{"file_id":5,"file_state":"FAILED","reason":"TRANSFER [5] x","recoverable":0}]}`)
	sts, err := fts.ParseStatusReply(body, []string{"j"})
	if err != nil || len(sts) != 1 || sts[0].Err != nil {
		t.Fatalf("ParseStatusReply: %v %+v", err, sts)
	}
	show := func(p *bool) string {
		if p == nil {
			return "nil"
		}
		return strconv.FormatBool(*p)
	}
	want := []string{"true", "false", "nil", "nil", "false"}
	for i, f := range sts[0].Files {
		if got := show(f.Recoverable); got != want[i] {
			t.Errorf("file %d: recoverable %s, want %s", f.FileID, got, want[i])
		}
	}
}
