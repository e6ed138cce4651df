package cmd_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/state"
)

const requestsDir = "../testdata/requests/"

// statusOf returns `aso status --json` for args (e.g. --all-users).
func statusOf(t testing.TB, st string, args ...string) map[string]any {
	t.Helper()
	r := aso(t, append([]string{st, "--log-level", "warn", "status", "--json"}, args...)...).wantCode(t, 0)
	var m map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r.stdout)
	}
	return m
}

// count reads by_state[s] of a status --json document.
func count(t testing.TB, status map[string]any, s state.State) int {
	t.Helper()
	bs, ok := status["by_state"].(map[string]any)
	if !ok {
		t.Fatalf("status has no by_state: %v", status)
	}
	n, ok := bs[string(s)].(float64)
	if !ok {
		t.Fatalf("by_state lacks %s: %v", s, bs)
	}
	return int(n)
}

// unknownID is a well-formed transfer ID that no test enqueues.
var unknownID = state.TransferID("nobody", "X", "/x", "Y", "/y")

// wantCounts fails the test unless status counts want transfers in each
// state of want.
func wantCounts(t testing.TB, status map[string]any, want map[state.State]int) {
	t.Helper()
	for s, n := range want {
		if got := count(t, status, s); got != n {
			t.Errorf("%s: %d, want %d", s, got, n)
		}
	}
}

// requestLines reads a JSON-lines request file, keyed by line number.
func requestLines(t testing.TB, name string) map[int]string {
	t.Helper()
	b, err := os.ReadFile(requestsDir + name)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for i, l := range strings.Split(string(b), "\n") {
		out[i+1] = l
	}
	return out
}

// idOfLine returns the transfer ID of a valid request line.
func idOfLine(t testing.TB, line string) string {
	t.Helper()
	var r state.Request
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatalf("line %q: %v", line, err)
	}
	return r.ID()
}

func TestEnqueue_JSONLinesFileAndIdempotentReenqueue(t *testing.T) {
	st := newState(t)
	r := aso(t, st, "enqueue", "-v", "-f", requestsDir+"good.jsonl").wantCode(t, 0)
	lines := requestLines(t, "good.jsonl")
	for n := 1; n <= 4; n++ {
		if want := fmt.Sprintf("line %d: stored %s\n", n, idOfLine(t, lines[n])); !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.HasSuffix(r.stdout, "4 stored, 0 already queued, 0 rejected\n") {
		t.Errorf("summary: %q", r.stdout)
	}
	if got := statusOf(t, st, "--all-users"); got["total"] != 4.0 || count(t, got, state.StateNew) != 4 {
		t.Errorf("after enqueue: total %v, new %d; want 4, 4", got["total"], count(t, got, state.StateNew))
	}

	r = aso(t, st, "enqueue", "-v", "--file", requestsDir+"good.jsonl").wantCode(t, 0)
	if want := fmt.Sprintf("line 2: already queued %s\n", idOfLine(t, lines[2])); !strings.Contains(r.stdout, want) {
		t.Errorf("re-enqueue: stdout lacks %q:\n%s", want, r.stdout)
	}
	if !strings.HasSuffix(r.stdout, "0 stored, 4 already queued, 0 rejected\n") {
		t.Errorf("re-enqueue summary: %q", r.stdout)
	}
	if got := statusOf(t, st, "--all-users"); got["total"] != 4.0 {
		t.Errorf("after re-enqueue: total %v, want 4", got["total"])
	}
	r = aso(t, st, "enqueue", "-f", requestsDir+"good.jsonl").wantCode(t, 0)
	if r.stdout != "0 stored, 4 already queued, 0 rejected\n" {
		t.Errorf("without -v, want only the summary, got %q", r.stdout)
	}
}

func TestEnqueue_ArrayFromStdin(t *testing.T) {
	st := newState(t)
	f, err := os.Open(requestsDir + "good.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := invocation{stdin: f}.run(t, st, "enqueue", "-v").wantCode(t, 0)
	r.wantStdout(t,
		"element 0 (line 2): stored "+state.TransferID("carol", "T2_UK_London_IC", "/store/temp/user/carol/a.root", "T1_UK_RAL_Disk", "/store/user/carol/a.root"),
		"element 1 (line 11): stored "+state.TransferID("carol", "T2_UK_London_IC", "/store/temp/user/carol/b.root", "T1_UK_RAL_Disk", "/store/user/carol/b.root"),
		"element 2 (line 20): stored ",
		"3 stored, 0 already queued, 0 rejected",
	)
	if got := statusOf(t, st, "--user", "carol"); got["total"] != 3.0 {
		t.Errorf("carol has %v transfers, want 3", got["total"])
	}
}

func TestEnqueue_BadRecordsRejectedGoodOnesStored(t *testing.T) {
	st := newState(t)
	r := aso(t, st, "enqueue", "-f", requestsDir+"mixed.jsonl").wantCode(t, cmd.ExitUsage)
	want := []string{
		`line 2: rejected: unknown field "colour"`,
		`line 3: rejected: checksums.adler32 "xyz": must be 8 hexadecimal digits`,
		`line 5: rejected: source_lfn "store/temp/user/dave/5.root": must be an absolute path`,
		`line 7: rejected: JSON syntax error`,
		`line 8: rejected: field size: got a JSON string, want an integer`,
		`line 9: rejected: size "-10": must be >= 0`,
		`line 10: rejected: source "T2 US MIT": may contain only`,
		`line 11: rejected: not a JSON object`,
		`line 12: rejected: depends_on "abc": not a transfer ID`,
		`line 13: rejected: user "": must not be empty`,
		`line 14: rejected: unexpected "{" after the JSON object`,
		`3 stored, 0 already queued, 11 rejected`,
	}
	got := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(got) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(got), len(want), r.stdout)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("line %d of the report: %q, want it to start with %q", i+1, got[i], want[i])
		}
	}
	if !strings.Contains(r.stderr, "aso: enqueue: 11 record(s) rejected") {
		t.Errorf("stderr %q", r.stderr)
	}
	lines := requestLines(t, "mixed.jsonl")
	for _, n := range []int{1, 6, 15} {
		show := aso(t, st, "status", idOfLine(t, lines[n])).wantCode(t, 0)
		if !regexp.MustCompile(`State:\s+new`).MatchString(show.stdout) {
			t.Errorf("line %d: status shows\n%s", n, show.stdout)
		}
	}
	if got := statusOf(t, st, "--user", "dave"); got["total"] != 3.0 {
		t.Errorf("dave has %v transfers, want 3", got["total"])
	}
}

