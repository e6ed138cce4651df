package agent_test

import (
	"bytes"
	"context"
	"fmt"
	"hash/adler32"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile/memfiletest"
)

// hostileNames are file names that are valid LFN elements but hostile to
// anything that would pass them through a shell, a format string or a
// naive parser. (% ? # are left out: the simulator reads file:// URLs as
// URLs and would decode or cut them, where gfal2 takes them literally.)
var hostileNames = []string{
	`semi;colon.root`,
	`sp ace  two.root`,
	`quote'single.root`,
	`quote"double.root`,
	`$(touch pwned).root`,
	"`touch pwned`.root",
	`ünïcödé-файл-文件-😀.root`,
	`a&b|c>d<e*f.root`,
	`-rf.root`,
	`back\slash.root`,
	strings.Repeat("long", 50) + ".root", // the simulator adds a suffix for its temporary copy: stay under 255
}

// TestAgent_HostileButValidNames runs the whole pipeline (memfile, the
// FTS3 simulator copying real files, the real gfal-rm) on LFNs full of
// shell syntax, quotes, spaces and unicode, next to stored documents that
// are not valid transfers. Every valid transfer completes as it should:
// copies arrive intact, failed ones have their destination copy deleted by
// gfal-rm under the exact name, nothing else is touched, and the invalid
// documents stay quarantined.
func TestAgent_HostileButValidNames(t *testing.T) {
	w := newWorld(t, ftstest.Options{Seed: 3, QueueDelay: 10 * time.Second, StartDelay: 10 * time.Second, TransferTime: 30 * time.Second})
	type expect struct {
		req     state.Request
		data    []byte
		missing bool
	}
	var all []expect
	var reqs []state.Request
	for i, name := range hostileNames {
		for _, missing := range []bool{false, true} {
			dir := fmt.Sprintf("/store/user/%s/hostile %d;'\"", testUser, i)
			r := state.Request{User: testUser, Source: srcSite, Destination: dstSite,
				SourceLFN: dir + "/src/" + name, DestinationLFN: dir + "/dst/" + name}
			if missing {
				r.SourceLFN, r.DestinationLFN = dir+"/src/missing-"+name, dir+"/dst/missing-"+name
				// a file under the hostile name that no attempt of the
				// transfer wrote (its source is missing): left in place
				w.writeFile(w.dstPath(r), []byte("stale partial copy"))
				r.Size = 1000
			} else {
				data := []byte("content of " + name)
				w.writeFile(w.srcPath(r), data)
				r.Size = int64(len(data))
				r.Checksums = map[string]string{"adler32": fmt.Sprintf("%08x", adler32.Checksum(data))}
				all = append(all, expect{req: r, data: data})
				reqs = append(reqs, r)
				continue
			}
			all = append(all, expect{req: r, missing: true})
			reqs = append(reqs, r)
		}
	}
	for _, r := range reqs {
		must(t, r.Validate())
	}
	w.enqueue(reqs)
	badIDs := []string{"0000000000000000000000000000000000000000000000000000000000000001", "not-a-transfer-id"}
	memfiletest.AppendDocs(t, w.path,
		`{"_id":"`+badIDs[0]+`","type":"transfer","user":"`+testUser+`","state":"new","size":"huge","source_lfn":"/store/x;rm -rf /"}`,
		`{"_id":"`+badIDs[1]+`","type":"transfer","user":"`+testUser+`","state":"new","source":"`+srcSite+`","destination":"`+dstSite+`","source_lfn":"/a","destination_lfn":"/b","created":12}`,
	)

	a := w.agent(w.config("agent-hostile"), nil)
	if err := a.Run(context.Background()); err != nil {
		t.Fatalf("Run with hostile names and invalid documents: %v", err)
	}
	for _, e := range all {
		tr := w.get(e.req.ID())
		got, readErr := os.ReadFile(w.dstPath(e.req))
		switch {
		case e.missing:
			if tr.State != state.StateFailed || !strings.Contains(tr.Reason, "No such file") {
				t.Errorf("%q: %s %q, want failed (no such file)", e.req.SourceLFN, tr.State, tr.Reason)
			}
			if string(got) != "stale partial copy" || !strings.Contains(tr.Reason, "left in place: ") {
				t.Errorf("%q: the file at the destination was touched (%q, %v) or not said left in place (%q)", e.req.DestinationLFN, got, readErr, tr.Reason)
			}
		default:
			if tr.State != state.StateDone || !bytes.Equal(got, e.data) {
				t.Errorf("%q: %s %q, destination %q (%v); want done with the source's bytes", e.req.SourceLFN, tr.State, tr.Reason, got, readErr)
			}
			if tr.SourceLFN != e.req.SourceLFN || !strings.HasSuffix(tr.DestPFN, e.req.DestinationLFN) {
				t.Errorf("names changed on the way: %q -> %q, PFN %q", e.req.SourceLFN, tr.SourceLFN, tr.DestPFN)
			}
		}
	}
	for _, dir := range []string{"/", w.dir, w.src, w.dst} {
		if _, err := os.Stat(dir + "/pwned"); err == nil {
			t.Errorf("a command inside a file name ran: %s/pwned exists", dir)
		}
	}
	sum, err := w.store.Summary(context.Background(), state.SummaryOptions{})
	must(t, err)
	if len(sum.Invalid) != 2 || sum.Invalid[0].ID != badIDs[0] || sum.Invalid[1].ID != badIDs[1] {
		t.Errorf("Summary.Invalid = %+v, want the two invalid documents, still quarantined", sum.Invalid)
	}
	if sum.Total != len(all) {
		t.Errorf("Summary counts %d transfers, want %d", sum.Total, len(all))
	}
}

