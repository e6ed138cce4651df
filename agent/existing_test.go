package agent_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/internal/busytest"
	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/state"
)

// TestAgent_FileAlreadyAtTheDestination: FTS archived a job before any
// run polled it, so its status answers 404: the job is lost. Before an
// attempt is charged for the loss, the file at each destination is read
// (gfal-stat and gfal-sum, the check of "destination exists"):
//   - the transfer's own file (the job had copied it): done, without an
//     attempt and without being sent again, the reason saying so;
//   - nothing (the job had not copied it yet): one attempt charged, as for
//     any lost job, and the transfer sent again.
//
// A transfer whose destination holds a different file fails "destination
// exists", saying what is there, and the file stays.
func TestAgent_FileAlreadyAtTheDestination(t *testing.T) {
	for name, world := range worlds {
		t.Run(name, func(t *testing.T) { fileAlreadyThere(t, world) })
	}
}

// worlds build a world on each backend.
var worlds = map[string]func(testing.TB, ftstest.Options) *world{"memfile": newWorld, "couch": newCouchWorld}

func fileAlreadyThere(t *testing.T, world func(testing.TB, ftstest.Options) *world) {
	var late string // the destination the first job had not copied yet
	w := world(t, ftstest.Options{TransferTimeOf: func(_, dst string) time.Duration {
		if dst == late {
			return 2 * time.Hour
		}
		return time.Minute
	}})
	ours, data := w.request("archived", 0, true)
	empty, _ := w.request("empty", 1, true)
	other, _ := w.request("other", 2, true)
	late = "file://" + w.dstPath(empty)
	theirs := []byte("an older, different file")
	w.writeFile(w.dstPath(other), theirs)
	w.enqueue([]state.Request{ours, empty, other})
	cfg := w.config("agent-1")
	cfg.Once = true
	must(t, w.agent(cfg, nil).Run(context.Background()))
	w.clk.Advance(time.Hour)
	first := w.sim.Files()
	if len(first) != 3 || first[0].JobID != first[1].JobID || first[1].JobID != first[2].JobID {
		t.Fatalf("first submission: %+v, want the three files in one job", first)
	}
	w.sim.LoseJob(first[0].JobID) // archived: 404 from now on
	if got, err := os.ReadFile(w.dstPath(ours)); err != nil || string(got) != string(data) {
		t.Fatalf("the first job did not copy the file: %v", err)
	}

	cfg.Once = false
	var total agent.PassStats
	a := w.agent(cfg, nil)
	a.OnPass = func(ps agent.PassStats) { total.Add(ps) }
	must(t, a.Run(context.Background()))
	sent := map[string]int{}
	for _, f := range w.sim.Files() {
		sent[f.Destination]++
	}
	got := w.get(ours.ID())
	if n := sent["file://"+w.dstPath(ours)]; n != 1 || got.Attempts != 0 {
		t.Errorf("ours: submitted %d times, %d attempts; want once, none charged for the lost job", n, got.Attempts)
	}
	if got.State != state.StateDone || !strings.Contains(got.Reason, "already holds this file") ||
		!strings.Contains(got.Reason, "was lost (404 Not Found)") {
		t.Errorf("ours: %s %q, want done saying the file was already there and that FTS lost the job", got.State, got.Reason)
	}
	if last := got.History[len(got.History)-1]; last.To != state.StateDone || last.Reason != got.Reason {
		t.Errorf("ours: last history entry %+v does not say why it is done", last)
	}
	if b, err := os.ReadFile(w.dstPath(ours)); err != nil || string(b) != string(data) {
		t.Errorf("ours: the file at the destination was changed or deleted: %v", err)
	}
	got = w.get(empty.ID())
	if n := sent[late]; n != 2 || got.State != state.StateDone || got.Attempts != 1 {
		t.Errorf("empty: submitted %d times, %s after %d attempts; want done after 2 submissions, 1 attempt charged", n, got.State, got.Attempts)
	}
	if !hasHistory(got, "was lost (404 Not Found); the destination was empty when checked") {
		t.Errorf("empty: no history entry says the destination was empty: %+v", got.History)
	}
	got = w.get(other.ID())
	if got.State != state.StateFailed || got.ErrorClass != string(state.ClassDestinationExists) ||
		!strings.Contains(got.Reason, fmt.Sprintf("the file there differs (%d bytes, not ", len(theirs))) {
		t.Errorf("other: %s %s %q, want failed destination_exists saying the file there differs", got.State, got.ErrorClass, got.Reason)
	}
	if b, err := os.ReadFile(w.dstPath(other)); err != nil || string(b) != string(theirs) {
		t.Errorf("other: the file at the destination was changed or deleted: %v", err)
	}
	if total.Existing != 1 || total.Lost != 1 {
		t.Errorf("run totals: existing %d, lost %d; want 1 and 1", total.Existing, total.Lost)
	}
}

