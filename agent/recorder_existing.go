package agent

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/state"
	"golang.org/x/sync/errgroup"
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
// the failures "source missing" whose destination copy was to be deleted,
// and the jobs FTS lost (of transfers with an adler32):
//   - the transfer's own file (its adler32, and its size when the transfer
//     gives one): the outcome becomes done, its reason saying so, and
//     nothing is deleted. The copy is there, whoever made it: the lost job
//     itself, or a job of an earlier attempt, that FTS no longer shows (it
//     archives finished jobs, and its status then answers 404), after
//     which the source may have been cleaned up too; or an earlier request
//     for the same file;
//   - a different file: "destination exists" stays failed, the reason
//     giving what is there, unless an earlier attempt of the transfer
//     began writing there (state.Transfer.DestWritten): then it is that
//     attempt's partial copy, to delete, and the failure is retryable;
//     "source missing" goes on to the deletion rule, which deletes only
//     such a copy of its own and leaves anything else in place; a lost job
//     stays lost, and the file is left alone;
//   - nothing any more: "destination exists" fails retryable, the
//     destination is free; a lost job stays lost;
//   - a transfer without an adler32 checksum: "destination exists" is
//     recorded as FTS gave it; "source missing" keeps a file of the
//     transfer's size (or any file, when the transfer gives no size): it
//     may be the only copy, and nothing tells it from a partial one.
//
// A check that fails leaves the outcome unrecorded this pass (it returns
// the IDs), MaxCheckAttempts passes at most; then "destination exists" is
// recorded retryable with the check's error, and "source missing" is
// recorded with its destination left in place. A check the phase's time
// ran out before it started is not an attempt (MaxDeleteSkips times at
// most); one that was running counts, as a deletion that hangs does. A
// lost job whose check gave up stays lost, its destination left alone.
func (r *recorder) checkExisting(work context.Context, outs []outcome, t *tally) map[string]bool {
	if r.checker == nil {
		return nil
	}
	var idx []int
	for i := range outs {
		o := &outs[i]
		switch {
		case o.outcome == state.OutcomeLost && o.t.DestPFN != "" && o.t.Checksum() != "":
			idx = append(idx, i)
		case o.outcome != state.OutcomeFailed || o.t.DestPFN == "":
		case o.class == state.ClassSourceMissing && o.deleteDest && r.stale[o.t.ID]:
			// read in an earlier pass and not its own: its deletion was
			// held (failed or skipped), not its check
		case o.class == state.ClassSourceMissing && o.deleteDest,
			o.class == state.ClassDestinationExists && o.t.Checksum() != "":
			idx = append(idx, i)
		case o.class == state.ClassDestinationExists:
			o.reason += "; the file there was not compared: the transfer has no adler32 checksum"
		}
	}
	if len(idx) == 0 {
		return nil
	}
	// those held before go first, so that a budget spent on others cannot
	// starve them
	sort.SliceStable(idx, func(x, y int) bool { return r.checks.held(outs[idx[x]].t.ID) > r.checks.held(outs[idx[y]].t.ID) })
	found, unstarted := r.readExisting(work, outs, idx)
	held := map[string]bool{}
	for k, i := range idx {
		id := outs[i].t.ID
		if r.settleExisting(&outs[i], found[k], unstarted[k]) {
			held[id] = true
			t.ps.Unrecorded++
			continue
		}
		r.checks.forget(id)
	}
	return held
}

