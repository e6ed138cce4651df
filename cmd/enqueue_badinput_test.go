package cmd_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
)

// badLines are the kinds of bad record spread through the large input:
// each is a line template (%d is the line number, to keep lines distinct)
// and what its rejection must say.
var badLines = []struct{ line, want string }{
	{`{"user": "big", "source": "T2_A", "destination": "T1_B", "source_lfn": "/s/%d", "destination_lfn": "/d/%d", "size": "10"}`, "field size: got a JSON string, want an integer"},
	{`{"user": "big", "source": "T2_A", "destination": "T1_B", "source_lfn": "/s/%d", "destination_lfn": "/d/%d", "size": 9223372036854775808}`, "field size: got a JSON number 9223372036854775808, want an integer"},
	{`{"user": "big", "source": "T2_A", "destination": "T1_B", "source_lfn": "/s/%d", "destination_lfn": "/d/%d", "size": -1}`, `size "-1": must be >= 0`},
	{`{"user": "big", "source": "T2_A", "destination": "T1_B", "source_lfn": "/s/%d", "destination_lfn": "/d/%d", "size": 1.5}`, "field size: got a JSON number 1.5, want an integer"},
	{`{"size": 1, "user": "big", "source": "T2_A", "destination": "T1_B", "source_lfn": "/s/../%d", "destination_lfn": "/d/%d"}`, "source_lfn \"/s/../"},
	{`{"size": 1, "user": "big", "source": "T2_A", "destination": "T1_B", "source_lfn": "/s/%d\nx", "destination_lfn": "/d/%d"}`, "contains a control character"},
	{`{"size": 1, "user": "big", "source": "T2_A;rm", "destination": "T1_B", "source_lfn": "/s/%d", "destination_lfn": "/d/%d"}`, `source "T2_A;rm": may contain only`},
	{`{"size": 1, "user": "big", "source": "T2_A", "destination": "T1_B", "source_lfn": "/s/%d", "destination_lfn": "/d/%d", "checksums": {"adler32": "zz"}}`, "checksums.adler32"},
	{`{"size": 1, "user": "big", "source": "T2_A", "destination": "T1_B", "source_lfn": "/s/%d", "destination_lfn": "/d/%d", "colour": "red"}`, `unknown field "colour"`},
	{`{"size": 1, "user": "big", "source": "T2_A", "destination": "T1_B", "source_lfn": "/s/%d", "destination_lfn": "/d/%d"`, "JSON syntax error"},
	{`["/s/%d", "/d/%d"]`, "not a JSON object"},
}

// mixedStream generates n JSON lines, line i bad when i%every == every/2
// (cycling through badLines), the good ones cycling through distinct
// requests, without holding the input in memory. It samples the heap in
// use every MiB read.
type mixedStream struct {
	n, every, distinct, i int
	good                  int            // good lines generated so far
	bad                   map[int]string // line -> expected rejection
	sampledBuffer
}

func (s *mixedStream) Read(p []byte) (int, error) {
	for len(s.buf) < len(p) && s.i < s.n {
		s.i++ // 1-based line number
		if s.i%s.every == s.every/2 {
			b := badLines[(s.i/s.every)%len(badLines)]
			s.buf = fmt.Appendf(s.buf, b.line+"\n", s.i, s.i)
			s.bad[s.i] = b.want
			continue
		}
		k := s.good % s.distinct
		s.good++
		s.buf = fmt.Appendf(s.buf, `{"user": "big", "source": "T2_US_Nebraska", "destination": "T1_US_FNAL_Disk", "source_lfn": "/store/temp/user/big/f_%07d.root", "destination_lfn": "/store/user/big/f_%07d.root", "size": %d, "checksums": {"adler32": "%08x"}}`+"\n", k, k, k, k)
	}
	return s.emit(p)
}

// rejections reads aso's standard output as it is written and keeps the
// rejected line numbers and texts, and the other lines.
type rejections struct {
	w      *io.PipeWriter
	done   chan struct{}
	lines  map[int]string
	others []string
}

var rejectedLine = regexp.MustCompile(`^line (\d+): rejected: (.*)$`)

func newRejections() *rejections {
	r, w := io.Pipe()
	rj := &rejections{w: w, done: make(chan struct{}), lines: map[int]string{}}
	go func() {
		defer close(rj.done)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if m := rejectedLine.FindStringSubmatch(sc.Text()); m != nil {
				n, _ := strconv.Atoi(m[1])
				rj.lines[n] = m[2]
				continue
			}
			rj.others = append(rj.others, sc.Text())
		}
	}()
	return rj
}

func (rj *rejections) Write(p []byte) (int, error) { return rj.w.Write(p) }

func (rj *rejections) close() { rj.w.Close(); <-rj.done }

