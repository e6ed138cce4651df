package proctest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
)

// CheckOptions say which end states a scenario allows.
type CheckOptions struct {
	// Unfinished accepts transfers that are not terminal yet, as after a
	// graceful stop: new, submitted, or acquired with a submit_sid and a
	// live lease (a submission whose outcome the stopped agent could not
	// settle). An acquired transfer without submit_sid is always an error:
	// a graceful stop releases those.
	Unfinished bool
	// LostJobs are jobs the simulator was told to lose (LoseJob): their
	// files never end, and a transfer submitted again meanwhile is the
	// designed recovery, not a duplicate.
	LostJobs []string
}

// Report is what Check found.
type Report struct {
	Transfers   int // transfers the World enqueued
	Done        int
	Failed      int
	Killed      int
	Unfinished  int // not terminal, where the scenario allows it
	Submissions int // files the simulator received
	// Lost counts transfers missing from the store, not terminal when they
	// must be, or whose recorded outcome contradicts FTS or the files.
	Lost int
	// Duplicated counts transfers submitted again while a previous FTS file
	// of theirs was not terminal, with a sid used twice, copied twice, or
	// submitted more often than their recorded attempts allow.
	Duplicated int
	// Stuck counts transfers left acquired without a live lease, or
	// acquired without a submit_sid after a graceful stop.
	Stuck int
	// Violations describe every problem, one a line.
	Violations []string
}

// OK reports whether no invariant is broken.
func (r Report) OK() bool { return len(r.Violations) == 0 }

// String is a one-line summary.
func (r Report) String() string {
	return fmt.Sprintf("%d transfers: %d done, %d failed, %d killed, %d unfinished; %d FTS submissions; lost %d, duplicated %d, stuck %d",
		r.Transfers, r.Done, r.Failed, r.Killed, r.Unfinished, r.Submissions, r.Lost, r.Duplicated, r.Stuck)
}

// Require fails t with every violation (at most 50 listed).
func (r Report) Require(t testing.TB) {
	t.Helper()
	if r.OK() {
		return
	}
	v := r.Violations
	more := ""
	if len(v) > 50 {
		more = fmt.Sprintf("\n... and %d more", len(v)-50)
		v = v[:50]
	}
	t.Errorf("invariants broken: %s\n%s%s", r, strings.Join(v, "\n"), more)
}

type checker struct {
	w   *World
	o   CheckOptions
	now time.Time
	r   Report
}

func (c *checker) violate(kind *int, format string, args ...any) {
	if kind != nil {
		*kind++
	}
	c.r.Violations = append(c.r.Violations, fmt.Sprintf(format, args...))
}

// Check reads the state store and the simulator's record from outside, after
// the agents have stopped, and reports every broken invariant.
func (w *World) Check(o CheckOptions) Report {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stored, err := w.store.List(ctx, state.Filter{})
	if err != nil {
		w.t.Fatalf("proctest: check: list transfers: %v", err)
	}
	byID := make(map[string]*state.Transfer, len(stored))
	for i := range stored {
		byID[stored[i].ID] = &stored[i]
	}
	files := w.Sim.Files()
	subs := map[string][]ftstest.SimFile{}
	c := &checker{w: w, o: o, now: time.Now()}
	c.r.Submissions = len(files)
	c.checkSIDs(files)
	all := w.Expected()
	known := make(map[string]bool, len(all))
	for _, e := range all {
		known[e.ID()] = true
	}
	for _, f := range files {
		id := TransferID(f)
		if !known[id] {
			c.violate(nil, "FTS file %d of job %s names transfer %q, which was never enqueued", f.FileID, f.JobID, id)
			continue
		}
		subs[id] = append(subs[id], f)
	}
	for _, e := range all {
		c.r.Transfers++
		t := byID[e.ID()]
		if t == nil {
			c.violate(&c.r.Lost, "%s (%s): missing from the store", e.ID(), e.Kind)
			continue
		}
		c.checkState(e, t)
		c.checkFiles(e, t)
		c.checkSubmissions(t, subs[t.ID])
	}
	return c.r
}

