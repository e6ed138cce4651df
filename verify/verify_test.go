package verify_test

import (
	"context"
	"errors"
	"fmt"
	"hash/adler32"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/srm/davtest"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
	"github.com/asyncstageout/aso/verify"
)

const user = "alice"

func requireGfal(t testing.TB) {
	t.Helper()
	for _, name := range []string{"gfal-stat", "gfal-sum"} {
		if _, err := exec.LookPath(name); err != nil {
			t.Fatalf("%s is needed for this test: %s", name, srm.GfalRmInstallHint())
		}
	}
}

// world is a file store with done transfers whose destinations are files
// under dir, each named by the URL dest returns for its file name.
type world struct {
	st   *memfile.Store
	dir  string
	dest func(name string) string
	ids  map[string]string // file name -> transfer ID
}

func newWorld(t *testing.T, dest func(dir, name string) string) *world {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(t.TempDir(), "state.aso")
	if _, err := memfile.Create(path); err != nil {
		t.Fatal(err)
	}
	st, err := memfile.Open(path, state.Config{Agent: state.Agent{User: user, Owner: "ops@host:cli"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &world{st: st, dir: dir, dest: func(name string) string { return dest(dir, name) }, ids: map[string]string{}}
}

// done records a done transfer of the file name with the size and
// adler32 of data (sum "" for none), and writes what (nil: nothing) at
// its destination.
func (w *world) done(t *testing.T, name string, data []byte, sum bool, what []byte) string {
	t.Helper()
	r := state.Request{User: user, Source: "T2_A", Destination: "T2_B", SourceLFN: "/store/temp/" + name, DestinationLFN: "/store/user/" + name, Size: int64(len(data))}
	if sum {
		r.Checksums = map[string]string{"adler32": fmt.Sprintf("%08x", adler32.Checksum(data))}
	}
	ctx := context.Background()
	if _, err := w.st.Enqueue(ctx, []state.Request{r}); err != nil {
		t.Fatal(err)
	}
	c, err := w.st.NewTransfers(ctx, state.ClaimRequest{Limit: 1})
	if err != nil || len(c.Transfers) != 1 {
		t.Fatal(c, err)
	}
	tr := c.Transfers[0]
	job := "job-" + name
	if _, err := w.st.SetTransferIDs(ctx, []state.CommitJob{{JobID: job, Commits: []state.Commit{{Transfer: tr, SourcePFN: "file:///src/" + name, DestPFN: w.dest(name), FileID: 1}}}}); err != nil {
		t.Fatal(err)
	}
	tr, _ = w.st.Get(ctx, tr.ID)
	res, err := w.st.SetTerminalState(ctx, []state.Terminal{{Transfer: tr, Outcome: state.OutcomeDone, FTSJob: job}})
	if err != nil || res[0].Err != nil {
		t.Fatal(res, err)
	}
	if what != nil {
		if err := os.WriteFile(filepath.Join(w.dir, name), what, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w.ids[name] = tr.ID
	return tr.ID
}

// pages lists the done transfers of the store, one page.
func (w *world) pages(ctx context.Context) verify.Pages {
	return func(fn func([]state.Transfer) error) error {
		ts, err := w.st.List(ctx, state.Filter{User: user, States: []state.State{state.StateDone}})
		if err != nil {
			return err
		}
		return fn(ts)
	}
}

func fileURL(dir, name string) string { return "file://" + filepath.Join(dir, name) }

// populate makes one transfer of each result: present, missing, differs
// by size, differs by checksum, and a present file checked by size only.
func (w *world) populate(t *testing.T) {
	data := []byte("the payload of a physics file\n")
	w.done(t, "present.root", data, true, data)
	w.done(t, "missing.root", data, true, nil)
	w.done(t, "short.root", data, true, data[:5])
	flipped := append([]byte(nil), data...)
	flipped[3] ^= 1
	w.done(t, "flipped.root", data, true, flipped)
	w.done(t, "nosum.root", data, false, data)
}

func TestVerifier_File(t *testing.T) {
	requireGfal(t)
	w := newWorld(t, fileURL)
	w.populate(t)
	if err := os.Mkdir(filepath.Join(w.dir, "dir.root"), 0o755); err != nil {
		t.Fatal(err)
	}
	w.done(t, "dir.root", []byte("x"), true, nil)
	ctx := context.Background()
	got := map[string]verify.Outcome{}
	var mu sync.Mutex
	v := &verify.Verifier{Inspector: &srm.Inspector{Timeout: 30 * time.Second}, Recorder: w.st, Parallel: 3,
		Report: func(o verify.Outcome, _ verify.Totals) { mu.Lock(); got[o.ID] = o; mu.Unlock() }}
	tot, err := v.Run(ctx, w.pages(ctx))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]state.VerifyResult{"present.root": state.VerifyPresent, "missing.root": state.VerifyMissing, "short.root": state.VerifyDiffers,
		"flipped.root": state.VerifyDiffers, "nosum.root": state.VerifyPresent, "dir.root": state.VerifyDiffers}
	for name, res := range want {
		o := got[w.ids[name]]
		if o.Result != res {
			t.Errorf("%s: %+v, want %s", name, o, res)
		}
		tr, err := w.st.Get(ctx, w.ids[name])
		if err != nil {
			t.Fatal(err)
		}
		if last, ok := tr.LastVerification(); !ok || last.Verified != res || last.Reason != "verified: "+string(res)+": "+o.Detail {
			t.Errorf("%s: history's verification %+v, want %s with the detail %q", name, last, res, o.Detail)
		}
	}
	if o := got[w.ids["nosum.root"]]; o.Adler32 != "" {
		t.Errorf("no adler32 in the request: %+v, want no checksum read", o)
	}
	if tot != (verify.Totals{Present: 2, Missing: 1, Differs: 3}) || !errors.Is(tot.Err(), verify.ErrFound) {
		t.Errorf("totals %+v (%v), want 2 present, 1 missing, 3 differ, ErrFound", tot, tot.Err())
	}

	// the file comes back: the next verification replaces the entry
	data := []byte("the payload of a physics file\n")
	if err := os.WriteFile(filepath.Join(w.dir, "missing.root"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := w.st.Get(ctx, w.ids["missing.root"])
	if _, err := v.Run(ctx, w.pages(ctx)); err != nil {
		t.Fatal(err)
	}
	after, _ := w.st.Get(ctx, w.ids["missing.root"])
	n := 0
	for _, h := range after.History {
		if h.Verified != "" {
			n++
		}
	}
	if n != 1 || after.VerifiedAs() != state.VerifyPresent || len(after.History) != len(before.History) {
		t.Errorf("verified again: %d verification entries, last %s, %d entries (was %d); want one, present, as many", n, after.VerifiedAs(), len(after.History), len(before.History))
	}
}

// TestVerifier_HTTP verifies through the real gfal http plugin against a
// storage that answers as WebDAV storages do; a storage that refuses, or
// fails, is unreadable, never missing.
func TestVerifier_HTTP(t *testing.T) {
	requireGfal(t)
	var srv *davtest.Server
	w := newWorld(t, func(_, name string) string { return srv.URLOf(name) })
	srv = davtest.NewServer(t, w.dir)
	w.populate(t)
	data := []byte("x")
	w.done(t, "refused.root", data, true, data)
	w.done(t, "failing.root", data, true, data)
	srv.Fail("refused.root", http.StatusForbidden)
	srv.Fail("failing.root", http.StatusInternalServerError)
	ctx := context.Background()
	got := map[string]verify.Outcome{}
	v := &verify.Verifier{Inspector: &srm.Inspector{Timeout: 30 * time.Second}, Recorder: w.st, Parallel: 4,
		Report: func(o verify.Outcome, _ verify.Totals) { got[o.ID] = o }}
	tot, err := v.Run(ctx, w.pages(ctx))
	if err != nil {
		t.Fatal(err)
	}
	for name, res := range map[string]state.VerifyResult{"present.root": state.VerifyPresent, "missing.root": state.VerifyMissing,
		"short.root": state.VerifyDiffers, "flipped.root": state.VerifyDiffers, "nosum.root": state.VerifyPresent,
		"refused.root": state.VerifyUnreadable, "failing.root": state.VerifyUnreadable} {
		if o := got[w.ids[name]]; o.Result != res {
			t.Errorf("%s: %+v, want %s", name, o, res)
		}
	}
	if o := got[w.ids["refused.root"]]; o.Errno == 0 {
		t.Errorf("refused: %+v, want gfal's errno", o)
	}
	if tot.Unreadable != 2 || tot.Present != 2 || !errors.Is(tot.Err(), verify.ErrFound) {
		t.Errorf("totals %+v: want 2 unreadable, 2 present, and missing ones to win (ErrFound)", tot)
	}
}

// fakeInspector answers from a table, counting the calls at once.
type fakeInspector struct {
	found        map[string]srm.Existing
	active, peak atomic.Int32
	release      chan struct{}
}

func (f *fakeInspector) Check(ctx context.Context, url string, _ int64) srm.Existing {
	n := f.active.Add(1)
	defer f.active.Add(-1)
	for p := f.peak.Load(); n > p && !f.peak.CompareAndSwap(p, n); p = f.peak.Load() {
	}
	if f.release != nil {
		<-f.release
	}
	return f.found[url]
}

func (f *fakeInspector) Stat(ctx context.Context, url string) srm.Existing {
	return f.Check(ctx, url, 0)
}

// TestVerifier_ExitsAndDryRun: the totals' error for each mix of results,
// and a dry run that writes nothing.
func TestVerifier_ExitsAndDryRun(t *testing.T) {
	w := newWorld(t, fileURL)
	data := []byte("abc")
	a := w.done(t, "a", data, true, nil)
	b := w.done(t, "b", data, true, nil)
	sum := fmt.Sprintf("%08x", adler32.Checksum(data))
	ok := srm.Existing{Size: 3, Adler32: sum}
	bad := srm.Existing{Err: errors.New("srm: gfal-stat: Permission denied"), Errno: 13}
	ctx := context.Background()
	for _, c := range []struct {
		name string
		a, b srm.Existing
		want error
	}{
		{"all present", ok, ok, nil},
		{"one unreadable", ok, bad, verify.ErrUnreadable},
		{"missing and unreadable", srm.Existing{Missing: true}, bad, verify.ErrFound},
		{"differs", ok, srm.Existing{Size: 3, Adler32: "00000000"}, verify.ErrFound},
	} {
		f := &fakeInspector{found: map[string]srm.Existing{w.dest("a"): c.a, w.dest("b"): c.b}}
		tot, err := (&verify.Verifier{Inspector: f, Recorder: w.st}).Run(ctx, w.pages(ctx))
		if err != nil || !errors.Is(tot.Err(), c.want) || (c.want == nil && tot.Err() != nil) {
			t.Errorf("%s: %+v %v, err %v; want %v", c.name, tot, tot.Err(), err, c.want)
		}
	}
	before, _ := w.st.Get(ctx, a)
	f := &fakeInspector{found: map[string]srm.Existing{w.dest("a"): {Missing: true}, w.dest("b"): {Missing: true}}}
	tot, err := (&verify.Verifier{Inspector: f, DryRun: true}).Run(ctx, w.pages(ctx))
	if err != nil || tot.Missing != 2 {
		t.Fatalf("dry run: %+v %v", tot, err)
	}
	after, _ := w.st.Get(ctx, a)
	if after.Rev != before.Rev || after.VerifiedAs() != before.VerifiedAs() {
		t.Errorf("a dry run wrote %s: %s -> %s", a, before.Rev, after.Rev)
	}
	_ = b
}

// TestVerifier_BoundedParallel: no more checks run at once than Parallel.
func TestVerifier_BoundedParallel(t *testing.T) {
	w := newWorld(t, fileURL)
	for i := range 12 {
		w.done(t, fmt.Sprintf("f%d", i), []byte("z"), true, nil)
	}
	f := &fakeInspector{found: map[string]srm.Existing{}, release: make(chan struct{})}
	done := make(chan verify.Totals)
	ctx := context.Background()
	go func() {
		tot, _ := (&verify.Verifier{Inspector: f, Recorder: w.st, Parallel: 3}).Run(ctx, w.pages(ctx))
		done <- tot
	}()
	for i := range 12 {
		// while 3 or more are left, wait for all 3 workers to be checking
		for left := 12 - i; left >= 3 && f.active.Load() < 3; {
			runtime.Gosched()
		}
		f.release <- struct{}{}
	}
	tot := <-done
	if p := f.peak.Load(); p != 3 {
		t.Errorf("%d checks at once, want 3 (Parallel)", p)
	}
	if tot.Checked() != 12 {
		t.Errorf("checked %d, want 12", tot.Checked())
	}
}

func TestSample(t *testing.T) {
	s := verify.Sample{Fraction: 0.05, Seed: 7}
	n := 0
	for i := range 20000 {
		id := state.TransferID(user, "A", fmt.Sprint("/s/", i), "B", fmt.Sprint("/d/", i))
		picked := s.Picks(id)
		if picked {
			n++
		}
		if again := s.Picks(id); again != picked {
			t.Fatal("a sample changed its mind")
		}
	}
	if n < 800 || n > 1200 {
		t.Errorf("picked %d of 20000 at 5%%, want about 1000", n)
	}
	if !(verify.Sample{Fraction: 1}).Picks("x") {
		t.Error("a full sample left an ID out")
	}
}
