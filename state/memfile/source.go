package memfile

import (
	"cmp"
	"fmt"
	"os"
	"slices"
)

// Reads of documents from the file: spans at most readGap apart are read
// with one pread, of at most readMax bytes (unless one document is larger).
const (
	readGap = 4 << 10
	readMax = 1 << 20
)

// source reads documents back from the state file.
type source struct {
	f    *os.File
	path string
	buf  []byte // reused between reads, at most readMax unless a document is larger
}

// readSpans reads the bytes of every span, coalescing neighbours, and calls
// fn with each (in file order); the bytes are valid only during the call.
func (r *source) readSpans(spans []span, fn func(i int, b []byte) error) error {
	order := make([]int, len(spans))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(spans[a].off, spans[b].off) })
	for k := 0; k < len(order); {
		first := spans[order[k]]
		end := first.off + int64(first.n)
		j := k + 1
		for ; j < len(order); j++ {
			sp := spans[order[j]]
			if sp.off > end+readGap || sp.off+int64(sp.n)-first.off > readMax {
				break
			}
			end = max(end, sp.off+int64(sp.n))
		}
		n := int(end - first.off)
		if cap(r.buf) < n {
			r.buf = make([]byte, max(n, min(readMax, 2*cap(r.buf))))
		}
		b := r.buf[:n]
		if _, err := r.f.ReadAt(b, first.off); err != nil {
			return fmt.Errorf("read %s at offset %d: %w", r.path, first.off, err)
		}
		for ; k < j; k++ {
			sp := spans[order[k]]
			at := sp.off - first.off
			if err := fn(order[k], b[at:at+int64(sp.n)]); err != nil {
				return err
			}
		}
	}
	if cap(r.buf) > readMax {
		r.buf = nil // a huge document: do not keep its buffer
	}
	return nil
}
