package chaos_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/internal/proctest"
	"github.com/asyncstageout/aso/state"
)

// Sites of the property test beyond proctest's source and destination:
// each has a root that is a symbolic link to another site's root.
const (
	// mirrorSite reaches the destination site's files through a link: the
	// same file through two URLs.
	mirrorSite = "T1_XX_Mirror"
	// sourceLinkSite reaches the source site's files through a link; as a
	// destination, it names the source itself.
	sourceLinkSite = "T2_XX_SourceLink"
)

// Users of the property test: propUser's requests collide, land on
// hand-placed files and fail in every way; aliasUser's agents run with
// --overwrite, and its requests copy a source onto itself through
// sourceLinkSite (and fresh files through it), so that an overwrite meets
// nothing but its own source.
const (
	propUser  = "prop"
	aliasUser = "prop-alias"
)

// preq is a request the property test made, and what it knows of it.
type preq struct {
	req    state.Request
	kind   string
	stored bool // the store took it (an enqueue may refuse it)
}

// pworld is one property-test sequence: a proctest World with sites that
// alias each other, the seeded choices, the ledger of the files to keep,
// and the requests made so far.
type pworld struct {
	t      *testing.T
	w      *proctest.World
	rng    *rand.Rand
	ledger *ledger
	roots  map[string]string // site -> the directory its root really is
	reqs   []*preq
	placed []string // destination LFNs of propUser put there by hand and not requested yet
	seq    int
	// tally counts what the sequence did, by kind, for the table.
	tally map[string]int
}

// propSim is the simulator of the property test: real copies, a small
// chance of a drawn failure of every class the reasons list (source,
// destination, transfer, timeouts, file exists), and files that take long
// enough to be caught in flight.
func propSim(seed uint64) ftstest.Options {
	return ftstest.Options{Seed: int64(seed), QueueDelay: 150 * time.Millisecond, StartDelay: 50 * time.Millisecond,
		TransferTime: 250 * time.Millisecond, FailureRate: baseFailureRate}
}

const baseFailureRate = 0.05

func newPWorld(t *testing.T, b backend, seed uint64) *pworld {
	t.Helper()
	w := proctest.New(t, proctest.Options{Couch: b == couch, Sim: propSim(seed), Seed: seed, Lifetime: 3 * time.Minute})
	pw := &pworld{t: t, w: w, rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), ledger: newLedger(),
		roots: map[string]string{proctest.SourceSite: w.SourceRoot, proctest.DestinationSite: w.DestRoot,
			mirrorSite: w.DestRoot, sourceLinkSite: w.SourceRoot},
		tally: map[string]int{}}
	for _, d := range []string{w.SourceRoot, w.DestRoot} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.Symlink(w.DestRoot, filepath.Join(w.Dir, mirrorSite)))
	must(t, os.Symlink(w.SourceRoot, filepath.Join(w.Dir, sourceLinkSite)))
	rule := "%s:\n  protocol: file\n  rules:\n    - path-match: /store/(.*)\n      result: file://%s/store/$1\n"
	var sites strings.Builder
	for _, s := range []string{proctest.SourceSite, proctest.DestinationSite, mirrorSite, sourceLinkSite} {
		fmt.Fprintf(&sites, rule, s, filepath.Join(w.Dir, s))
	}
	must(t, os.WriteFile(w.SitesFile, []byte(sites.String()), 0o644))
	return pw
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// path is the file (site, lfn) is on disk.
func (pw *pworld) path(site, lfn string) string { return filepath.Join(pw.roots[site], lfn) }

// destPath is the file a transfer's destination is on disk.
func (pw *pworld) destPath(t *state.Transfer) string { return pw.path(t.Destination, t.DestinationLFN) }

// intn is a seeded random integer in [lo, hi].
func (pw *pworld) intn(lo, hi int) int { return lo + pw.rng.IntN(hi-lo+1) }

// chance is true with probability p.
func (pw *pworld) chance(p float64) bool { return pw.rng.Float64() < p }

// bytes returns seeded random content of 200 to 2,000 bytes.
func (pw *pworld) bytes() []byte {
	data := make([]byte, pw.intn(200, 2000))
	for i := range data {
		data[i] = byte(pw.rng.Uint32())
	}
	return data
}

// lfn returns a new LFN of user under dir ("temp/user" for sources,
// "user" for destinations).
func (pw *pworld) lfn(user, dir, kind string) string {
	pw.seq++
	return fmt.Sprintf("/store/%s/%s/%s_%05d.root", dir, user, kind, pw.seq)
}

