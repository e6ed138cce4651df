package memfile

import (
	"fmt"
	"time"

	"github.com/asyncstageout/aso/state"
)

// purgeChunk is how many transfers are read back and archived at a time.
const purgeChunk = 10000

// purge removes the terminal transfers o selects (see Store.Purge),
// archived first, and rewrites the file without them; by and now are
// recorded in the history of the archived copies. If the rewrite fails,
// the index no longer matches the file and is read again by the next
// call.
func (j *journal) purge(o state.PurgeOptions, by string, now func() time.Time) (int, error) {
	d := j.d
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
		if err := j.archive(o.Archive, slots, by, now()); err != nil {
			return 0, err
		}
	}
	for _, i := range slots {
		d.remove(i)
	}
	if err := j.compact(); err != nil {
		j.reset() // memory no longer matches the file: read it again next time
		return 0, fmt.Errorf("memfile: purge: rewrite %s: %w (nothing removed)", j.path, err)
	}
	if o.Progress != nil {
		o.Progress(len(slots)) // one rewrite removes them all
	}
	return len(slots), nil
}

// archive writes the transfers of slots to a, purgeChunk at a time, and
// syncs it.
func (j *journal) archive(a state.Archiver, slots []int32, by string, now time.Time) error {
	x := newTx(j.d, &j.src, nil, &j.stats)
	for lo := 0; lo < len(slots); lo += purgeChunk {
		ts, err := x.readAll(slots[lo:min(lo+purgeChunk, len(slots))])
		if err != nil {
			return fmt.Errorf("memfile: purge: %w", err)
		}
		state.NotePurged(ts, by, now)
		if err := a.Write(ts); err != nil {
			return fmt.Errorf("memfile: purge: archive: %w (nothing removed)", err)
		}
	}
	if err := a.Sync(); err != nil {
		return fmt.Errorf("memfile: purge: archive: %w (nothing removed)", err)
	}
	return nil
}
