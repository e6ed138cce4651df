package couch

import (
	"slices"
	"sync"
	"time"

	"github.com/asyncstageout/aso/state"
)

// maxWritten bounds the submitted transfers a store remembers (about a
// kilobyte each): the monitor reads the oldest jobs first, and those are
// the first the store remembered. It is the agent's monitor group (5 x
// the batch of 2,000), so that the agent's memory at a queue of 100,000
// is what it is at 10,000; past it the monitor reads the documents.
var maxWritten = 10000

// minWrittenRead is the fewest remembered transfers of a monitor read for
// which checking revisions pays: below it one read with the documents costs
// less than the two requests of the check.
const minWrittenRead = 500

// written remembers the submitted transfers a store wrote itself, at the
// revision the server gave them. A later read of those transfers need not
// carry their documents: the server's current revision of each says
// whether the document is still the one written (a revision names exactly
// one body), and only those that changed since (a kill request, another
// writer) are read again.
type written struct {
	mu sync.Mutex
	m  map[string]state.Transfer
	// missedAt: when a submitted transfer was last not remembered (no
	// room), zero once a view brought up to date after it shows it
	missedAt time.Time
	// ended: the transfers the store wrote out of a job (terminal, or back
	// to the queue) that the view may not show yet, with the job and when
	ended map[string]endedAt
}

// endedAt is a transfer's job and when the store wrote it out of it.
type endedAt struct {
	job string
	at  time.Time
}

// note records the outcome of a confirmed write of t at rev, at now, over
// base (the version the write replaced): a submitted transfer is
// remembered (if there is room), any other is forgotten, and noted as out
// of its job if it was in one, as remembered or as base shows it (a
// transfer sent back to the queue has no job any more, and the store may
// not remember it: another run committed it, or memory was full).
func (w *written) note(t, base *state.Transfer, rev string, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t.State != state.StateSubmitted {
		job := t.FTSJob
		if old, ok := w.m[t.ID]; ok {
			job = old.FTSJob
			delete(w.m, t.ID)
		}
		if job == "" && base.State == state.StateSubmitted {
			job = base.FTSJob
		}
		if job != "" {
			if w.ended == nil {
				w.ended = make(map[string]endedAt)
			}
			w.ended[t.ID] = endedAt{job, now}
		}
		return
	}
	delete(w.ended, t.ID)
	if w.m == nil {
		w.m = make(map[string]state.Transfer)
	}
	if _, ok := w.m[t.ID]; !ok && len(w.m) >= maxWritten {
		w.missedAt = now
		return
	}
	c := *cloneTransfer(t)
	c.Rev = rev
	w.m[t.ID] = c
}

// forget drops id (its write was not confirmed, or it changed).
func (w *written) forget(id string) {
	w.mu.Lock()
	delete(w.m, id)
	w.mu.Unlock()
}

// indexed records that a view query that began at before brought the
// view up to date: it shows every write made before then, so the ended
// transfers and the misses of before are forgotten.
func (w *written) indexed(before time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, e := range w.ended {
		if e.at.Before(before) {
			delete(w.ended, id)
		}
	}
	if w.missedAt.Before(before) {
		w.missedAt = time.Time{}
	}
}

// endedJobs returns the transfers written out of their job that the view
// may not show yet, by ID, with their job.
func (w *written) endedJobs() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]string, len(w.ended))
	for id, e := range w.ended {
		out[id] = e.job
	}
	return out
}

// complete reports whether every submitted transfer written since the
// view was last brought up to date is remembered.
func (w *written) complete() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.missedAt.IsZero()
}

// size is the number of transfers remembered.
func (w *written) size() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.m)
}

// lookup returns the remembered transfers among ids.
func (w *written) lookup(ids []string) map[string]state.Transfer {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.m) == 0 {
		return nil
	}
	out := make(map[string]state.Transfer)
	for _, id := range ids {
		if t, ok := w.m[id]; ok {
			out[id] = t
		}
	}
	return out
}

// jobStat is what the store remembers of one FTS job: its transfers and
// the oldest last_update among them.
type jobStat struct {
	transfers int
	oldest    time.Time
}

// jobsOf returns the jobs of user's remembered transfers.
func (w *written) jobsOf(user string) map[string]jobStat {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]jobStat{}
	for _, t := range w.m {
		if t.User != user || t.FTSJob == "" {
			continue
		}
		j, seen := out[t.FTSJob]
		if !seen || t.LastUpdate.Before(j.oldest) {
			j.oldest = t.LastUpdate.Time
		}
		j.transfers++
		out[t.FTSJob] = j
	}
	return out
}

// idsIn returns the IDs of user's remembered transfers of the jobs in jobs.
func (w *written) idsIn(user string, jobs map[string][]state.Transfer) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for id, t := range w.m {
		if _, ok := jobs[t.FTSJob]; ok && t.User == user {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}