// hasHistory reports whether a history entry of t has reason in its reason.
func hasHistory(t state.Transfer, reason string) bool {
	for _, h := range t.History {
		if strings.Contains(h.Reason, reason) {
			return true
		}
	}
	return false
}

// withGfalStat makes the world's deleter run script as gfal-stat (and the
// real gfal-rm and gfal-sum), and returns the file counting its runs.
func (w *world) withGfalStat(script string) string {
	w.t.Helper()
	dir := w.t.TempDir()
	runs := filepath.Join(dir, "runs")
	for _, name := range []string{"gfal-rm", "gfal-sum"} {
		must(w.t, os.Symlink("/usr/bin/"+name, filepath.Join(dir, name)))
	}
	body := "#!/bin/sh\necho run >> '" + runs + "'\n" + script + "\n"
	must(w.t, os.WriteFile(filepath.Join(dir, "gfal-stat"), []byte(body), 0o755))
	w.deleter = &srm.Deleter{Command: filepath.Join(dir, "gfal-rm"), Timeout: 30 * time.Second}
	return runs
}

// TestAgent_ExistingFileUnreadable: while the file at the destination of a
// failure "destination exists" cannot be read, the outcome waits, checked
// again each pass (gfal-stat runs once a pass); after MaxCheckAttempts the
// failure is recorded with the check's error, retryable: each attempt
// checks MaxCheckAttempts times, until the attempts run out. The file is
// left alone.
func TestAgent_ExistingFileUnreadable(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	runs := w.withGfalStat(`echo "gfal-stat error: 5 (Input/output error) - storage down" >&2; exit 5`)
	r, _ := w.request("unreadable", 0, true)
	theirs := []byte("somebody else's file")
	w.writeFile(w.dstPath(r), theirs)
	w.enqueue([]state.Request{r})
	cfg := w.config("agent-1")
	must(t, w.agent(cfg, nil).Run(context.Background()))
	got := w.get(r.ID())
	if got.State != state.StateFailed || got.Attempts != cfg.Policy.MaxAttempts ||
		!strings.Contains(got.Reason, "could not be checked") || !strings.Contains(got.Reason, "storage down") {
		t.Errorf("%s after %d attempts, %q: want failed after %d, saying the file there could not be checked",
			got.State, got.Attempts, got.Reason, cfg.Policy.MaxAttempts)
	}
	want := agent.MaxCheckAttempts * cfg.Policy.MaxAttempts
	if b, err := os.ReadFile(runs); err != nil || strings.Count(string(b), "run") != want {
		t.Errorf("gfal-stat ran %d times, want %d", strings.Count(string(b), "run"), want)
	}
	if b, err := os.ReadFile(w.dstPath(r)); err != nil || string(b) != string(theirs) {
		t.Errorf("the file at the destination was changed or deleted: %v", err)
	}
}

// TestAgent_ExistingFileGoneWhenChecked: FTS found a file at the
// destination that is gone when the agent looks: the destination is free,
// so the failure is retried.
func TestAgent_ExistingFileGoneWhenChecked(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	w.withGfalStat(`echo "gfal-stat error: 2 (No such file or directory) - no such file" >&2; exit 2`)
	r, _ := w.request("gone", 0, true)
	w.writeFile(w.dstPath(r), []byte("somebody else's file"))
	w.enqueue([]state.Request{r})
	cfg := w.config("agent-1")
	cfg.Once = true
	must(t, w.agent(cfg, nil).Run(context.Background()))
	got := w.get(r.ID())
	if got.State != state.StateNew || got.Attempts != 1 || !strings.Contains(got.Reason, "the destination was empty when checked") {
		t.Errorf("%s after %d attempts, %q: want new again, saying the destination was empty", got.State, got.Attempts, got.Reason)
	}
}

// TestAgent_DestinationBusyInFTS: an FTS server with CheckDuplicates
// refuses a whole job with 409 "The submission is duplicated" when one of
// its files writes the destination of an active FTS file (here another
// tool's copy of the same file). The agent finds no job for its sid, and
// the file whose destination FTS's message names fails retryable while
// the other two go at once under the same sid; once the other copy has
// landed, the busy one finds the file there, its own: done. FTS sees no
// resubmission loop.
func TestAgent_DestinationBusyInFTS(t *testing.T) {
	for name, world := range worlds {
		t.Run(name, func(t *testing.T) { destinationBusy(t, world) })
	}
}

