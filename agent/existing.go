package agent

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/state"
)

// MaxCheckAttempts is how many passes the agent tries to read the file at
// the destination of a failure "destination exists" before it records the
// failure with the check's error.
const MaxCheckAttempts = 3

// checkParallel bounds the gfal-stat and gfal-sum processes of one record
// phase.
const checkParallel = 4

// checkExisting settles, by what the destination holds (read with
// gfal-stat and gfal-sum), the failures "destination exists" among outs,
// and the failures "source missing" whose destination copy was to be
// deleted:
//   - the transfer's own file (its adler32, and its size when the transfer
//     gives one): the outcome becomes done, its reason saying so, and
//     nothing is deleted. The copy is there, whoever made it: a job of an
//     earlier attempt that FTS no longer shows (it archives finished jobs,
//     and its status then answers 404, which the agent took for a lost
//     job), after which the source may have been cleaned up too; or an
//     earlier request for the same file;
//   - a different file: "destination exists" stays failed, the reason
//     giving what is there; "source missing" goes on to delete it (a stale
//     partial copy);
//   - nothing any more: "destination exists" fails retryable, the
//     destination is free;
//   - a transfer without an adler32 checksum: nothing to compare; the
//     failure is recorded as FTS gave it.
//
// A check that fails leaves the outcome unrecorded this pass (it returns
// the IDs), MaxCheckAttempts passes at most; then "destination exists" is
// recorded retryable with the check's error, and "source missing" is
// recorded with its destination left in place. A check the phase's time
// ran out before or during is not an attempt (MaxDeleteSkips times at most).
func (a *Agent) checkExisting(work context.Context, outs []outcome, ps *PassStats) map[string]bool {
	if a.checker == nil {
		return nil
	}
	var idx []int
	for i := range outs {
		o := &outs[i]
		if o.outcome == state.OutcomeFailed && o.t.DestPFN != "" && o.t.Checksum() != "" &&
			(o.class == fts.ClassDestinationExists || o.class == fts.ClassSourceMissing && o.deleteDest) {
			idx = append(idx, i)
		} else if o.outcome == state.OutcomeFailed && o.class == fts.ClassDestinationExists {
			o.reason += "; the file there was not compared: the transfer has no adler32 checksum"
		}
	}
	if len(idx) == 0 {
		return nil
	}
	// those whose check failed before go first, so that a budget spent on
	// others cannot starve them
	sort.SliceStable(idx, func(x, y int) bool {
		return a.checkFailures[outs[idx[x]].t.ID] > a.checkFailures[outs[idx[y]].t.ID]
	})
	found, cut := a.readExisting(work, outs, idx)
	held := map[string]bool{}
	for k, i := range idx {
		id := outs[i].t.ID
		if a.settleExisting(&outs[i], found[k], cut[k]) {
			held[id] = true
			ps.Unrecorded++
			continue
		}
		delete(a.checkFailures, id)
		delete(a.checkSkips, id)
	}
	return held
}

// settleExisting applies to o what its check e found (see checkExisting);
// cut: the phase's time ran out on the check. It reports whether o is held
// for the next pass.
func (a *Agent) settleExisting(o *outcome, e srm.Existing, cut bool) (held bool) {
	id, exists := o.t.ID, o.class == fts.ClassDestinationExists
	log := a.log.WithField(FieldPhase, "record").WithField(FieldTransfer, id).WithField("pfn", o.t.DestPFN)
	switch {
	case e.Err != nil && cut && a.checkSkips[id] < MaxDeleteSkips:
		a.checkSkips[id]++
		return true
	case e.Err != nil:
		a.checkFailures[id]++
		if a.checkFailures[id] < MaxCheckAttempts {
			log.WithError(e.Err).Warn("checking the file at the destination failed; retried next pass")
			return true
		}
		log.WithError(e.Err).Error("giving up checking the file at the destination; recording the failure")
		if exists {
			o.reason += "; the file there could not be checked: " + e.Err.Error()
			o.retryable = true
		} else {
			o.reason += "; the file at the destination could not be checked, so it was left in place: " + e.Err.Error()
			o.deleteDest = false
		}
	case e.Missing:
		if exists {
			o.reason += "; the destination was empty when checked"
			o.retryable = true
		}
	case strings.EqualFold(e.Adler32, o.t.Checksum()) && (e.Size == o.t.Size || o.t.Size == 0):
		o.outcome, o.class, o.retryable, o.existing, o.deleteDest = state.OutcomeDone, "", false, true, false
		what := fmt.Sprintf("size %d and adler32 %s match", e.Size, e.Adler32)
		if o.t.Size == 0 && e.Size != 0 {
			what = fmt.Sprintf("adler32 %s matches (the transfer gives no size; the file has %d bytes)", e.Adler32, e.Size)
		}
		o.reason = "the destination already holds this file: " + what + " (FTS: " + o.reason + ")"
		log.Info("the file at the destination is this transfer's: recording it done")
	case exists:
		o.reason += fmt.Sprintf("; the file there differs: size %d and adler32 %s, not %d and %s",
			e.Size, e.Adler32, o.t.Size, o.t.Checksum())
	}
	return false
}

// readExisting checks the destinations of outs[idx], checkParallel at a time, under the deletion timeout. cut[k]
// says that the time ran out before or while found[k] was read.
func (a *Agent) readExisting(work context.Context, outs []outcome, idx []int) (found []srm.Existing, cut []bool) {
	ctx, cancel := context.WithTimeout(work, a.cfg.DeleteTimeout)
	defer cancel()
	found, cut = make([]srm.Existing, len(idx)), make([]bool, len(idx))
	sem := make(chan struct{}, checkParallel)
	var wg sync.WaitGroup
	for k, i := range idx {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if cut[k] = ctx.Err() != nil; cut[k] {
				found[k].Err = ctx.Err()
				return
			}
			found[k] = a.checker.Check(ctx, outs[i].t.DestPFN)
			cut[k] = ctx.Err() != nil
		}()
	}
	wg.Wait()
	return found, cut
}
