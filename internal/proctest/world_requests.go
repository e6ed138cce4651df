package proctest

import (
	"context"
	"fmt"
	"hash/adler32"
	"path/filepath"
	"time"

	"github.com/asyncstageout/aso/state"
)

// Kind is what a generated request is designed to do.
type Kind string

// Kinds of requests.
const (
	// Good has a source file and a free destination: it must end done with
	// the source's bytes at the destination (or failed after its retries,
	// with no destination copy left).
	Good Kind = "good"
	// MissingSource has no source file, and a stale copy at the
	// destination that no attempt of the transfer wrote: it must fail, and
	// that file must stay intact (the deletion rule leaves it in place).
	MissingSource Kind = "missing-source"
	// DestinationExists has a source, but somebody else's file is at the
	// destination: it must fail, and that file must stay intact.
	DestinationExists Kind = "destination-exists"
)

// Content of the files the scenario puts at destinations.
const (
	stalePartial  = "stale partial copy"
	somebodyElses = "somebody else's file"
)

// Expected is a request the World enqueued and what must become of it.
type Expected struct {
	Kind    Kind
	Request state.Request
	// Data is the source content (Good and DestinationExists).
	Data []byte
}

// ID is the transfer ID.
func (e *Expected) ID() string { return e.Request.ID() }

// DestPath is the destination file of e in the World.
func (w *World) DestPath(e *Expected) string {
	return filepath.Join(w.DestRoot, e.Request.DestinationLFN)
}

// SourcePath is the source file of e in the World.
func (w *World) SourcePath(e *Expected) string {
	return filepath.Join(w.SourceRoot, e.Request.SourceLFN)
}

// Generate makes n requests of kind for user with their files, without
// enqueueing them.
func (w *World) Generate(user string, kind Kind, n int) []*Expected {
	w.t.Helper()
	out := make([]*Expected, n)
	for i := range out {
		w.mu.Lock()
		w.seq++
		seq := w.seq
		size := 200 + w.rng.IntN(1800)
		data := make([]byte, size)
		for j := range data {
			data[j] = byte(w.rng.Uint32())
		}
		w.mu.Unlock()
		e := &Expected{Kind: kind, Request: state.Request{
			User: user, Source: SourceSite, Destination: DestinationSite,
			SourceLFN:      fmt.Sprintf("/store/temp/user/%s/%s_%05d.root", user, kind, seq),
			DestinationLFN: fmt.Sprintf("/store/user/%s/%s_%05d.root", user, kind, seq),
			Size:           int64(size),
			Checksums:      map[string]string{"adler32": fmt.Sprintf("%08x", adler32.Checksum(data))},
		}}
		switch kind {
		case Good:
			e.Data = data
			w.write(w.SourcePath(e), data, 0o644)
		case DestinationExists:
			e.Data = data
			w.write(w.SourcePath(e), data, 0o644)
			w.write(w.DestPath(e), []byte(somebodyElses), 0o644)
		case MissingSource:
			w.write(w.DestPath(e), []byte(stalePartial), 0o644)
		default:
			w.t.Fatalf("proctest: unknown kind %q", kind)
		}
		out[i] = e
	}
	return out
}

// Enqueue stores es through the World's store handle, in batches of 1,000,
// and remembers them for Check. Every request must be stored.
func (w *World) Enqueue(es []*Expected) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for len(es) > 0 {
		batch := es[:min(len(es), 1000)]
		es = es[len(batch):]
		reqs := make([]state.Request, len(batch))
		for i, e := range batch {
			reqs[i] = e.Request
		}
		res, err := w.store.Enqueue(ctx, reqs)
		if err != nil {
			w.t.Fatalf("proctest: enqueue: %v", err)
		}
		for i, r := range res {
			if r.Status != state.Stored {
				w.t.Fatalf("proctest: enqueue %s: %s %v", r.ID, r.Status, r.Err)
			}
			w.remember(batch[i])
		}
	}
}

// Add generates and enqueues n requests of kind for user.
func (w *World) Add(user string, kind Kind, n int) []*Expected {
	w.t.Helper()
	es := w.Generate(user, kind, n)
	w.Enqueue(es)
	return es
}

// AddMix enqueues n requests for user: about 90% Good, 5% MissingSource and
// 5% DestinationExists, in random order.
func (w *World) AddMix(user string, n int) []*Expected {
	w.t.Helper()
	bad := n / 20
	es := w.Generate(user, MissingSource, bad)
	es = append(es, w.Generate(user, DestinationExists, bad)...)
	es = append(es, w.Generate(user, Good, n-2*bad)...)
	w.rngShuffle(es)
	w.Enqueue(es)
	return es
}

func (w *World) rngShuffle(es []*Expected) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rng.Shuffle(len(es), func(i, j int) { es[i], es[j] = es[j], es[i] })
}

func (w *World) remember(e *Expected) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.expected[e.ID()]; !ok {
		w.order = append(w.order, e.ID())
	}
	w.expected[e.ID()] = e
}

// Expected returns every request the World enqueued, in enqueue order.
func (w *World) Expected() []*Expected {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*Expected, len(w.order))
	for i, id := range w.order {
		out[i] = w.expected[id]
	}
	return out
}
