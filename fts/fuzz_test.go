package fts_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/asyncstageout/aso/fts"
)

// The seed corpus is in testdata/fuzz/<FuzzName>/; the golden replies
// (fts/testdata and the shared testdata/fts) are added here too.

var fuzzIDs = []string{jobActive, jobLost, jobOther, "x"}

func FuzzParseStatus(f *testing.F) {
	for _, name := range []string{"status_job.json", "status_207.json", "cancel_207.json"} {
		f.Add(golden(f, name))
	}
	for _, name := range []string{"job.json", "bulk_207.json", "not_found.json", "cancel_200.json", "cancel_304.json"} {
		f.Add(shared(f, name))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		sts, err := fts.ParseStatusReply(body, fuzzIDs)
		if err != nil {
			if sts != nil {
				t.Fatalf("statuses %v returned with error %v", sts, err)
			}
			return
		}
		if len(sts) != len(fuzzIDs) {
			t.Fatalf("%d statuses for %d ids", len(sts), len(fuzzIDs))
		}
		for i, st := range sts {
			switch {
			case st.JobID != fuzzIDs[i]:
				t.Fatalf("status %d is for %q, want %q", i, st.JobID, fuzzIDs[i])
			case st.Lost && (st.Err != nil || st.State != ""):
				t.Fatalf("lost job %+v has a state or an error", st)
			case !st.Lost && st.Err == nil && st.State == "":
				t.Fatalf("job %+v has neither state, error nor lost", st)
			case st.Err != nil && len(st.Files) > 0:
				t.Fatalf("failed job %+v has files", st)
			}
			for _, file := range st.Files {
				_ = file.TransferID() // must not panic on any metadata
			}
		}
	})
}

func FuzzParseError(f *testing.F) {
	for _, name := range []string{"error_404.html", "error_503.html"} {
		f.Add(golden(f, name))
	}
	for _, name := range []string{"forbidden_403.html", "unavailable_503.html", "conflict_409.json", "delegation_419.json", "not_found.json"} {
		f.Add(shared(f, name))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		msg := fts.ErrorMessage(body)
		switch {
		case len(msg) > fts.MaxMessage:
			t.Fatalf("message of %d bytes, limit %d", len(msg), fts.MaxMessage)
		case !utf8.ValidString(msg):
			t.Fatalf("message %q is not UTF-8", msg)
		case strings.ContainsAny(msg, "\r\n\t"):
			t.Fatalf("message %q spans lines", msg)
		case msg != strings.TrimSpace(msg):
			t.Fatalf("message %q has surrounding space", msg)
		}
	})
}
