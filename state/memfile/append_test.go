package memfile

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/statetest"
)

// claimedStore opens a store at path for alice's agent "agent-a" on
// clock, with one transfer enqueued and claimed, and returns the claimed
// transfer.
func claimedStore(t *testing.T, path string, clock *statetest.Clock) (*Store, state.Transfer) {
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

const otherEnv = "ASO_MEMFILE_OTHER_PROCESS"

// TestAnotherProcessWrites: a transfer this handle wrote (and so holds
// in memory) and another process then changed is read back as the other
// process wrote it, whether the other process only appended or also
// compacted the file.
func TestAnotherProcessWrites(t *testing.T) {
	if how := os.Getenv(otherEnv); how != "" {
		otherProcess(t, how)
		return
	}
	for _, how := range []string{"append", "compact"} {
		t.Run(how, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.aso")
			s, claimed := claimedStore(t, path, statetest.NewClock(time.Now()))
			cmd := exec.Command(os.Args[0], "-test.run=^TestAnotherProcessWrites$")
			cmd.Env = append(os.Environ(), otherEnv+"="+how, "ASO_MEMFILE_OTHER_PATH="+path, "ASO_MEMFILE_OTHER_ID="+claimed.ID)
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

// otherProcess requests the kill of the transfer the parent claimed, in
// the parent's file, and compacts it if asked to.
func otherProcess(t *testing.T, how string) {
	s, err := Open(os.Getenv("ASO_MEMFILE_OTHER_PATH"), state.Config{Agent: state.Agent{User: statetest.Alice, Owner: "admin"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	res, err := s.RequestKill(ctx, []string{os.Getenv("ASO_MEMFILE_OTHER_ID")})
	if err != nil || res[0].Err != nil {
		t.Fatalf("request kill: %v %+v", err, res)
	}
	if how == "compact" {
		if err := s.Compact(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFailedAppendChangesNothing: a write whose record could not be
// appended changes nothing in memory, and the same write made again once
// the file can be written reads back as the file holds it.
func TestFailedAppendChangesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.aso")
	clock := statetest.NewClock(time.Now())
	s, claimed := claimedStore(t, path, clock)
	ctx := context.Background()
	ro, err := os.Open(path) // the same file, where every write fails
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	rw := s.file.f
	s.file.f = ro
	clock.Advance(time.Second)
	if _, err := s.RenewLeases(ctx, []state.Transfer{claimed}); err == nil {
		t.Fatal("a renewal on a file that cannot be written succeeded")
	}
	if got, err := s.Get(ctx, claimed.ID); err != nil || got.Rev != claimed.Rev {
		t.Fatalf("after the failed append read back %+v, %v; want the claimed revision %s", got, err, claimed.Rev)
	}
	s.file.f = rw
	clock.Advance(time.Second)
	res, err := s.RenewLeases(ctx, []state.Transfer{claimed})
	if err != nil || res[0].Err != nil {
		t.Fatalf("renew: %v %+v", err, res)
	}
	again, err := Open(path, state.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	for _, r := range []*Store{s, again} {
		got, err := r.Get(ctx, claimed.ID)
		if err != nil || got.Rev != res[0].Rev || !got.LeaseExpires.Equal(res[0].LeaseExpires.Time) {
			t.Fatalf("read back rev %s lease %s (%v), the renewal wrote rev %s lease %s", got.Rev, got.LeaseExpires, err, res[0].Rev, res[0].LeaseExpires)
		}
	}
}
