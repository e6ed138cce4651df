package state_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
)

func validRequest() state.Request {
	return state.Request{
		User: "alice", Group: "/cms/escms", Role: "production",
		Source: "T2_US_Nebraska", Destination: "T1_DE_KIT",
		SourceLFN: "/store/temp/user/alice/out_1.root", DestinationLFN: "/store/user/alice/out_1.root",
		Size: 1234, Checksums: map[string]string{"adler32": "0a1B2c3D"}, Priority: 3,
		DependsOn: []string{strings.Repeat("ab", 32)},
	}
}

func TestRequestValidate_Valid(t *testing.T) {
	r := validRequest()
	if err := r.Validate(); err != nil {
		t.Fatalf("valid request rejected: %v", err)
	}
	r.Checksums, r.DependsOn, r.Group, r.Role, r.Size = nil, nil, "", "", 0
	if err := r.Validate(); err != nil {
		t.Fatalf("minimal request rejected: %v", err)
	}
	same := validRequest()
	same.Destination = same.Source
	if err := same.Validate(); err != nil {
		t.Fatalf("a transfer within one site, to another LFN, rejected: %v", err)
	}
	same = validRequest()
	same.DestinationLFN = same.SourceLFN
	if err := same.Validate(); err != nil {
		t.Fatalf("a transfer of one LFN to another site rejected: %v", err)
	}
}

func TestRequestValidate_Invalid(t *testing.T) {
	self := validRequest()
	selfID := self.ID()
	cases := []struct {
		name   string
		edit   func(r *state.Request)
		field  string
		value  string
		reason string
	}{
		{"empty user", func(r *state.Request) { r.User = "" }, "user", "", "empty"},
		{"user too long", func(r *state.Request) { r.User = strings.Repeat("u", 129) }, "user", strings.Repeat("u", 129), "128"},
		{"site with a space", func(r *state.Request) { r.Source = "T2 US" }, "source", "T2 US", "letters"},
		{"site with non-ASCII", func(r *state.Request) { r.Destination = "T1_DÉ_KIT" }, "destination", "T1_DÉ_KIT", "ASCII"},
		{"empty destination", func(r *state.Request) { r.Destination = "" }, "destination", "", "empty"},
		{"group with a quote", func(r *state.Request) { r.Group = `cms"` }, "group", `cms"`, "letters"},
		{"relative LFN", func(r *state.Request) { r.SourceLFN = "store/x.root" }, "source_lfn", "store/x.root", "absolute"},
		{"empty LFN", func(r *state.Request) { r.DestinationLFN = "" }, "destination_lfn", "", "empty"},
		{"dot-dot", func(r *state.Request) { r.DestinationLFN = "/store/../etc/passwd" }, "destination_lfn", "/store/../etc/passwd", ".."},
		{"dot", func(r *state.Request) { r.SourceLFN = "/store/./x" }, "source_lfn", "/store/./x", "."},
		{"trailing dot-dot", func(r *state.Request) { r.SourceLFN = "/store/.." }, "source_lfn", "/store/..", ".."},
		{"empty element", func(r *state.Request) { r.SourceLFN = "/store//x" }, "source_lfn", "/store//x", "//"},
		{"newline", func(r *state.Request) { r.SourceLFN = "/store/a\nb" }, "source_lfn", "/store/a\nb", "control"},
		{"URL query", func(r *state.Request) { r.SourceLFN = "/store/a?b=1" }, "source_lfn", "/store/a?b=1", "query"},
		{"URL fragment", func(r *state.Request) { r.DestinationLFN = "/store/a#b" }, "destination_lfn", "/store/a#b", "fragment"},
		{"URL escape", func(r *state.Request) { r.DestinationLFN = "/store/a%20b" }, "destination_lfn", "/store/a%20b", "escape"},
		{"NUL", func(r *state.Request) { r.DestinationLFN = "/store/a\x00b" }, "destination_lfn", "/store/a\x00b", "control"},
		{"DEL", func(r *state.Request) { r.DestinationLFN = "/store/a\x7fb" }, "destination_lfn", "/store/a\x7fb", "control"},
		{"invalid UTF-8", func(r *state.Request) { r.SourceLFN = "/store/\xff" }, "source_lfn", "/store/\xff", "UTF-8"},
		{"LFN too long", func(r *state.Request) { r.SourceLFN = "/" + strings.Repeat("a", 4096) }, "source_lfn", "/" + strings.Repeat("a", 4096), "4096"},
		{"same site and LFN", func(r *state.Request) { r.Destination, r.DestinationLFN = r.Source, r.SourceLFN }, "destination_lfn", validRequest().SourceLFN, "same file as the source"},
		{"negative size", func(r *state.Request) { r.Size = -1 }, "size", "-1", ">= 0"},
		{"adler32 too short", func(r *state.Request) { r.Checksums = map[string]string{"adler32": "abc"} }, "checksums.adler32", "abc", "8 hex"},
		{"adler32 not hex", func(r *state.Request) { r.Checksums = map[string]string{"adler32": "0a1b2c3g"} }, "checksums.adler32", "0a1b2c3g", "8 hex"},
		{"adler32 too long", func(r *state.Request) { r.Checksums = map[string]string{"adler32": "0a1b2c3d4"} }, "checksums.adler32", "0a1b2c3d4", "8 hex"},
		{"unknown algorithm", func(r *state.Request) { r.Checksums = map[string]string{"md5": "00"} }, "checksums", "md5", "unknown"},
		{"activity too high", func(r *state.Request) { r.Activity = 64 }, "activity", "64", "0..63"},
		{"activity negative", func(r *state.Request) { r.Activity = -1 }, "activity", "-1", "0..63"},
		{"adler32 given twice", func(r *state.Request) {
			r.Checksums = map[string]string{"adler32": "0a1b2c3d", "ADLER32": "ffffffff"}
		}, "checksums", "adler32", "twice"},
		{"bad dependency", func(r *state.Request) { r.DependsOn = []string{"abc"} }, "depends_on", "abc", "transfer ID"},
		{"upper-case dependency", func(r *state.Request) { r.DependsOn = []string{strings.Repeat("AB", 32)} }, "depends_on", strings.Repeat("AB", 32), "transfer ID"},
		{"self-dependency", func(r *state.Request) { r.DependsOn = []string{selfID} }, "depends_on", selfID, "itself"},
		{"too many dependencies", func(r *state.Request) {
			r.DependsOn = make([]string, state.MaxDependsOn+1)
		}, "depends_on", "1001 IDs", "too many"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := validRequest()
			c.edit(&r)
			err := r.Validate()
			var ve *state.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate: %v, want a *ValidationError", err)
			}
			if ve.Field != c.field || ve.Value != c.value || !strings.Contains(ve.Reason, c.reason) {
				t.Fatalf("got field %q value %q reason %q; want field %q value %q reason mentioning %q", ve.Field, ve.Value, ve.Reason, c.field, c.value, c.reason)
			}
			if !errors.Is(err, state.ErrInvalid) {
				t.Fatalf("%v does not wrap ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), c.field) {
				t.Fatalf("message %q does not name the field", err)
			}
		})
	}
}