// writeSource writes data as a new source file of user and returns its
// LFN; the ledger keeps it.
func (pw *pworld) writeSource(user, kind string, data []byte) string {
	lfn := pw.lfn(user, "temp/user", kind)
	p := pw.path(proctest.SourceSite, lfn)
	writeFile(pw.t, p, data)
	pw.ledger.sources[p] = digestOf(data)
	return lfn
}

// place puts data at lfn of the destination site by hand; the ledger
// keeps it.
func (pw *pworld) place(lfn string, data []byte) {
	p := pw.path(proctest.DestinationSite, lfn)
	writeFile(pw.t, p, data)
	pw.ledger.placed[p] = digestOf(data)
	pw.tally["hand-placed files"]++
}

func writeFile(t testing.TB, p string, data []byte) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, data, 0o644))
}

// request is a request of user from (src, srcLFN) to (dst, dstLFN) of a
// file of size and adler32 d.
func request(user, src, srcLFN, dst, dstLFN string, d digest) state.Request {
	return state.Request{User: user, Source: src, Destination: dst, SourceLFN: srcLFN, DestinationLFN: dstLFN,
		Size: d.size, Checksums: map[string]string{"adler32": d.adler}}
}

// enqueue stores rs, half the time through `aso enqueue --sites` as a
// user does, else straight through the store as a producer that writes
// documents itself does (which skips the command's checks). A request
// either may refuse is remembered as not stored.
func (pw *pworld) enqueue(kind string, rs []state.Request) {
	pw.t.Helper()
	if len(rs) == 0 {
		return
	}
	stored := map[string]bool{}
	if pw.chance(0.5) {
		stored = pw.enqueueCommand(rs)
		pw.tally["enqueued by aso enqueue"] += len(rs)
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := pw.w.Store().Enqueue(ctx, rs)
		must(pw.t, err)
		for _, r := range res {
			stored[r.ID] = r.Status == state.Stored || r.Status == state.AlreadyQueued
		}
		pw.tally["enqueued directly"] += len(rs)
	}
	for _, r := range rs {
		pw.reqs = append(pw.reqs, &preq{req: r, kind: kind, stored: stored[r.ID()]})
		if !stored[r.ID()] {
			pw.tally["requests refused"]++
		}
	}
}

// enqueueCommand runs `aso enqueue --sites --json` on rs and returns
// which were stored; exit 0, or 64 when it rejected some.
func (pw *pworld) enqueueCommand(rs []state.Request) map[string]bool {
	pw.t.Helper()
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, r := range rs {
		must(pw.t, enc.Encode(r))
	}
	pw.seq++
	file := filepath.Join(pw.w.Dir, fmt.Sprintf("requests-%05d.jsonl", pw.seq))
	must(pw.t, os.WriteFile(file, in.Bytes(), 0o644))
	p := pw.w.Start(fmt.Sprintf("enqueue-%05d", pw.seq), "enqueue", "--state", pw.w.StateURL, "--sites", pw.w.SitesFile,
		"-f", file, "--json", "--progress", "never", "--log-format", "json", "--log-level", "warn")
	if code := p.Wait(time.Minute); code != 0 && code != 64 {
		pw.t.Fatalf("aso enqueue exited %d\n%s", code, p.Tail(30))
	}
	stored := map[string]bool{}
	for _, l := range p.LogLines() {
		id, _ := l["id"].(string)
		st, _ := l["status"].(string)
		if id != "" && (st == string(state.Stored) || st == string(state.AlreadyQueued)) {
			stored[id] = true
		}
	}
	return stored
}

// pick returns a random stored request of user made by one of kinds (any
// kind when none is given), preferring those the store has done; nil if
// there is none.
func (pw *pworld) pick(user string, done map[string]bool, kinds ...string) *preq {
	var all, finished []*preq
	for _, r := range pw.reqs {
		if r.req.User != user || !r.stored || (len(kinds) > 0 && !contains(kinds, r.kind)) {
			continue
		}
		all = append(all, r)
		if done[r.req.ID()] {
			finished = append(finished, r)
		}
	}
	if len(finished) > 0 && pw.chance(0.7) {
		return finished[pw.rng.IntN(len(finished))]
	}
	if len(all) == 0 {
		return nil
	}
	return all[pw.rng.IntN(len(all))]
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// states returns the state of every transfer in the store, by ID.
func (pw *pworld) states() map[string]state.State {
	pw.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ts, err := pw.w.Store().List(ctx, state.Filter{})
	must(pw.t, err)
	out := make(map[string]state.State, len(ts))
	for _, t := range ts {
		out[t.ID] = t.State
	}
	return out
}