// TestEnqueue_TransferOntoItsSourceRejected: a request whose destination
// is its source (the same site and LFN) is rejected, its line and the
// fault named, and nothing of it is stored; a request between two LFNs of
// one site, or of one LFN to another site, is stored.
func TestEnqueue_TransferOntoItsSourceRejected(t *testing.T) {
	st := newState(t)
	in := strings.Join([]string{
		`{"user": "erin", "source": "T2_US_MIT", "destination": "T2_US_MIT", "source_lfn": "/store/user/erin/a.root", "destination_lfn": "/store/user/erin/b.root", "size": 1}`,
		`{"user": "erin", "source": "T2_US_MIT", "destination": "T2_US_MIT", "source_lfn": "/store/user/erin/a.root", "destination_lfn": "/store/user/erin/a.root", "size": 1}`,
		`{"user": "erin", "source": "T2_US_MIT", "destination": "T1_US_FNAL", "source_lfn": "/store/user/erin/a.root", "destination_lfn": "/store/user/erin/a.root", "size": 1}`,
	}, "\n")
	r := invocation{stdin: strings.NewReader(in)}.run(t, st, "enqueue", "--json").wantCode(t, cmd.ExitUsage)
	var got []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("enqueue --json: %v\n%s", err, r.stdout)
		}
		got = append(got, m)
	}
	if len(got) != 3 || got[0]["status"] != "stored" || got[2]["status"] != "stored" || got[1]["status"] != "rejected" || got[1]["line"] != 2.0 {
		t.Fatalf("enqueue --json:\n%s", r.stdout)
	}
	if msg, _ := got[1]["error"].(string); !strings.HasPrefix(msg, `destination_lfn "/store/user/erin/a.root": the same file as the source`) {
		t.Errorf("rejection %q does not name the field and the fault", msg)
	}
	if n := statusOf(t, st, "--user", "erin")["total"]; n != 2.0 {
		t.Errorf("erin has %v transfers, want the 2 valid ones", n)
	}
}

func TestEnqueue_ArraySyntaxErrorKeepsEarlierRecords(t *testing.T) {
	st := newState(t)
	r := aso(t, st, "enqueue", "-f", requestsDir+"mixed.json").wantCode(t, cmd.ExitUsage)
	r.wantStdout(t,
		"element 1 (line 3): rejected: unknown field \"prio\"\n",
		"element 2 (line 4): rejected: destination_lfn \"/store/user/erin/../3.root\": must not contain . or .. path elements\n",
		"element 4 (line 13): rejected: JSON syntax error: invalid character '}'",
		"2 stored, 0 already queued, 3 rejected\n",
	)
	if got := statusOf(t, st, "--user", "erin"); got["total"] != 2.0 {
		t.Errorf("erin has %v transfers, want 2 (elements 0 and 3)", got["total"])
	}
}