// checkState checks the stored state against what the scenario allows.
func (c *checker) checkState(e *Expected, t *state.Transfer) {
	switch t.State {
	case state.StateDone:
		c.r.Done++
	case state.StateFailed:
		c.r.Failed++
	case state.StateKilled:
		c.r.Killed++
	case state.StateAcquired:
		switch {
		case !t.LeaseExpires.After(c.now):
			c.violate(&c.r.Stuck, "%s (%s): acquired by %s with a lease expired at %s", t.ID, e.Kind, t.Owner, t.LeaseExpires)
		case !c.o.Unfinished:
			c.violate(&c.r.Stuck, "%s (%s): still acquired by %s at the end", t.ID, e.Kind, t.Owner)
		case t.SubmitSID == "":
			c.violate(&c.r.Stuck, "%s (%s): acquired by %s without submit_sid after a graceful stop", t.ID, e.Kind, t.Owner)
		default:
			c.r.Unfinished++
		}
	default:
		if c.o.Unfinished {
			c.r.Unfinished++
		} else {
			c.violate(&c.r.Lost, "%s (%s): %s at the end, want terminal (reason %q)", t.ID, e.Kind, t.State, t.Reason)
		}
	}
}

// checkFiles checks the destination file against the outcome.
func (c *checker) checkFiles(e *Expected, t *state.Transfer) {
	got, err := os.ReadFile(c.w.DestPath(e))
	missing := errors.Is(err, fs.ErrNotExist)
	if err != nil && !missing {
		c.violate(nil, "%s: read destination: %v", t.ID, err)
		return
	}
	switch {
	case e.Kind == DestinationExists:
		if string(got) != somebodyElses {
			c.violate(nil, "%s (%s): the file already at the destination was changed or removed (%q, %v)", t.ID, e.Kind, clip(got), err)
		}
		if t.State == state.StateDone {
			c.violate(&c.r.Lost, "%s (%s): done, but its destination was taken", t.ID, e.Kind)
		}
	case e.Kind == MissingSource:
		if string(got) != stalePartial {
			c.violate(nil, "%s (%s): the file no attempt of it wrote was changed or removed (%q, %v)", t.ID, e.Kind, clip(got), err)
		}
		if t.State == state.StateDone {
			c.violate(&c.r.Lost, "%s (%s): done, but it cannot succeed", t.ID, e.Kind)
		}
	case t.State == state.StateDone:
		if e.Kind != Good {
			c.violate(&c.r.Lost, "%s (%s): done, but it cannot succeed", t.ID, e.Kind)
		} else if !bytes.Equal(got, e.Data) {
			c.violate(&c.r.Lost, "%s (%s): done, but the destination does not hold the source's bytes (%d bytes, %v)", t.ID, e.Kind, len(got), err)
		}
	case t.State == state.StateFailed || t.State == state.StateKilled:
		if !missing {
			c.violate(nil, "%s (%s): %s, but a destination copy is left (%q)", t.ID, e.Kind, t.State, clip(got))
		}
	}
}