// TestAgent_CatastrophicSiteRule: a site whose rule is a pattern that
// backtracking engines take exponential time on, against LFNs built to
// trigger it. The agent is not held up: those transfers fail with the
// reason that no rule matches, and the transfers of the other sites
// complete.
func TestAgent_CatastrophicSiteRule(t *testing.T) {
	w := newWorld(t, ftstest.Options{Seed: 4})
	const evil = "T2_XX_Evil"
	sites := fmt.Sprintf("%s:\n  protocol: file\n  rules:\n    - path-match: /store/(.*)\n      result: file://%s/store/$1\n"+
		"%s:\n  protocol: file\n  rules:\n    - path-match: /store/(.*)\n      result: file://%s/store/$1\n"+
		"%s:\n  protocol: file\n  rules:\n    - path-match: \"/((a+)+)+$\"\n      result: file://%s/evil/$1\n", srcSite, w.src, dstSite, w.dst, evil, w.dir)
	w.useSites("evil-sites.yaml", sites)
	var good, bad []state.Request
	for i := 0; i < 5; i++ {
		r, _ := w.request("good", i, true)
		good = append(good, r)
		b, _ := w.request("evil", i, true)
		b.Destination = evil
		b.DestinationLFN = "/" + strings.Repeat("a", state.MaxLFNLen-2-i) + "!"
		bad = append(bad, b)
	}
	w.enqueue(append(append([]state.Request{}, good...), bad...))
	start := time.Now()
	if err := w.agent(w.config("agent-evil"), nil).Run(context.Background()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Logf("drained in %s", time.Since(start).Round(time.Millisecond))
	for _, r := range good {
		if tr := w.get(r.ID()); tr.State != state.StateDone {
			t.Errorf("%s next to a catastrophic rule: %s %q, want done", tr.ID, tr.State, tr.Reason)
		}
	}
	for _, r := range bad {
		tr := w.get(r.ID())
		if tr.State != state.StateFailed || !strings.Contains(tr.Reason, evil) || tr.FTSJob != "" {
			t.Errorf("%s: %s %q (job %q), want failed without a job, naming site %s", tr.ID, tr.State, tr.Reason, tr.FTSJob, evil)
		}
	}
}
