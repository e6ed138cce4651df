package memfile

import (
	"context"
	"fmt"
	"time"

	"github.com/asyncstageout/aso/state"
)

// TakeBack expires the claims of l.User's other agents (see
// state.Recoverer), in one record, under the file lock that also
// serialises the run lock, so the check that l is live and the write are
// one step.
func (s *Store) TakeBack(ctx context.Context, l state.Lock) ([]state.Transfer, error) {
	var out []state.Transfer
	err := s.update(ctx, "take back claims", true, func(x *tx, now time.Time) error {
		out = nil
		if err := state.LockLive(x.getLock(state.LockID(l.User)), l, now); err != nil {
			return fmt.Errorf("memfile: take back claims: %w", err)
		}
		ui := x.d.userOf(l.User)
		if ui == nil {
			return nil
		}
		var slots []int32
		ui.queue.Ascend(func(i int32) bool {
			if st := x.d.stub(&x.d.metas[i], false); st.State == state.StateAcquired && st.LeaseExpires.After(now) {
				slots = append(slots, i)
			}
			return true
		})
		ts, err := x.readAll(slots)
		if err != nil {
			return fmt.Errorf("memfile: take back claims: %w", err)
		}
		for k := range ts {
			if state.TakeBackClaim(&ts[k], l, now) {
				x.put(&ts[k])
				out = append(out, ts[k])
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
