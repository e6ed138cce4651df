package memfile

import (
	"context"
	"fmt"

	"github.com/asyncstageout/aso/state"
)

// purgeChunk is how many transfers are read back and archived at a time.
const purgeChunk = 10000

// Purge removes the terminal transfers o selects (see state.Purger). The
// journal has no deletion record: under the file lock, the transfers are
// archived, dropped from memory, and the file is rewritten as a snapshot
// without them (one compaction, however many are removed); other handles
// see the file replaced and read it again.
func (s *Store) Purge(ctx context.Context, o state.PurgeOptions) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("memfile: purge: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, fmt.Errorf("memfile: purge: store %s is closed", s.path)
	}
	if err := s.lock(ctx); err != nil {
		return 0, err
	}
	defer s.unlock()
	if err := s.catchUp(); err != nil {
		return 0, err
	}
	d := s.d
	var slots []int32
	for i := range d.metas {
		if m := &d.metas[i]; m.state != 0 {
			if st := d.stub(m, false); o.Purgeable(&st) {
				slots = append(slots, int32(i))
			}
		}
	}
	if len(slots) == 0 {
		return 0, nil
	}
	if o.Archive != nil {
		x := newTx(d, &s.src, nil)
		now := s.now()
		for lo := 0; lo < len(slots); lo += purgeChunk {
			ts, err := x.readAll(slots[lo:min(lo+purgeChunk, len(slots))])
			if err != nil {
				return 0, fmt.Errorf("memfile: purge: %w", err)
			}
			state.NotePurged(ts, s.by(), now)
			if err := o.Archive.Write(ts); err != nil {
				return 0, fmt.Errorf("memfile: purge: archive: %w (nothing removed)", err)
			}
		}
		if err := o.Archive.Sync(); err != nil {
			return 0, fmt.Errorf("memfile: purge: archive: %w (nothing removed)", err)
		}
	}
	for _, i := range slots {
		d.remove(i)
	}
	if err := s.compact(); err != nil {
		s.reset() // memory no longer matches the file: read it again next time
		return 0, fmt.Errorf("memfile: purge: rewrite %s: %w (nothing removed)", s.path, err)
	}
	if o.Progress != nil {
		o.Progress(len(slots)) // one rewrite removes them all
	}
	return len(slots), nil
}
