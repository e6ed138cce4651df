package agent_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
)

const fastSite = "T2_XX_Fast"

// linkWorld is a world with a third site, fastSite, and a simulator on
// which the link from srcSite takes an hour per file while fastSite's files
// finish at once. It enqueues a backlog of slow transfers, then fast ones.
func linkWorld(t *testing.T, slowN, fastN int) (*world, []state.Request, []state.Request) {
	return linkWorldOn(t, newWorld, slowN, fastN)
}

// linkWorldOn is linkWorld on the world newW builds.
func linkWorldOn(t *testing.T, newW func(testing.TB, ftstest.Options) *world, slowN, fastN int) (*world, []state.Request, []state.Request) {
	t.Helper()
	w := newW(t, ftstest.Options{TransferTimeOf: func(src, _ string) time.Duration {
		if strings.Contains(src, "/"+srcSite+"/") {
			return time.Hour
		}
		return 0
	}})
	fastDir := filepath.Join(w.dir, fastSite)
	sites := fmt.Sprintf("%s:\n  protocol: file\n  rules:\n    - path-match: /store/(.*)\n      result: file://%s/store/$1\n"+
		"%s:\n  protocol: file\n  rules:\n    - path-match: /store/(.*)\n      result: file://%s/store/$1\n"+
		"%s:\n  protocol: file\n  rules:\n    - path-match: /store/(.*)\n      result: file://%s/store/$1\n",
		srcSite, w.src, dstSite, w.dst, fastSite, fastDir)
	w.useSites("link-sites.yaml", sites)
	slow := make([]state.Request, slowN)
	for i := range slow {
		slow[i], _ = w.request("slow", i, true)
	}
	w.enqueue(slow)
	w.clk.Advance(time.Minute)
	fast := make([]state.Request, fastN)
	for i := range fast {
		r, data := w.request("fast", i, false)
		r.Source = fastSite
		w.writeFile(filepath.Join(fastDir, r.SourceLFN), data)
		fast[i] = r
	}
	w.enqueue(fast)
	return w, slow, fast
}

// TestAgent_LinkFairness: two links, one slow with a large backlog queued
// first. With --max-active-per-link the fast link's transfers are claimed
// in the first pass and done, and the slow link never has more than its
// cap in FTS; without it (the control) the first pass claims only the
// slow backlog.
func TestAgent_LinkFairness(t *testing.T) {
	const slowN, fastN, cap = 150, 10, 30
	for _, fair := range []bool{true, false} {
		t.Run(fmt.Sprintf("fair=%v", fair), func(t *testing.T) {
			w, _, fast := linkWorld(t, slowN, fastN)
			cfg := w.config("agent-1")
			cfg.MaxFilesPerJob = 1 // 100 jobs of one file per pass: the backlog outlasts a pass
			cfg.BatchSize = 20
			if fair {
				cfg.MaxActivePerLink = cap
			}
			cfg.Once = true
			must(t, w.agent(cfg, nil).Run(context.Background()))
			doneFast := 0
			for _, r := range fast {
				if w.get(r.ID()).State == state.StateDone {
					doneFast++
				}
			}
			slowInFTS := 0
			for _, f := range w.sim.Files() {
				if strings.Contains(f.Source, "/"+srcSite+"/") {
					slowInFTS++
				}
			}
			if fair {
				if doneFast != fastN {
					t.Errorf("after the first pass %d of %d fast transfers are done, want all", doneFast, fastN)
				}
				if slowInFTS > cap {
					t.Errorf("%d slow transfers sent to FTS, more than the cap %d", slowInFTS, cap)
				}
				return
			}
			if doneFast != 0 || slowInFTS < 100 {
				t.Errorf("control: %d fast done and %d slow sent in the first pass, want 0 and the 100 a pass claims", doneFast, slowInFTS)
			}
		})
	}
}

// TestAgent_LinkFairnessDrains: the run drains both links, and the slow
// link never has more than its cap of unfinished files in FTS, on both
// stores (memfile passes over a link at its cap in its index, CouchDB
// moves what it passes over to the back of the queue).
func TestAgent_LinkFairnessDrains(t *testing.T) {
	t.Run("memfile", func(t *testing.T) { linkFairnessDrains(t, newWorld) })
	t.Run("couchdb", func(t *testing.T) { linkFairnessDrains(t, newCouchWorld) })
}

func linkFairnessDrains(t *testing.T, newW func(testing.TB, ftstest.Options) *world) {
	const slowN, fastN, cap = 90, 10, 30
	w, slow, fast := linkWorldOn(t, newW, slowN, fastN)
	cfg := w.config("agent-1")
	cfg.MaxActivePerLink = cap
	a := w.agent(cfg, nil)
	peak := 0
	a.OnPass = func(agent.PassStats) {
		n := 0
		for _, f := range w.sim.Files() {
			if strings.Contains(f.Source, "/"+srcSite+"/") && f.State != "FINISHED" && f.State != "FAILED" && f.State != "CANCELED" {
				n++
			}
		}
		peak = max(peak, n)
	}
	must(t, a.Run(context.Background()))
	for _, r := range append(slow, fast...) {
		if got := w.get(r.ID()); got.State != state.StateDone {
			t.Fatalf("%s: %s %q, want done", r.ID(), got.State, got.Reason)
		}
	}
	if peak != cap {
		t.Errorf("at most %d slow files unfinished in FTS at once, want the cap %d", peak, cap)
	}
}

// TestAgent_CapKeepsTransfersWithASid: an agent died between its FTS
// submission and the commit; the next run caps the link below what it
// claims. The transfers carrying the dead agent's sid are kept and looked
// up in FTS, not released over the cap (a release drops the sid, and they
// would be submitted again under another): each is submitted once.
func TestAgent_CapKeepsTransfersWithASid(t *testing.T) {
	t.Run("memfile", func(t *testing.T) {
		capKeepsTransfersWithASid(t, newWorld(t, ftstest.Options{QueueDelay: time.Minute}))
	})
	t.Run("couchdb", func(t *testing.T) {
		capKeepsTransfersWithASid(t, newCouchWorld(t, ftstest.Options{QueueDelay: time.Minute}))
	})
}

func capKeepsTransfersWithASid(t *testing.T, w *world) {
	reqs := w.goodRequests(10)
	ctx := context.Background()
	dcfg := w.config("agent-dead")
	dcfg.BatchSize, dcfg.MaxFilesPerJob = 3, 3
	dead := w.agent(dcfg, dieAtCommit{w.open("agent-dead")})
	done := make(chan struct{})
	go func() { defer close(done); _ = dead.Run(ctx) }()
	<-done
	if n := len(w.sim.Files()); n != 3 {
		t.Fatalf("the dead agent submitted %d files, want 3", n)
	}
	w.clk.Advance(agent.DefaultLockTTL + time.Second)

	cfg := w.config("agent-next")
	cfg.MaxActivePerLink = 2
	must(t, w.agent(cfg, nil).Run(ctx))
	subs := submissionsByTransfer(w.sim.Files())
	for _, r := range reqs {
		if tr := w.get(r.ID()); tr.State != state.StateDone || len(subs[r.ID()]) != 1 {
			t.Errorf("%s: %s (%q), submitted %d times; want done, once", r.ID()[:8], tr.State, tr.Reason, len(subs[r.ID()]))
		}
	}
}