func destinationBusy(t *testing.T, world func(testing.TB, ftstest.Options) *world) {
	var busy string
	w := world(t, ftstest.Options{CheckDuplicates: true, TransferTimeOf: func(_, dst string) time.Duration {
		if dst == busy {
			return 7 * time.Minute
		}
		return 0
	}})
	ctx := context.Background()
	var reqs []state.Request
	for i := range 3 {
		r, _ := w.request("busy", i, true)
		reqs = append(reqs, r)
	}
	busy = "file://" + w.dstPath(reqs[1])
	_, err := w.client.Submit(ctx, fts.Submission{Files: []fts.SubmitFile{{
		Sources: []string{"file://" + w.srcPath(reqs[1])}, Destinations: []string{busy}}}})
	must(t, err)
	w.enqueue(reqs)
	cfg := w.config("agent-1")
	cfg.Once = true
	must(t, w.agent(cfg, nil).Run(ctx))
	// one pass: FTS's message names the busy file; the other two went at once
	for i, r := range reqs {
		got := w.get(r.ID())
		if busyOne := i == 1; busyOne != (got.State == state.StateNew) || busyOne && got.Attempts != 1 {
			t.Errorf("after one pass, transfer %d: %s after %d attempts (%q)", i, got.State, got.Attempts, got.Reason)
		} else if busyOne && got.ErrorClass != string(state.ClassDestinationBusy) {
			t.Errorf("after one pass, the busy transfer's error class is %q, want %s", got.ErrorClass, state.ClassDestinationBusy)
		}
	}
	cfg.Once = false
	must(t, w.agent(cfg, nil).Run(ctx))

	for i, r := range reqs {
		if got := w.get(r.ID()); got.State != state.StateDone {
			t.Errorf("transfer %d: %s %q, want done", i, got.State, got.Reason)
		}
	}
	got := w.get(reqs[1].ID())
	if !strings.Contains(got.Reason, "already holds this file") || got.Attempts > 2 {
		t.Errorf("busy transfer: %q after %d attempts, want done as already there within 2 attempts", got.Reason, got.Attempts)
	}
	var refused bool
	for _, h := range got.History {
		refused = refused || strings.Contains(h.Reason, "another active FTS transfer writes this destination") &&
			strings.Contains(h.Reason, "The submission is duplicated")
	}
	if !refused {
		t.Errorf("busy transfer: no history entry gives FTS's refusal: %+v", got.History)
	}
	// the tool's job, the job of three, the other two under the same sid,
	// the busy one again after each cool-off (2 at most)
	if n := w.sim.Requests()["submit"]; n > 5 {
		t.Errorf("%d submissions, want at most 5", n)
	}
}

// ownFileThere enqueues n transfers whose destinations already hold their
// own files (each source's bytes), as an earlier copy left them; mod
// changes each request before it is enqueued.
func (w *world) ownFileThere(n int, mod func(i int, r *state.Request)) []state.Request {
	w.t.Helper()
	var reqs []state.Request
	for i := range n {
		r, data := w.request("there", i, true)
		w.writeFile(w.dstPath(r), data)
		if mod != nil {
			mod(i, &r)
		}
		reqs = append(reqs, r)
	}
	w.enqueue(reqs)
	return reqs
}

// TestAgent_ExistingFileChecksNotStarvedByTheBudget: the checks of one
// record phase share --delete-timeout; those the time ran out on are not
// attempts, and the ones held longest go first, so that every transfer
// whose own file is there ends done at its first attempt, however many
// come at once. The checks' time and the budget are scaled to the
// machine together (busytest), so that gfal's own slowness on a busy
// machine does not change the proportion.
func TestAgent_ExistingFileChecksNotStarvedByTheBudget(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	w.withGfalStat(fmt.Sprintf(`sleep %.2f; exec /usr/bin/gfal-stat "$@"`, busytest.Factor()))
	reqs := w.ownFileThere(16, nil)
	cfg := w.config("agent-1")
	cfg.DeleteTimeout = busytest.Scale(2500 * time.Millisecond)
	must(t, w.agent(cfg, nil).Run(context.Background()))
	for i, r := range reqs {
		if got := w.get(r.ID()); got.State != state.StateDone || got.Attempts != 0 {
			t.Errorf("transfer %d: %s after %d attempts (%q), want done at its first", i, got.State, got.Attempts, got.Reason)
		}
	}
}

