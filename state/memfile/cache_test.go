package memfile

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/statetest"
)

// cacheTestStore opens a store at path for alice's agent "agent-a" on
// clock, with one transfer enqueued and claimed, and returns the claimed
// transfer.
func cacheTestStore(t *testing.T, path string, clock *statetest.Clock) (*Store, state.Transfer) {
	t.Helper()
	s, err := Open(path, state.Config{Agent: state.Agent{User: statetest.Alice, Owner: "agent-a"}, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	if _, err := s.Enqueue(ctx, []state.Request{statetest.Req(statetest.Alice, 1)}); err != nil {
		t.Fatal(err)
	}
	c, err := s.NewTransfers(ctx, state.ClaimRequest{Limit: 1})
	if err != nil || len(c.Transfers) != 1 {
		t.Fatalf("claim: %+v, %v", c, err)
	}
	return s, c.Transfers[0]
}

// cachedVersion returns the cached document at the current span of id
// in s, nil if there is none.
func cachedVersion(t *testing.T, s *Store, id string) *state.Transfer {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.j.d
	i, ok := d.lookup(id)
	if !ok {
		t.Fatalf("transfer %s is not in the index", id)
	}
	var out state.Transfer
	if !d.cache.get(d.metas[i].at, &out) {
		return nil
	}
	return &out
}

const cacheChildEnv = "ASO_MEMFILE_CACHE_CHILD"

// TestCache_AnotherProcessAppends: a transfer this handle wrote (and so
// cached) and another process then changed is read back as the other
// process wrote it, whether the other process only appended or also
// compacted the file.
func TestCache_AnotherProcessAppends(t *testing.T) {
	if how := os.Getenv(cacheChildEnv); how != "" {
		cacheChild(t, how)
		return
	}
	for _, how := range []string{"append", "compact"} {
		t.Run(how, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.aso")
			s, claimed := cacheTestStore(t, path, statetest.NewClock(time.Now()))
			if c := cachedVersion(t, s, claimed.ID); c == nil || c.Rev != claimed.Rev {
				t.Fatalf("the claimed transfer is not cached at its revision %s: %+v", claimed.Rev, c)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestCache_AnotherProcessAppends$")
			cmd.Env = append(os.Environ(), cacheChildEnv+"="+how, "ASO_MEMFILE_CACHE_PATH="+path, "ASO_MEMFILE_CACHE_ID="+claimed.ID)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("the other process: %v\n%s", err, out)
			}
			got, err := s.Get(context.Background(), claimed.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !got.KillRequested || got.Rev == claimed.Rev {
				t.Fatalf("read back the version this handle wrote (rev %s, kill requested %v), not the other process's", got.Rev, got.KillRequested)
			}
		})
	}
}

// cacheChild requests the kill of the transfer the parent claimed, in
// the parent's file, and compacts it if asked to.
func cacheChild(t *testing.T, how string) {
	s, err := Open(os.Getenv("ASO_MEMFILE_CACHE_PATH"), state.Config{Agent: state.Agent{User: statetest.Alice, Owner: "admin"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	res, err := s.RequestKill(ctx, []string{os.Getenv("ASO_MEMFILE_CACHE_ID")})
	if err != nil || res[0].Err != nil {
		t.Fatalf("request kill: %v %+v", err, res)
	}
	if how == "compact" {
		if err := s.Compact(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCache_FailedAppendCachesNothing: a write whose record could not be
// appended leaves no cached document, so that the same write made again
// later, whose record lands at the same offset with the same length,
// reads back as the file holds it.
func TestCache_FailedAppendCachesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.aso")
	clock := statetest.NewClock(time.Now())
	s, claimed := cacheTestStore(t, path, clock)
	ctx := context.Background()
	ro, err := os.Open(path) // the same file, where every write fails
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	rw := s.j.f
	s.j.setFile(ro)
	clock.Advance(time.Second)
	if _, err := s.RenewLeases(ctx, []state.Transfer{claimed}); err == nil {
		t.Fatal("a renewal on a file that cannot be written succeeded")
	}
	if c := cachedVersion(t, s, claimed.ID); c != nil && c.Rev != claimed.Rev {
		t.Fatalf("after the failed append the cache holds revision %s, not the claimed version %s", c.Rev, claimed.Rev)
	}
	s.mu.Lock()
	for off := range s.j.d.cache.cur {
		if off >= s.j.off {
			t.Errorf("the cache holds a document at offset %d, past the end of the file (%d)", off, s.j.off)
		}
	}
	s.mu.Unlock()
	s.j.setFile(rw)
	if got, err := s.Get(ctx, claimed.ID); err != nil || got.Rev != claimed.Rev {
		t.Fatalf("after the failed append read back %+v, %v; want the claimed revision %s", got, err, claimed.Rev)
	}
	clock.Advance(time.Second)
	res, err := s.RenewLeases(ctx, []state.Transfer{claimed})
	if err != nil || res[0].Err != nil {
		t.Fatalf("renew: %v %+v", err, res)
	}
	got, err := s.Get(ctx, claimed.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Rev != res[0].Rev || !got.LeaseExpires.Equal(res[0].LeaseExpires.Time) {
		t.Fatalf("read back rev %s lease %s, the renewal wrote rev %s lease %s", got.Rev, got.LeaseExpires, res[0].Rev, res[0].LeaseExpires)
	}
}

// TestCache_FollowsCompaction: after this handle compacts the file, the
// documents it had cached are found at their new offsets (and, as every
// hit in the package's tests, checked against the file).
func TestCache_FollowsCompaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.aso")
	s, claimed := cacheTestStore(t, path, statetest.NewClock(time.Now()))
	ctx := context.Background()
	before := s.j.d.metas[s.j.d.ids[mustKey(t, claimed.ID)]].at
	if err := s.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if after := s.j.d.metas[s.j.d.ids[mustKey(t, claimed.ID)]].at; after.off == before.off {
		t.Fatalf("compaction left the transfer at offset %d", after.off)
	}
	if c := cachedVersion(t, s, claimed.ID); c == nil || c.Rev != claimed.Rev {
		t.Fatalf("after compaction the cache holds %+v at the transfer's new offset, want revision %s", c, claimed.Rev)
	}
	if got, err := s.Get(ctx, claimed.ID); err != nil || got.Rev != claimed.Rev {
		t.Fatalf("get: %+v, %v", got, err)
	}
}

func mustKey(t *testing.T, id string) key {
	t.Helper()
	k, ok := keyOf(id)
	if !ok {
		t.Fatalf("%q is not a transfer ID", id)
	}
	return k
}

// TestCache_Bounded: the cache keeps at most its bound of encoded bytes,
// however many documents are written.
func TestCache_Bounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.aso")
	s, err := OpenOptions(path, state.Config{}, Options{Create: true, CacheBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	reqs := make([]state.Request, 1000)
	for i := range reqs {
		reqs[i] = statetest.Req(fmt.Sprint("user", i%3), i)
	}
	if _, err := s.Enqueue(context.Background(), reqs); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, gen := range []map[int64]cached{s.j.d.cache.cur, s.j.d.cache.old} {
		for _, e := range gen {
			n += e.n
		}
	}
	if n == 0 || n > 64<<10 {
		t.Fatalf("the cache holds %d encoded bytes, bound 64 KiB", n)
	}
}

// FuzzCacheWritten: a transfer that written takes decodes from its
// encoding exactly as it is, whatever its strings (valid UTF-8 or not),
// times (location, precision, monotonic reading, range) and collections
// (nil, empty, full).
func FuzzCacheWritten(f *testing.F) {
	f.Add("alice", "/store/user/a.root", "lost \xff", int64(1767225600123456000), uint8(0), uint8(1))
	f.Add("b\u2028<&>", "", "", int64(-62135596800000000), uint8(7), uint8(2))
	req := statetest.Req(statetest.Alice, 1)
	id := req.ID()
	f.Fuzz(func(t *testing.T, user, lfn, reason string, nanos int64, flags, coll uint8) {
		at := time.Unix(0, nanos)
		switch flags % 4 { // the forms a time can take
		case 0:
			at = at.UTC()
		case 1:
			at = at.In(time.FixedZone("X", 3600))
		case 2:
			at = time.Now().Add(time.Duration(nanos % int64(time.Hour))) // with a monotonic reading
		}
		if flags&4 != 0 {
			at = at.Truncate(time.Microsecond)
		}
		tr := state.Transfer{ID: id, Rev: "1-a", Type: "transfer", User: user,
			SourceLFN: lfn, DestinationLFN: lfn, State: state.StateNew, Reason: reason,
			Created: state.Time{Time: at}, LastUpdate: state.At(at), RetryAfter: state.Time{Time: at.Add(time.Hour)}}
		switch coll % 3 {
		case 1:
			tr.Checksums, tr.DependsOn, tr.History = map[string]string{}, []string{}, []state.Transition{}
		case 2:
			tr.Checksums = map[string]string{user: reason, "adler32": lfn}
			tr.DependsOn = []string{lfn}
			tr.History = []state.Transition{{At: state.Time{Time: at}, To: state.StateNew, By: user, Reason: reason}}
			tr.Progress = &state.Progress{FTSState: reason, Throughput: float64(nanos) / 7, Updated: state.Time{Time: at}}
		}
		rec, spans, _, err := encodeBatch(nil, []any{&tr})
		if err != nil {
			return // not written to the file at all
		}
		enc := rec[spans[0].off : spans[0].off+int64(spans[0].n)]
		if !written(&tr, enc) {
			return
		}
		var got state.Transfer
		if err := decodeJSON(enc, &got); err != nil {
			t.Fatalf("written took a transfer whose encoding does not decode: %v\n%s", err, enc)
		}
		if !reflect.DeepEqual(&got, &tr) {
			t.Fatalf("written took a transfer that decodes otherwise:\n%+v\n%+v\n%s", &tr, &got, enc)
		}
	})
}

// TestCache_WrittenTakesRuleOutputs: the versions the rules of package
// state write through a transfer's life are cached (a cache that took
// none would pass every other test).
func TestCache_WrittenTakesRuleOutputs(t *testing.T) {
	now := time.Now()
	ag := state.Agent{User: statetest.Alice, Owner: "agent-a"}
	tr := state.NewTransfer(statetest.Req(statetest.Alice, 1), now, "cli")
	steps := []func() error{
		func() error { return state.Claim(&tr, ag, now, time.Hour) },
		func() error { return state.Prepare(&tr, ag, "sid-1", now, time.Hour) },
		func() error {
			return state.CommitTo(&tr, ag, state.Commit{Transfer: tr, SourcePFN: "davs://a/x", DestPFN: "davs://b/x", FileID: 3}, "job-1", now)
		},
		func() error { return state.ApplyTransient(&tr, state.Progress{FTSState: "ACTIVE", Bytes: 10}, now) },
		func() error {
			_, err := state.ApplyTerminal(&tr, ag, state.Terminal{Transfer: tr, Outcome: state.OutcomeFailed, Reason: "no space", FTSJob: "job-1"}, state.Policy{}.WithDefaults(), now)
			return err
		},
	}
	for i, step := range append([]func() error{func() error { return nil }}, steps...) {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		rec, spans, _, err := encodeBatch(nil, []any{&tr})
		if err != nil {
			t.Fatal(err)
		}
		if !written(&tr, rec[spans[0].off:spans[0].off+int64(spans[0].n)]) {
			t.Fatalf("step %d: the version in state %s is not cached: %+v", i, tr.State, tr)
		}
	}
}

// TestCache_FilledAtOpen: the transfers a handle decodes when it reads a
// file at open are cached (within half the bound), so that its first
// calls do not decode them again; every hit is checked against the file.
func TestCache_FilledAtOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.aso")
	clock := statetest.NewClock(time.Now())
	s, claimed := cacheTestStore(t, path, clock)
	s.Close()
	again, err := Open(path, state.Config{Agent: state.Agent{User: statetest.Alice, Owner: "agent-b"}, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	got, err := again.Get(context.Background(), claimed.ID)
	if err != nil || got.Rev != claimed.Rev {
		t.Fatalf("get: %+v, %v", got, err)
	}
	if st := again.Stats(); st.CacheHits != 1 || st.Decoded != 0 {
		t.Fatalf("the first read after open: %d from the cache, %d decoded; want 1 and 0", st.CacheHits, st.Decoded)
	}
}
