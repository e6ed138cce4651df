package couch

import (
	"context"
	"fmt"
	"sync"

	"github.com/asyncstageout/aso/state"
)

var _ state.Confirmer = (*Store)(nil)

// claimed is the set of transfers a store claimed and has not yet seen
// terminal.
type claimed struct {
	mu  sync.Mutex
	ids map[string]struct{}
}

// remember adds transfers the store claimed.
func (s *Store) remember(ts []state.Transfer) {
	if len(ts) == 0 {
		return
	}
	s.mine.mu.Lock()
	defer s.mine.mu.Unlock()
	if s.mine.ids == nil {
		s.mine.ids = make(map[string]struct{}, len(ts))
	}
	for i := range ts {
		s.mine.ids[ts[i].ID] = struct{}{}
	}
}

// settled forgets the transfers that a write's results show terminal: a
// successful result is a write the cluster confirmed (mutate reads back
// one answered 202), so Unsettled need not read them again.
func (s *Store) settled(res []state.Result, err error) ([]state.Result, error) {
	if err != nil {
		return res, err
	}
	s.mine.mu.Lock()
	defer s.mine.mu.Unlock()
	for _, r := range res {
		if r.Err == nil && r.State.Terminal() {
			delete(s.mine.ids, r.ID)
		}
	}
	return res, nil
}

// Unsettled returns the transfers this store claimed that are not terminal,
// read by ID (see state.Confirmer): one request per maxReadKeys transfers.
// Those found terminal or missing are forgotten.
func (s *Store) Unsettled(ctx context.Context) ([]state.Transfer, error) {
	s.mine.mu.Lock()
	ids := make([]string, 0, len(s.mine.ids))
	for id := range s.mine.ids {
		ids = append(ids, id)
	}
	s.mine.mu.Unlock()
	if len(ids) == 0 {
		return nil, nil
	}
	docs, err := s.readKeys(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("couch: confirm the claimed transfers: %w", err)
	}
	var out []state.Transfer
	var settled []string
	for _, id := range ids {
		raw, ok := docs[id]
		if !ok {
			continue // unresolved conflict or unreadable: asked again next time
		}
		t, err := decode(raw)
		if err != nil || t.State.Terminal() {
			settled = append(settled, id)
			continue
		}
		out = append(out, t)
	}
	s.mine.mu.Lock()
	for _, id := range settled {
		delete(s.mine.ids, id)
	}
	s.mine.mu.Unlock()
	return out, nil
}