func TestEnqueue_UserFlagFillsOnlyMissingUsers(t *testing.T) {
	in := `{"size": 1, "source": "T2_A", "destination": "T2_B", "source_lfn": "/a", "destination_lfn": "/a"}
{"size": 1, "user": "zoe", "source": "T2_A", "destination": "T2_B", "source_lfn": "/b", "destination_lfn": "/b"}
`
	st := newState(t)
	r := invocation{stdin: strings.NewReader(in)}.run(t, st, "enqueue").wantCode(t, cmd.ExitUsage)
	if !strings.Contains(r.stdout, `line 1: rejected: user "": must not be empty`) {
		t.Errorf("without --user: %q", r.stdout)
	}
	r = invocation{stdin: strings.NewReader(in), env: map[string]string{"USER": "login"}}.run(t, st, "enqueue", "-v").wantCode(t, cmd.ExitUsage)
	if !strings.Contains(r.stdout, `line 1: rejected: user ""`) {
		t.Errorf("the login name must not fill the user: %q", r.stdout)
	}
	r = invocation{stdin: strings.NewReader(in)}.run(t, st, "--user", "yann", "enqueue", "-v").wantCode(t, 0)
	if want := "line 1: stored " + state.TransferID("yann", "T2_A", "/a", "T2_B", "/a"); !strings.Contains(r.stdout, want) {
		t.Errorf("with --user: stdout lacks %q:\n%s", want, r.stdout)
	}
	if want := "line 2: already queued " + state.TransferID("zoe", "T2_A", "/b", "T2_B", "/b"); !strings.Contains(r.stdout, want) {
		t.Errorf("with --user, zoe's request must stay zoe's: stdout lacks %q:\n%s", want, r.stdout)
	}
}

func TestEnqueue_DuplicatesAndOverlongLines(t *testing.T) {
	req := `{"size": 1, "user": "uma", "source": "T2_A", "destination": "T2_B", "source_lfn": "/x", "destination_lfn": "/x"}`
	long := `{"size": 1, "user": "uma", "source": "T2_A", "destination": "T2_B", "source_lfn": "/` + strings.Repeat("y", 2<<20) + `", "destination_lfn": "/y"}`
	in := req + "\n" + req + "\n" + long + "\n" + strings.Replace(req, "/x", "/z", 2) + "\n"
	r := invocation{stdin: strings.NewReader(in)}.run(t, newState(t), "enqueue", "-v").wantCode(t, cmd.ExitUsage)
	r.wantStdout(t,
		"line 1: stored ", "line 2: already queued ",
		"line 3: rejected: longer than 1048576 bytes", "line 4: stored ",
		"2 stored, 1 already queued, 1 rejected",
	)
}

// TestEnqueue_LargeArrayLineNumbers: line numbers stay right across many
// reads of the decoder and several store batches.
func TestEnqueue_LargeArrayLineNumbers(t *testing.T) {
	var in strings.Builder
	in.WriteString("[\n")
	for i := range 3000 {
		size := i
		if i == 2500 {
			size = -1
		}
		sep := ",\n"
		if i == 2999 {
			sep = "\n"
		}
		fmt.Fprintf(&in, `  {"user": "u", "source": "A", "destination": "B", "source_lfn": "/a/%d", "destination_lfn": "/b/%d", "size": %d}%s`, i, i, size, sep)
	}
	in.WriteString("]\n")
	r := invocation{stdin: strings.NewReader(in.String())}.run(t, newState(t), "enqueue").wantCode(t, cmd.ExitUsage)
	if want := "element 2500 (line 2502): rejected: size \"-1\": must be >= 0\n2999 stored, 0 already queued, 1 rejected\n"; r.stdout != want {
		t.Errorf("stdout %q, want %q", r.stdout, want)
	}
}

func TestEnqueue_ByteOrderMarkIsSkipped(t *testing.T) {
	for name, in := range map[string]string{
		"array":      "\ufeff [" + `{"size": 1, "user": "u", "source": "A", "destination": "B", "source_lfn": "/a", "destination_lfn": "/a"}]`,
		"JSON lines": "\ufeff" + `{"size": 1, "user": "u", "source": "A", "destination": "B", "source_lfn": "/a", "destination_lfn": "/a"}`,
	} {
		r := invocation{stdin: strings.NewReader(in)}.run(t, newState(t), "enqueue").wantCode(t, 0)
		if r.stdout != "1 stored, 0 already queued, 0 rejected\n" {
			t.Errorf("%s with a byte order mark: %q", name, r.stdout)
		}
	}
}