// TestAgent_ExistingFileOfAProducersDocument: a transfer's adler32 in
// capitals, or a transfer without a size (both valid in a producer's
// document), still recognises its own file.
func TestAgent_ExistingFileOfAProducersDocument(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	reqs := w.ownFileThere(2, func(i int, r *state.Request) {
		if i == 0 {
			r.Checksums["adler32"] = strings.ToUpper(r.Checksums["adler32"])
		} else {
			r.Size = 0
		}
	})
	must(t, w.agent(w.config("agent-1"), nil).Run(context.Background()))
	if got := w.get(reqs[0].ID()); got.State != state.StateDone {
		t.Errorf("upper-case adler32: %s %q, want done", got.State, got.Reason)
	}
	got := w.get(reqs[1].ID())
	if got.State != state.StateDone || !strings.Contains(got.Reason, "the transfer gives no size") {
		t.Errorf("no size: %s %q, want done saying only adler32 was compared", got.State, got.Reason)
	}
}

// failOnceTerminal fails the first SetTerminalState call.
type failOnceTerminal struct {
	agent.Store
	failed bool
}

func (s *failOnceTerminal) SetTerminalState(ctx context.Context, outs []state.Terminal) ([]state.Result, error) {
	if !s.failed {
		s.failed = true
		return nil, errors.New("the database is away")
	}
	return s.Store.SetTerminalState(ctx, outs)
}

// TestAgent_ExistingCountedOnceWritten: a file found to be the transfer's
// own is counted (existing, and done) when its outcome is written, not
// when it is checked: a write that fails and is made again counts once.
func TestAgent_ExistingCountedOnceWritten(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	w.wrap = func(s agent.Store) agent.Store { return &failOnceTerminal{Store: s} }
	reqs := w.ownFileThere(1, nil)
	var total agent.PassStats
	a := w.agent(w.config("agent-1"), nil)
	a.OnPass = func(ps agent.PassStats) { total.Add(ps) }
	must(t, a.Run(context.Background()))
	if got := w.get(reqs[0].ID()); got.State != state.StateDone {
		t.Fatalf("%s %q, want done", got.State, got.Reason)
	}
	if total.Done != 1 || total.Existing != 1 {
		t.Errorf("run totals: done %d, existing %d; want 1 and 1", total.Done, total.Existing)
	}
}

// killOn409 asks for the kill of a transfer when FTS answers a submission
// with 409, as a user might while the submission is on its way.
type killOn409 struct {
	*fts.Client
	store state.Store
	id    string
}

func (k *killOn409) Submit(ctx context.Context, s fts.Submission) (string, error) {
	id, err := k.Client.Submit(ctx, s)
	var dup *fts.DuplicateError
	if errors.As(err, &dup) {
		if _, kerr := k.store.RequestKill(ctx, []string{k.id}); kerr != nil {
			return id, kerr
		}
	}
	return id, err
}

// TestAgent_DestinationBusyKilledMeanwhile: a transfer whose kill was
// requested while FTS refused its job as duplicated is released without
// penalty and ends killed at the next claim, not failed with an attempt.
func TestAgent_DestinationBusyKilledMeanwhile(t *testing.T) {
	var busy string
	w := newWorld(t, ftstest.Options{CheckDuplicates: true, TransferTimeOf: func(_, dst string) time.Duration {
		if dst == busy {
			return time.Hour
		}
		return 0
	}})
	ctx := context.Background()
	r, _ := w.request("busy-killed", 0, true)
	busy = "file://" + w.dstPath(r)
	_, err := w.client.Submit(ctx, fts.Submission{Files: []fts.SubmitFile{{
		Sources: []string{"file://" + w.srcPath(r)}, Destinations: []string{busy}}}})
	must(t, err)
	w.enqueue([]state.Request{r})
	cfg := w.config("agent-1")
	cfg.Once = true
	for range 2 {
		a, err := agent.New(cfg, w.open("agent-1"), &killOn409{Client: w.client, store: w.store, id: r.ID()}, w.sites, w.deleter, w.log)
		must(t, err)
		must(t, a.Run(ctx))
	}
	if got := w.get(r.ID()); got.State != state.StateKilled || got.Attempts != 0 {
		t.Errorf("%s after %d attempts (%q), want killed without an attempt", got.State, got.Attempts, got.Reason)
	}
}

