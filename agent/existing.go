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

// checkExisting settles the failures "destination exists" among outs by
// what the destination holds, read with gfal-stat and gfal-sum:
//   - the transfer's own file (its adler32, and its size when the transfer
//     gives one): the outcome becomes done, its reason saying so. The copy
//     is there, whoever made it: a job of an earlier attempt that FTS no
//     longer shows (it archives finished jobs, and its status then answers
//     404, which the agent took for a lost job), or an earlier request for
//     the same file;
//   - a different file: failed, the reason giving what is there;
//   - nothing any more: failed and retryable, the destination is free;
//   - a transfer without an adler32 checksum: failed, nothing to compare.
//
// The destination is never deleted here. A check that fails leaves the
// outcome unrecorded this pass (it returns the IDs), MaxCheckAttempts
// passes at most; then the failure is recorded retryable with the check's
// error, to be tried again after the cool-off. A check the phase's time ran
// out before or during is not an attempt (MaxDeleteSkips times at most).
func (a *Agent) checkExisting(work context.Context, outs []outcome, ps *PassStats) map[string]bool {
	if a.checker == nil {
		return nil
	}
	var idx []int
	for i := range outs {
		o := &outs[i]
		if o.outcome == state.OutcomeFailed && o.class == fts.ClassDestinationExists && o.t.DestPFN != "" {
			idx = append(idx, i)
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
	log := a.log.WithField(FieldPhase, "record")
	for k, i := range idx {
		o := &outs[i]
		id := o.t.ID
		e := found[k]
		switch {
		case o.t.Checksum() == "":
			o.reason += "; the file there was not compared: the transfer has no adler32 checksum"
		case e.Err != nil && cut[k] && a.checkSkips[id] < MaxDeleteSkips:
			a.checkSkips[id]++
			held[id] = true
			ps.Unrecorded++
			continue
		case e.Err != nil:
			a.checkFailures[id]++
			entry := log.WithField(FieldTransfer, id).WithField("pfn", o.t.DestPFN).WithError(e.Err)
			if a.checkFailures[id] < MaxCheckAttempts {
				entry.Warn("checking the file at the destination failed; retried next pass")
				held[id] = true
				ps.Unrecorded++
				continue
			}
			entry.Error("giving up checking the file at the destination; recording the failure, retryable")
			o.reason += "; the file there could not be checked: " + e.Err.Error()
			o.retryable = true
		case e.Missing:
			o.reason += "; the destination was empty when checked"
			o.retryable = true
		case strings.EqualFold(e.Adler32, o.t.Checksum()) && (e.Size == o.t.Size || o.t.Size == 0):
			o.outcome, o.class, o.retryable, o.existing = state.OutcomeDone, "", false, true
			what := fmt.Sprintf("size %d and adler32 %s match", e.Size, e.Adler32)
			if o.t.Size == 0 && e.Size != 0 {
				what = fmt.Sprintf("adler32 %s matches (the transfer gives no size; the file has %d bytes)", e.Adler32, e.Size)
			}
			o.reason = "the destination already holds this file: " + what + " (FTS: " + o.reason + ")"
			log.WithField(FieldTransfer, id).WithField("pfn", o.t.DestPFN).Info("the file at the destination is this transfer's: recording it done")
		default:
			o.reason += fmt.Sprintf("; the file there differs: size %d and adler32 %s, not %d and %s",
				e.Size, e.Adler32, o.t.Size, o.t.Checksum())
		}
		delete(a.checkFailures, id)
		delete(a.checkSkips, id)
	}
	return held
}

// readExisting checks the destinations of outs[idx] that have a checksum to
// compare with, checkParallel at a time, under the deletion timeout. cut[k]
// says that the time ran out before or while found[k] was read.
func (a *Agent) readExisting(work context.Context, outs []outcome, idx []int) (found []srm.Existing, cut []bool) {
	ctx, cancel := context.WithTimeout(work, a.cfg.DeleteTimeout)
	defer cancel()
	found, cut = make([]srm.Existing, len(idx)), make([]bool, len(idx))
	sem := make(chan struct{}, checkParallel)
	var wg sync.WaitGroup
	for k, i := range idx {
		if outs[i].t.Checksum() == "" {
			continue
		}
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
