package cmd_test

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// requestStream generates n JSON lines of requests (cycling through
// distinct distinct ones) without holding them in memory, and records the
// peak heap in use, sampled every MiB read.
type requestStream struct {
	n, distinct, i int
	dir            string // a long directory name, to make lines of about 1 KiB
	sampledBuffer
}

// sampledBuffer is the generated input not read yet, and the peak heap in
// use, sampled every MiB read.
type sampledBuffer struct {
	buf           []byte
	read, sampled int64
	peak          uint64
}

// emit hands the reader what p can hold of buf (io.EOF once buf is empty)
// and samples the heap.
func (s *sampledBuffer) emit(p []byte) (int, error) {
	if len(s.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.buf)
	s.buf = s.buf[:copy(s.buf, s.buf[n:])]
	s.read += int64(n)
	if s.read-s.sampled >= 1<<20 {
		s.sampled = s.read
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		s.peak = max(s.peak, ms.HeapInuse)
	}
	return n, nil
}

func (s *requestStream) Read(p []byte) (int, error) {
	for len(s.buf) < len(p) && s.i < s.n {
		k := s.i % s.distinct
		s.buf = fmt.Appendf(s.buf, `{"user": "big", "source": "T2_US_Nebraska", "destination": "T1_US_FNAL_Disk", "source_lfn": "/store/temp/user/big/%s/file_%06d.root", "destination_lfn": "/store/user/big/%s/file_%06d.root", "size": %d, "checksums": {"adler32": "%08x"}}`+"\n", s.dir, k, s.dir, k, 1000+k, k)
		s.i++
	}
	return s.emit(p)
}

// TestEnqueue_LargeInputUsesBoundedMemory enqueues 200,000 JSON lines and
// checks that the heap never grows by more than a fraction of the input:
// the input is streamed, not read whole.
func TestEnqueue_LargeInputUsesBoundedMemory(t *testing.T) {
	n, distinct := 30_000, 500
	st := newState(t)
	// Collect garbage early, so that the heap in use is close to what is live.
	defer debug.SetGCPercent(debug.SetGCPercent(20))
	in := &requestStream{n: n, distinct: distinct, dir: strings.Repeat("crab_20261122_run", 24)}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	r := invocation{stdin: in}.run(t, st, "--log-level", "warn", "enqueue").wantCode(t, 0)
	if want := fmt.Sprintf("%d stored, %d already queued, 0 rejected\n", distinct, n-distinct); r.stdout != want {
		t.Fatalf("stdout %q, want %q", r.stdout, want)
	}
	grew := int64(in.peak) - int64(before.HeapInuse)
	t.Logf("input %d MiB, heap in use grew by at most %.1f MiB", in.read>>20, float64(grew)/(1<<20))
	if limit := in.read / 4; grew > limit {
		t.Fatalf("heap in use grew by %d bytes while reading %d bytes of input: want under %d (streamed)", grew, in.read, limit)
	}
	if got := statusOf(t, st, "--user", "big"); got["total"] != float64(distinct) {
		t.Fatalf("total %v, want %d", got["total"], distinct)
	}
}