// TestAgent_ArchivedJobSourceCleanedUp: FTS archived a finished job before
// any run polled it, and the temporary source was cleaned up since. The
// destination could not be read while the job was lost (its storage was
// down for MaxCheckAttempts passes: an attempt is charged), so the
// transfer is sent again and fails "source missing", whose destination
// copy is deleted as a stale partial copy, unless it is the transfer's own
// file: then it is kept and the transfer recorded done.
func TestAgent_ArchivedJobSourceCleanedUp(t *testing.T) {
	for name, world := range worlds {
		t.Run(name, func(t *testing.T) { sourceCleanedUp(t, world(t, ftstest.Options{TransferTime: time.Minute}), true) })
	}
	// without an adler32 the file cannot be proved the transfer's, nor a
	// partial copy: a file of its size may be the only copy, and stays
	t.Run("no checksum", func(t *testing.T) { sourceCleanedUp(t, newWorld(t, ftstest.Options{TransferTime: time.Minute}), false) })
}

func sourceCleanedUp(t *testing.T, w *world, checksum bool) {
	r, data := w.request("cleaned", 0, true)
	if !checksum {
		r.Checksums = nil
	}
	if checksum {
		w.withGfalStat(fmt.Sprintf(`if [ "$(wc -l < "$(dirname "$0")/runs")" -le %d ]; then
	echo "gfal-stat error: 5 (Input/output error) - storage down" >&2; exit 5
fi
exec /usr/bin/gfal-stat "$@"`, agent.MaxCheckAttempts))
	}
	w.enqueue([]state.Request{r})
	cfg := w.config("agent-1")
	cfg.Once = true
	must(t, w.agent(cfg, nil).Run(context.Background()))
	w.clk.Advance(time.Hour)
	first := w.sim.Files()
	if len(first) != 1 || first[0].State != "FINISHED" {
		t.Fatalf("first job: %+v, want its file finished", first)
	}
	w.sim.LoseJob(first[0].JobID)
	must(t, os.Remove(w.srcPath(r)))

	cfg.Once = false
	must(t, w.agent(cfg, nil).Run(context.Background()))
	if n := len(w.sim.Files()); n != 2 {
		t.Errorf("%d files submitted, want 2", n)
	}
	got := w.get(r.ID())
	switch {
	case checksum && (got.State != state.StateDone || !strings.Contains(got.Reason, "already holds this file") || !strings.Contains(got.Reason, "SOURCE [2]")):
		t.Errorf("%s %q, want done saying the file was already there and what FTS said", got.State, got.Reason)
	case !checksum && (got.State != state.StateFailed || !strings.Contains(got.Reason, "may be this transfer's only copy")):
		t.Errorf("%s %q, want failed saying the file at the destination was left in place", got.State, got.Reason)
	}
	if b, err := os.ReadFile(w.dstPath(r)); err != nil || string(b) != string(data) {
		t.Errorf("the transfer's own copy at the destination was deleted or changed: %v", err)
	}
}

// TestAgent_StaleCopyReadOnce: the destination of a source-missing failure
// is read once to see whether it is the transfer's own file; it is not,
// and no attempt of the transfer wrote there (the source is missing), so
// the deletion rule leaves it in place: gfal-rm never runs, and the
// failure says why.
func TestAgent_StaleCopyReadOnce(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	runs := w.withGfalStat(`exec /usr/bin/gfal-stat "$@"`)
	dir := filepath.Dir(w.deleter.Command)
	count := filepath.Join(dir, "rm-runs")
	must(t, os.Remove(w.deleter.Command))
	must(t, os.WriteFile(w.deleter.Command, []byte(`#!/bin/sh
echo run >> '`+count+`'
exec /usr/bin/gfal-rm "$@"
`), 0o755))
	r, _ := w.request("stale", 0, false)
	r.Checksums = map[string]string{"adler32": "0badf00d"}
	w.writeFile(w.dstPath(r), []byte("stale partial copy"))
	w.enqueue([]state.Request{r})
	must(t, w.agent(w.config("agent-1"), nil).Run(context.Background()))
	got := w.get(r.ID())
	if got.State != state.StateFailed || !strings.Contains(got.Reason, "left in place: no attempt of this transfer began writing there") {
		t.Errorf("%s %q, want failed with the file left in place", got.State, got.Reason)
	}
	if b, err := os.ReadFile(w.dstPath(r)); err != nil || string(b) != "stale partial copy" {
		t.Errorf("the file at the destination was deleted or changed (%v)", err)
	}
	if b, err := os.ReadFile(runs); err != nil || strings.Count(string(b), "run") != 1 {
		t.Errorf("gfal-stat ran %d times, want 1", strings.Count(string(b), "run"))
	}
	if _, err := os.Stat(count); !os.IsNotExist(err) {
		t.Errorf("gfal-rm ran (%v), want never", err)
	}
}
