package memfile

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
)

// sameAsJSON fails unless decodeTransfer either refuses b or decodes it
// exactly as encoding/json does.
func sameAsJSON(t testing.TB, b []byte) bool {
	t.Helper()
	var fast state.Transfer
	if !decodeTransfer(b, &fast, newInterner()) {
		return false
	}
	var slow state.Transfer
	if err := json.Unmarshal(b, &slow); err != nil {
		t.Fatalf("decodeTransfer accepted what encoding/json refuses (%v): %s", err, b)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("decodeTransfer differs from encoding/json on %s:\nfast %+v\nslow %+v", b, fast, slow)
	}
	return true
}

func TestDecodeTransfer(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	accepted := 0
	for i := 0; i < 300; i++ {
		var tr state.Transfer
		fill(reflect.ValueOf(&tr).Elem(), rng, i%2 == 0)
		b, err := appendTransfer(nil, &tr)
		if err != nil {
			t.Fatal(err)
		}
		if sameAsJSON(t, b) {
			accepted++
		}
		// damaged copies: refused, or decoded as encoding/json does
		for j := 0; j < 20; j++ {
			d := append([]byte(nil), b...)
			const noise = "{}[]\":,09aZ.e \\"
			d[rng.IntN(len(d))] = noise[rng.IntN(len(noise))]
			sameAsJSON(t, d)
		}
	}
	nt := state.NewTransfer(state.Request{User: "u", Source: "S", Destination: "D", SourceLFN: "/a", DestinationLFN: "/b", Checksums: map[string]string{"adler32": "0a0b0c0d"}, DependsOn: []string{"x"}}, time.Now(), "x")
	nt.Progress = &state.Progress{FTSState: "ACTIVE", Throughput: 2.5, Bytes: 10}
	b, _ := appendTransfer(nil, &nt)
	if !sameAsJSON(t, b) {
		t.Fatalf("the canonical encoding of a plain transfer is refused: %s", b)
	}
	if accepted < 100 {
		t.Fatalf("the fast path accepted only %d of 150 plain documents", accepted)
	}
	for _, s := range []string{
		`{"_id":"a","_id":"b"}`, `{"_id":null}`, `{"_id":"a" }`, `{"size":01}`, `{"size":1e3}`,
		`{"created":"2026-04-31T00:00:00.000000Z"}`, `{"created":"2026-01-01T24:00:00.000000Z"}`,
		`{"created":""}`, `{"created":"2026-01-01T00:00:00Z"}`, `{"Size":1}`, `{"progress":{"throughput":.5}}`,
		`{"kill_requested":true}`, `{"checksums":{}}`, `{"history":[]}`, `{}`, `{"depends_on":[]}`,
	} {
		sameAsJSON(t, []byte(s))
	}
}

func FuzzDecodeTransfer(f *testing.F) {
	nt := state.NewTransfer(state.Request{User: "u", Source: "S", Destination: "D", SourceLFN: "/a", DestinationLFN: "/b"}, time.Now(), "x")
	b, _ := appendTransfer(nil, &nt)
	f.Add(b)
	f.Add([]byte(`{"progress":{"throughput":1e-7,"updated":null}}`))
	f.Fuzz(func(t *testing.T, b []byte) { sameAsJSON(t, b) })
}

// doneDoc returns the encoding of a transfer that went through claim,
// prepare, commit and done, as the store holds most of them.
func doneDoc(tb testing.TB) []byte {
	tb.Helper()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r := state.Request{User: "alice", Group: "cms", Source: "T2_US_Nebraska", Destination: "T1_DE_KIT",
		SourceLFN: "/store/temp/user/alice/out_12345.root", DestinationLFN: "/store/user/alice/out_12345.root",
		Size: 13345, Checksums: map[string]string{"adler32": "00003039"}}
	tr := state.NewTransfer(r, now, "aso")
	a := state.Agent{User: "alice", Owner: "host.example.org:4242:0a1b2c3d"}
	if err := state.Claim(&tr, a, now, time.Minute); err != nil {
		tb.Fatal(err)
	}
	if err := state.Prepare(&tr, a, "sid-0123456789abcdef", now, time.Minute); err != nil {
		tb.Fatal(err)
	}
	c := state.Commit{Transfer: tr, SourcePFN: "davs://src.example.org/store/temp/user/alice/out_12345.root",
		DestPFN: "davs://dst.example.org/store/user/alice/out_12345.root", FileID: 17}
	if err := state.CommitTo(&tr, a, c, "0b6e2b6c-3c5e-5e1e-9b8a-1d2c3e4f5a6b", now); err != nil {
		tb.Fatal(err)
	}
	if _, err := state.ApplyTerminal(&tr, a, state.Terminal{Transfer: tr, Outcome: state.OutcomeDone, FTSJob: tr.FTSJob}, state.Policy{}.WithDefaults(), now); err != nil {
		tb.Fatal(err)
	}
	tr.Rev = "4-1f2e3d4c5b6a7988"
	b, err := appendTransfer(nil, &tr)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func BenchmarkDecodeTransfer(b *testing.B) {
	doc := doneDoc(b)
	sameAsJSON(b, doc)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	in := newInterner()
	ts := make([]state.Transfer, 1) // as the store decodes: into a slice
	for range b.N {
		if !decodeTransfer(doc, &ts[0], in) {
			b.Fatal("refused")
		}
	}
}
