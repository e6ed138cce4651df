package memfile

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
)

// fill sets every field of v to a non-zero value drawn from rng, so a field
// added to state.Transfer and missed by appendTransfer shows up. Strings
// are plain ASCII when plain, else sometimes full of characters to escape.
func fill(v reflect.Value, rng *rand.Rand, plain bool) {
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), rng, plain)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(state.Time{}) {
			v.Set(reflect.ValueOf(state.At(time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)))))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if f := v.Type().Field(i); f.IsExported() && f.Tag.Get("json") != "-" {
				fill(v.Field(i), rng, plain)
			}
		}
	case reflect.String:
		choice := []string{"a", "T2_US_Nebraska", "new", "/store/x <&> \"q\" \\ é \u2028 \x01"}
		if plain {
			choice = choice[:3]
		}
		v.SetString(choice[rng.IntN(len(choice))])
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(rng.Int64N(1<<40) - 1<<39)
	case reflect.Float64:
		v.SetFloat([]float64{1.5, 1e-7, 3e22, 123456.789, -0.25}[rng.IntN(5)])
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		keys := []string{"adler32", "md5", "b<"}
		if plain {
			keys = keys[:2]
		}
		for _, k := range keys {
			m.SetMapIndex(reflect.ValueOf(k), reflect.ValueOf("0a1b"+k))
		}
		v.Set(m)
	case reflect.Slice:
		n := 1 + rng.IntN(3)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := 0; i < n; i++ {
			fill(s.Index(i), rng, plain)
		}
		v.Set(s)
	default:
		panic("fill: unhandled kind " + v.Kind().String())
	}
}

func TestFastCodec(t *testing.T) {
	if !fastCodec {
		t.Fatal("state.Transfer, Progress, Transition or TimeLayout changed: update appendTransfer, decodeTransfer and fastCodec")
	}
}

func TestAppendTransfer(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	check := func(name string, tr *state.Transfer) {
		t.Helper()
		want, err := json.Marshal(tr)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendTransfer(nil, tr)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("%s:\nappendTransfer %s\njson.Marshal   %s", name, got, want)
		}
	}
	for i := 0; i < 200; i++ {
		var tr state.Transfer
		fill(reflect.ValueOf(&tr).Elem(), rng, i%2 == 0)
		check("all fields set", &tr)
	}
	check("zero", &state.Transfer{})
	nt := state.NewTransfer(state.Request{User: "u", Source: "S", Destination: "D", SourceLFN: "/a", DestinationLFN: "/b"}, time.Now(), "x")
	check("new", &nt)
	nt.Progress = &state.Progress{FTSState: "ACTIVE"}
	check("progress without numbers", &nt)
	nt.Progress.Throughput = 1e21
	check("large float", &nt)
	bad := nt
	bad.Progress = &state.Progress{Throughput: math.Inf(1)}
	if _, err := appendTransfer(nil, &bad); err == nil {
		t.Fatal("an infinite throughput encoded without error")
	}
}

// TestCivil checks the calendar arithmetic of appendTime and the decoder
// against package time, from year 0 to 9999.
func TestCivil(t *testing.T) {
	first := time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).Unix() / 86400
	last := time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC).Unix() / 86400
	for days := first; days <= last; days += 13 {
		want := time.Unix(days*86400, 0).UTC()
		y, m, d := civil(days)
		if y != want.Year() || m != int(want.Month()) || d != want.Day() {
			t.Fatalf("civil(%d) = %d-%d-%d, want %s", days, y, m, d, want)
		}
		if back := daysSinceEpoch(y, m, d); back != days {
			t.Fatalf("daysSinceEpoch(%d, %d, %d) = %d, want %d", y, m, d, back, days)
		}
	}
}

func BenchmarkAppendTransfer(b *testing.B) {
	var tr state.Transfer
	if !decodeTransfer(doneDoc(b), &tr, nil) {
		b.Fatal("refused")
	}
	b.ReportAllocs()
	buf := make([]byte, 0, 4096)
	for range b.N {
		var err error
		if buf, err = appendTransfer(buf[:0], &tr); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}