func TestValidationError_TruncatesLongValues(t *testing.T) {
	err := &state.ValidationError{Field: "source_lfn", Value: strings.Repeat("x", 5000), Reason: "too long"}
	if n := len(err.Error()); n > 200 {
		t.Fatalf("message of %d bytes", n)
	}
}

func TestNewTransfer(t *testing.T) {
	r := validRequest()
	now := time.Date(2026, 3, 4, 5, 6, 7, 891011121, time.FixedZone("X", 3600))
	tr := state.NewTransfer(r, now, "cli")
	if tr.ID != r.ID() || tr.State != state.StateNew || tr.Type != state.DocType || tr.User != "alice" {
		t.Fatalf("transfer %+v", tr)
	}
	if got, want := tr.Checksum(), "0a1b2c3d"; got != want {
		t.Fatalf("checksum %q, want %q", got, want)
	}
	if want := state.At(now); !tr.Created.Equal(want.Time) || tr.Created.Location() != time.UTC || tr.Created.Nanosecond()%1000 != 0 {
		t.Fatalf("created %v, want %v in UTC to the microsecond", tr.Created, want)
	}
	if len(tr.History) != 1 || tr.History[0].To != state.StateNew || tr.History[0].By != "cli" {
		t.Fatalf("history %+v", tr.History)
	}
	r.DependsOn[0] = strings.Repeat("cd", 32)
	if tr.DependsOn[0] == r.DependsOn[0] {
		t.Fatal("the transfer shares depends_on with the request")
	}
	if err := tr.Validate(); err != nil {
		t.Fatalf("a new transfer does not validate: %v", err)
	}
	if got := tr.Request(); got.ID() != tr.ID {
		t.Fatalf("Request() has ID %s, want %s", got.ID(), tr.ID)
	}
}

func TestTransferValidate(t *testing.T) {
	base := state.NewTransfer(validRequest(), time.Now(), "cli")
	cases := []struct {
		name  string
		edit  func(tr *state.Transfer)
		field string
	}{
		{"type", func(tr *state.Transfer) { tr.Type = "lock" }, "type"},
		{"request field", func(tr *state.Transfer) { tr.Size = -5 }, "size"},
		{"id", func(tr *state.Transfer) { tr.DestinationLFN = "/store/other" }, "_id"},
		{"state", func(tr *state.Transfer) { tr.State = "running" }, "state"},
		{"attempts", func(tr *state.Transfer) { tr.Attempts = -1 }, "attempts"},
		{"acquired without owner", func(tr *state.Transfer) { tr.State = state.StateAcquired }, "owner"},
		{"submitted without job", func(tr *state.Transfer) { tr.State = state.StateSubmitted }, "fts_job"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := base
			c.edit(&tr)
			var ve *state.ValidationError
			if err := tr.Validate(); !errors.As(err, &ve) || ve.Field != c.field {
				t.Fatalf("Validate: %v, want an error naming %s", err, c.field)
			}
		})
	}
}