func TestEnqueue_MissingFileIsAUsageError(t *testing.T) {
	r := aso(t, newState(t), "enqueue", "-f", filepath.Join(t.TempDir(), "nope.json")).wantCode(t, cmd.ExitUsage)
	if !strings.Contains(r.stderr, "nope.json") {
		t.Errorf("stderr %q, want the file named", r.stderr)
	}
}

// TestEnqueue_SourceThroughALinkedRoot is issue 43's case 5 from the
// command line: the destination site's root is a symbolic link to the
// source site's root. With the sites file, enqueue rejects the request
// that names its source through the link; without it the request is
// stored, and `aso run --overwrite` fails it as same_file without
// submitting it: the source stays, with a wrong checksum too.
func TestEnqueue_SourceThroughALinkedRoot(t *testing.T) {
	sites, requests, dstUser := localSites(t, 1)
	src := strings.TrimSuffix(dstUser, "/dst/store/user/bob") + "/src"
	if err := os.Symlink(src, filepath.Dir(filepath.Dir(filepath.Dir(dstUser)))); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(requests)
	if err != nil {
		t.Fatal(err)
	}
	var req map[string]any
	if err := json.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	req["destination_lfn"] = req["source_lfn"]
	req["checksums"] = map[string]string{"adler32": "00000001"}
	line, _ := json.Marshal(req)
	srcFile := filepath.Join(src, req["source_lfn"].(string))
	data, err := os.ReadFile(srcFile)
	if err != nil {
		t.Fatal(err)
	}
	st := newState(t)
	r := invocation{stdin: bytes.NewReader(line)}.run(t, st, "enqueue", "--sites", sites).wantCode(t, 64)
	wantMatch(t, r.stdout, `line 1: rejected: source and destination may be one file \(.*T2_XX_A is file://.*T1_XX_B is file://.*\)`)
	invocation{stdin: bytes.NewReader(line)}.run(t, st, "enqueue").wantCode(t, 0)
	aso(t, "run", st, "--user", "bob", "--sites", sites, "--overwrite", "--interval", "20ms", "--progress", "never")
	out := aso(t, "list", st, "--user", "bob", "--json").wantCode(t, 0)
	wantMatch(t, out.stdout, `"state":"failed"`, `"error_class":"same_file"`)
	if got, err := os.ReadFile(srcFile); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the source was deleted or changed: %d bytes, %v", len(got), err)
	}
}

// TestEnqueue_SameFileByTheCatalogue: two sites of one storage, named in
// the sites file with other protocols, ports and LFN prefixes: a request
// whose source and destination LFNs the catalogue resolves to one file is
// rejected at enqueue, naming both PFNs, and nothing of it is stored; a
// request for another file of the same sites is stored.
func TestEnqueue_SameFileByTheCatalogue(t *testing.T) {
	sites := filepath.Join(t.TempDir(), "sites.yaml")
	body := "T2_XX_A:\n  protocol: root\n  rules:\n    - path-match: /store/(.*)\n      result: root://eos.example.org//eos/cms/store/$1\n" +
		"T2_XX_B:\n  protocol: davs\n  rules:\n    - path-match: /store/user/(.*)\n      result: davs://eos.example.org:443/eos/cms/./store/temp/$1\n"
	if err := os.WriteFile(sites, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	req := func(dstLFN string) string {
		b, _ := json.Marshal(map[string]any{"user": "bob", "source": "T2_XX_A", "destination": "T2_XX_B",
			"source_lfn": "/store/temp/bob/f.root", "destination_lfn": dstLFN, "size": 10})
		return string(b) + "\n"
	}
	st := newState(t)
	r := invocation{stdin: strings.NewReader(req("/store/user/bob/f.root") + req("/store/user/bob/g.root"))}.
		run(t, st, "enqueue", "--sites", sites).wantCode(t, 64)
	wantMatch(t, r.stdout, `line 1: rejected: source and destination may be one file \(/store/temp/bob/f.root at T2_XX_A is root://eos.example.org//eos/cms/store/temp/bob/f.root, `+
		`/store/user/bob/f.root at T2_XX_B is davs://eos.example.org:443/eos/cms/./store/temp/bob/f.root\)`, `1 stored, 0 already queued, 1 rejected`)
	out := aso(t, "list", st, "--user", "bob", "--json").wantCode(t, 0)
	if strings.Contains(out.stdout, `"destination_lfn":"/store/user/bob/f.root"`) || !strings.Contains(out.stdout, `"destination_lfn":"/store/user/bob/g.root"`) {
		t.Errorf("aso list: %s; want only the request for another file stored", out.stdout)
	}
}