// checkSubmissions checks one transfer's FTS files, in submission order.
func (c *checker) checkSubmissions(t *state.Transfer, subs []ftstest.SimFile) {
	dup := false
	sids := map[string]bool{}
	finished := 0
	for i, f := range subs {
		if f.SID != "" && sids[f.SID] {
			dup = true
			c.violate(nil, "%s: sid %s submitted twice", t.ID, f.SID)
		}
		sids[f.SID] = true
		if f.State == "FINISHED" {
			finished++
		}
		if i == 0 {
			continue
		}
		prev := subs[i-1]
		if prev.Finished == nil && slices.Contains(c.o.LostJobs, prev.JobID) {
			continue
		}
		if prev.Finished == nil || f.Submitted.Before(*prev.Finished) {
			dup = true
			c.violate(nil, "%s: submitted in job %s at %s while its file in job %s was %s (finished %v)",
				t.ID, f.JobID, f.Submitted.Format(time.StampMilli), prev.JobID, prev.State, fmtTime(prev.Finished))
		}
	}
	if finished > 1 {
		dup = true
		c.violate(nil, "%s: copied %d times by FTS", t.ID, finished)
	}
	if t.State.Terminal() && len(subs) > t.Attempts+1 {
		dup = true
		c.violate(nil, "%s: %d FTS submissions but only %d attempts recorded", t.ID, len(subs), t.Attempts)
	}
	if dup {
		c.r.Duplicated++
	}
	if len(subs) == 0 {
		// one recorded done because a done transfer owns its destination
		// with the same file ("already there") had nothing to copy:
		// checkFiles checks that the bytes are there
		if t.State == state.StateDone && !strings.HasPrefix(t.Reason, "already there: transfer ") {
			c.violate(&c.r.Lost, "%s: done without ever being submitted to FTS", t.ID)
		}
		return
	}
	last := subs[len(subs)-1]
	switch {
	case t.State == state.StateDone && last.State == "FAILED" && last.JobID == t.FTSJob && strings.HasPrefix(t.Reason, ownFileThere):
		// FTS refused to overwrite the destination, which the agent found
		// to hold this transfer's file (checkFiles compares the bytes)
	case t.State == state.StateDone && (last.State != "FINISHED" || last.JobID != t.FTSJob):
		c.violate(&c.r.Lost, "%s: done in job %s, but its last FTS file is %s in job %s", t.ID, t.FTSJob, last.State, last.JobID)
	case t.State.Terminal() && t.State != state.StateDone && last.State == "FINISHED":
		c.violate(&c.r.Lost, "%s: %s (%q), but FTS finished it in job %s", t.ID, t.State, t.Reason, last.JobID)
	case t.State.Terminal() && last.Finished == nil:
		c.violate(&c.r.Lost, "%s: %s, but its file in job %s is still %s in FTS", t.ID, t.State, last.JobID, last.State)
	}
}

// ownFileThere starts the reason of a transfer recorded done because the
// file at its destination, which FTS would not overwrite, is its own.
const ownFileThere = "the destination already holds this file"

// checkSIDs checks that every sid names one job.
func (c *checker) checkSIDs(files []ftstest.SimFile) {
	job := map[string]string{}
	var bad []string
	for _, f := range files {
		if f.SID == "" {
			continue
		}
		if j, ok := job[f.SID]; ok && j != f.JobID {
			bad = append(bad, fmt.Sprintf("sid %s used by jobs %s and %s", f.SID, j, f.JobID))
		}
		job[f.SID] = f.JobID
	}
	sort.Strings(bad)
	for _, b := range bad {
		c.violate(&c.r.Duplicated, "%s", b)
	}
}

// TransferID is the aso transfer ID of a simulator file, from the metadata
// aso submits it with ("" if absent).
func TransferID(f ftstest.SimFile) string {
	var md struct {
		TransferID string `json:"transfer_id"`
	}
	_ = json.Unmarshal(f.Metadata, &md)
	return md.TransferID
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return t.Format(time.StampMilli)
}

func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

// TouchedBy returns the IDs of the transfers that the agent of process pid
// claimed or changed: its ID (hostname:pid:random) is their owner or in
// their history.
func (w *World) TouchedBy(pid int) []string {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ts, err := w.store.List(ctx, state.Filter{})
	if err != nil {
		w.t.Fatalf("proctest: list transfers: %v", err)
	}
	mark := fmt.Sprintf(":%d:", pid)
	var out []string
	for _, t := range ts {
		hit := strings.Contains(t.Owner, mark)
		for _, h := range t.History {
			hit = hit || strings.Contains(h.By, mark)
		}
		if hit {
			out = append(out, t.ID)
		}
	}
	return out
}