// TestEnqueue_MillionLinesWithBadOnes: a large JSON-lines input with 1%
// bad lines spread through it is streamed (the heap stays far below the
// input's size), every bad line is reported with its number and a reason
// naming the field, and every good line is stored or found already
// queued. 50,000 lines by default; ASO_TEST_LARGE=1 (make enqueue-large)
// runs 1,000,000.
func TestEnqueue_MillionLinesWithBadOnes(t *testing.T) {
	n := 50_000
	if os.Getenv("ASO_TEST_LARGE") == "1" {
		n = 1_000_000
	}
	const distinct = 200
	in := &mixedStream{n: n, every: 100, distinct: distinct, bad: map[int]string{}}
	st, path := stateFile(t)
	defer debug.SetGCPercent(debug.SetGCPercent(20))
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	out := newRejections()
	var stderr strings.Builder
	start := time.Now()
	code := cmd.ExecuteWith(context.Background(), []string{st, "--user", "big", "--log-level", "warn", "enqueue"},
		cmd.Env{Stdin: in, Stdout: out, Stderr: &stderr, LookupEnv: func(string) (string, bool) { return "", false }})
	out.close()
	t.Logf("%d lines, %d MiB, in %s; heap in use grew by at most %.1f MiB", n, in.read>>20, time.Since(start).Round(time.Millisecond),
		float64(int64(in.peak)-int64(before.HeapInuse))/(1<<20))
	if code != cmd.ExitUsage {
		t.Fatalf("exit code %d, want 64 (records rejected); stderr %s", code, stderr.String())
	}
	for line, want := range in.bad {
		got, ok := out.lines[line]
		if !ok {
			t.Errorf("bad line %d was not reported", line)
		} else if !strings.Contains(got, want) {
			t.Errorf("line %d: rejected with %q, want %q", line, got, want)
		}
	}
	if len(out.lines) != len(in.bad) {
		t.Errorf("%d lines reported rejected, want the %d bad ones", len(out.lines), len(in.bad))
	}
	good := n - len(in.bad)
	if want := fmt.Sprintf("%d stored, %d already queued, %d rejected", distinct, good-distinct, len(in.bad)); len(out.others) != 1 || out.others[0] != want {
		t.Errorf("summary %q, want %q", out.others, want)
	}
	// the store's own documents and the report take a few MiB whatever the input's size
	if grew, limit := int64(in.peak)-int64(before.HeapInuse), 4<<20+in.read/10; grew > limit {
		t.Errorf("heap in use grew by %d bytes while reading %d: want under %d (streamed)", grew, in.read, limit)
	}
	s, err := memfile.Open(path, state.Config{Agent: state.Agent{User: "big", Owner: "test"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sum, err := s.Summary(context.Background(), state.SummaryOptions{User: "big"})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Total != distinct || sum.ByState[state.StateNew] != distinct || len(sum.Invalid) != 0 {
		t.Errorf("store holds %d transfers (%v), %d invalid; want the %d distinct good requests, new", sum.Total, sum.ByState, len(sum.Invalid), distinct)
	}
}

// hostileCase is one request line and what enqueue must make of it: stored
// with its values kept byte for byte, or rejected with a reason.
type hostileCase struct {
	name, line string
	reject     string // "" = stored
}

func hostileCases() []hostileCase {
	req := func(extra string, lfn string) string {
		q, _ := json.Marshal(lfn)
		if !strings.Contains(extra, `"size"`) {
			extra += `, "size": 1`
		}
		return `{"user": "hal", "source": "T2_A", "destination": "T1_B", "source_lfn": ` + string(q) + `, "destination_lfn": "/d/` + strconv.Itoa(len(lfn)) + `"` + extra + `}`
	}
	long := "/" + strings.Repeat("x", state.MaxLFNLen-1)
	return []hostileCase{
		{"semicolon quotes spaces", req("", `/store/a b;c'd"e $(rm -rf /) `+"`id`"+`.root`), ""},
		{"unicode", req("", "/store/ünï/😀/файл.root"), ""},
		{"longest LFN", req("", long), ""},
		{"LFN one byte too long", req("", long+"y"), "longer than 4096 bytes"},
		{"dot dot", req("", "/store/../../etc/passwd"), "must not contain . or .. path elements"},
		{"dot", req("", "/store/./x"), "must not contain . or .. path elements"},
		{"newline", req("", "/store/a\nb"), "contains a control character"},
		{"NUL", req("", "/store/a\x00b"), "contains a control character"},
		{"relative", req("", "store/a"), "must be an absolute path"},
		{"invalid UTF-8", strings.Replace(req("", "/store/a-b"), "a-b", "a\xffb", 1), "not valid UTF-8 at byte 80 of the record"},
		{"size int64 max", req(`, "size": 9223372036854775807`, "/s/max"), ""},
		{"size over int64", req(`, "size": 9223372036854775808`, "/s/over"), "field size"},
		{"size huge", req(`, "size": 1e400`, "/s/huge"), "field size"},
		{"size negative", req(`, "size": -9223372036854775808`, "/s/neg"), `size "-9223372036854775808": must be >= 0`},
		{"size float", req(`, "size": 0.5`, "/s/float"), "field size"},
		{"size string", req(`, "size": "1"`, "/s/str"), "field size: got a JSON string"},
		{"size null", req(`, "size": null`, "/s/null"), "field size: missing"},
		{"size missing", strings.Replace(req("", "/s/none"), `, "size": 1`, "", 1), "field size: missing"},
		{"key twice", req(`, "source": "T2_C"`, "/s/twice"), `key "source" given twice`},
		{"nested key twice", req(`, "checksums": {"adler32": "0000000a", "adler32": "0000000b"}`, "/s/twice2"), `key "adler32" given twice`},
		{"priority over int32", req(`, "priority": 2147483648`, "/s/prio"), "priority"},
		{"user with semicolon", strings.Replace(req("", "/s/u"), `"hal"`, `"hal;id"`, 1), `user "hal;id": not a user name`},
		{"depends_on not an ID", req(`, "depends_on": ["../x"]`, "/s/dep"), "depends_on"},
		{"checksum wrong type", req(`, "checksums": {"adler32": 12}`, "/s/ck"), "field checksums"},
	}
}

// TestEnqueue_HostileValues: every hostile value gets a clear rejection
// naming its field, or is stored exactly as given; one never affects the
// others.
func TestEnqueue_HostileValues(t *testing.T) {
	cases := hostileCases()
	var in strings.Builder
	for _, c := range cases {
		in.WriteString(c.line + "\n")
	}
	st, path := stateFile(t)
	r := invocation{stdin: strings.NewReader(in.String())}.run(t, st, "--log-level", "warn", "enqueue", "-v").wantCode(t, cmd.ExitUsage)
	s, err := memfile.Open(path, state.Config{Agent: state.Agent{User: "hal", Owner: "test"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stored := 0
	for i, c := range cases {
		prefix := fmt.Sprintf("line %d: ", i+1)
		got := lineWithPrefix(r.stdout, prefix)
		if c.reject != "" {
			if !strings.HasPrefix(got, prefix+"rejected: ") || !strings.Contains(got, c.reject) {
				t.Errorf("%s: got %q, want a rejection saying %q", c.name, got, c.reject)
			}
			continue
		}
		stored++
		if !strings.HasPrefix(got, prefix+"stored ") {
			t.Errorf("%s: got %q, want it stored", c.name, got)
			continue
		}
		tr, err := s.Get(context.Background(), strings.TrimPrefix(got, prefix+"stored "))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if want := lfnOf(t, c.line); tr.SourceLFN != want {
			t.Errorf("%s: stored source_lfn %q, want %q byte for byte", c.name, tr.SourceLFN, want)
		}
	}
	if want := fmt.Sprintf("%d stored, 0 already queued, %d rejected", stored, len(cases)-stored); !strings.Contains(r.stdout, want) {
		t.Errorf("summary: want %q in\n%s", want, r.stdout)
	}
}

func lineWithPrefix(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

func lfnOf(t testing.TB, line string) string {
	t.Helper()
	m := regexp.MustCompile(`"source_lfn": ("(?:[^"\\]|\\.)*")`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no source_lfn in %q", line)
	}
	var lfn string
	err := json.Unmarshal([]byte(m[1]), &lfn)
	if err != nil {
		t.Fatalf("source_lfn %s: %v", m[1], err)
	}
	return lfn
}

// TestEnqueue_HostileValuesInAnArray: the same values inside a JSON array
// are reported with their element index and line.
func TestEnqueue_HostileValuesInAnArray(t *testing.T) {
	cases := hostileCases()
	var in strings.Builder
	in.WriteString("[\n")
	for i, c := range cases {
		if i > 0 {
			in.WriteString(",\n")
		}
		in.WriteString(c.line)
	}
	in.WriteString("\n]\n")
	r := invocation{stdin: strings.NewReader(in.String())}.run(t, newState(t), "--log-level", "warn", "enqueue").wantCode(t, cmd.ExitUsage)
	wantMatch(t, r.stdout,
		`element 3 \(line 5\): rejected: source_lfn "/x+\.\.\.": longer than 4096 bytes`,
		`element 6 \(line 8\): rejected: source_lfn "/store/a\\nb": contains a control character`,
		`element 9 \(line 11\): rejected: not valid UTF-8 at byte 80 of the record`,
		`element 11 \(line 13\): rejected: field size: got a JSON number 9223372036854775808, want an integer`,
		`4 stored, 0 already queued, 20 rejected`,
	)
}