// settleExisting applies to o what its check e found (see checkExisting);
// unstarted: the phase's time ran out before the check began. It reports
// whether o is held for the next pass.
func (r *recorder) settleExisting(o *outcome, e srm.Existing, unstarted bool) (held bool) {
	id, exists, sum := o.t.ID, o.class == state.ClassDestinationExists, o.t.Checksum()
	lost := o.outcome == state.OutcomeLost
	log := r.log.WithField(FieldTransfer, id).WithField("pfn", o.t.DestPFN)
	switch {
	case e.Err != nil && unstarted && r.checks.skips[id] < MaxDeleteSkips:
		r.checks.skips[id]++
		return true
	case e.Err != nil:
		r.checks.failures[id]++
		if r.checks.failures[id] < MaxCheckAttempts {
			log.WithError(e.Err).Warn("checking the file at the destination failed; retried next pass")
			return true
		}
		log.WithError(e.Err).Error("giving up checking the file at the destination; recording the failure")
		if exists {
			o.reason += "; the file there could not be checked (" + e.Err.Error() + ")"
			o.retryable = true
		} else {
			o.reason += "; the file at the destination could not be checked, so it was left in place (" + e.Err.Error() + ")"
			o.deleteDest = false
		}
	case e.Missing && (exists || lost):
		o.reason += "; the destination was empty when checked"
		o.retryable = true
	case e.Missing:
		r.stale[id] = true // nothing to keep
	case sum != "" && strings.EqualFold(e.Adler32, sum) && (e.Size == o.t.Size || o.t.Size == 0):
		o.outcome, o.class, o.retryable, o.existing, o.deleteDest = state.OutcomeDone, "", false, true, false
		what := fmt.Sprintf("size %d and adler32 %s match", e.Size, e.Adler32)
		if o.t.Size == 0 && e.Size != 0 {
			what = fmt.Sprintf("adler32 %s matches (the transfer gives no size; the file has %d bytes)", e.Adler32, e.Size)
		}
		if !lost {
			o.reason = "FTS: " + o.reason
		}
		o.reason = "the destination already holds this file: " + what + " (" + o.reason + ")"
		log.Info("the file at the destination is this transfer's: recording it done")
	case exists && o.t.DestWritten != "" && o.t.DestWritten == o.t.DestPFN:
		// an earlier attempt of this transfer began writing there (a lost
		// job, a deletion given up): its partial copy, which the deletion
		// rule may let go; then the destination is free for the next one
		o.reason += fmt.Sprintf("; the file there (%d bytes) differs: the partial copy an earlier attempt of this transfer left", e.Size)
		o.deleteDest, o.retryable = true, true
		r.stale[id] = true
	case (exists || lost) && e.Adler32 == "":
		o.reason += fmt.Sprintf("; the file there differs (%d bytes, not %d)", e.Size, o.t.Size)
	case exists || lost:
		o.reason += fmt.Sprintf("; the file there differs (size %d and adler32 %s, not %d and %s)",
			e.Size, e.Adler32, o.t.Size, sum)
	case sum == "" && (o.t.Size == 0 || e.Size == o.t.Size):
		o.reason += fmt.Sprintf("; the file at the destination (%d bytes) may be this transfer's only copy, "+
			"and without an adler32 to compare it was left in place", e.Size)
		o.deleteDest = false
	default:
		r.stale[id] = true // source missing, a file not its own: deleted, not read again
	}
	return false
}

// readExisting checks the destinations of outs[idx], in that order,
// checkParallel at a time, under the deletion timeout. unstarted[k] says
// that the time ran out before found[k] was read.
func (r *recorder) readExisting(work context.Context, outs []outcome, idx []int) (found []srm.Existing, unstarted []bool) {
	ctx, cancel := context.WithTimeout(work, r.cfg.DeleteTimeout)
	defer cancel()
	found, unstarted = make([]srm.Existing, len(idx)), make([]bool, len(idx))
	var g errgroup.Group
	g.SetLimit(checkParallel)
	for k, i := range idx {
		g.Go(func() error { // in order: the first ones start first
			if unstarted[k] = ctx.Err() != nil; unstarted[k] {
				found[k].Err = ctx.Err()
				return nil
			}
			found[k] = r.checker.Check(ctx, outs[i].t.DestPFN, outs[i].t.Size)
			return nil
		})
	}
	_ = g.Wait() // each check's result is in found
	return found, unstarted
}
