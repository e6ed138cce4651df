package verify

import (
	"context"
	"sync"

	"github.com/asyncstageout/aso/state"
)

// Source is what was found at the source of a transfer that a
// verification found missing or different, before it is queued again.
type Source struct {
	ID  string
	URL string
	// Exists: the source is there, a regular file.
	Exists bool
	// Reason says why it is not queued again when it does not exist, or
	// could not be read ("the source is missing (ENOENT)").
	Reason string
}

// Sources reads, with gfal-stat, whether the source of each of ts still
// exists, Parallel at a time, and returns one Source per transfer in the
// order of ts. A transfer without a recorded source PFN does not exist
// for this purpose: nothing names the file to copy again.
func (v *Verifier) Sources(ctx context.Context, ts []state.Transfer) []Source {
	out := make([]Source, len(ts))
	parallel := v.Parallel
	if parallel <= 0 {
		parallel = DefaultParallel
	}
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := range ts {
		t := &ts[i]
		out[i] = Source{ID: t.ID, URL: t.SourcePFN}
		if t.SourcePFN == "" {
			out[i].Reason = "no source PFN is recorded"
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(s *Source) {
			defer func() { <-sem; wg.Done() }()
			e := v.Inspector.Stat(ctx, s.URL)
			switch {
			case e.Missing:
				s.Reason = "the source is missing (ENOENT): " + s.URL
			case e.Err != nil:
				s.Reason = "the source could not be read: " + e.Err.Error()
			case e.NotFile != "":
				s.Reason = "the source is a " + e.NotFile + ", not a file: " + s.URL
			default:
				s.Exists = true
			}
		}(&out[i])
	}
	wg.Wait()
	return out
}
