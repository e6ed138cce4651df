package chaos_test

import (
	"os"

	"github.com/asyncstageout/aso/internal/proctest"
	"github.com/asyncstageout/aso/state"
)

// The enqueue steps of the property test. Each makes a few requests of
// one shape, with the files the shape needs, and enqueues them.

// Shapes of the source of a request aimed at a destination that is taken
// (by a transfer or by hand).
const (
	otherBytes  = "other bytes"     // a source with other content
	noSource    = "missing source"  // no source file at all
	sameBytes   = "same bytes"      // a source with the content already there
	badChecksum = "wrong checksum"  // a source whose request names another adler32
	selfCopy    = "onto its source" // the destination is the source through a link
)

// source makes the source of a request of user in the given shape and
// returns its LFN and the digest the request names; same is the content
// of sameBytes (nil: otherBytes instead).
func (pw *pworld) source(user, kind, shape string, same []byte) (string, digest) {
	switch {
	case shape == noSource:
		return pw.lfn(user, "temp/user", kind), digestOf(pw.bytes())
	case shape == sameBytes && same != nil:
		return pw.writeSource(user, kind, same), digestOf(same)
	case shape == badChecksum:
		data := pw.bytes()
		d := digestOf(data)
		d.adler = digestOf(append(data, 1)).adler
		return pw.writeSource(user, kind, data), d
	}
	data := pw.bytes()
	return pw.writeSource(user, kind, data), digestOf(data)
}

// shapes picks two to four different shapes of source for requests aimed
// at one taken destination.
func (pw *pworld) shapes() []string {
	all := []string{otherBytes, noSource, sameBytes, badChecksum}
	pw.rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	return all[:pw.intn(2, len(all))]
}

// enqueueFresh requests new files onto free destinations; some read their
// source through sourceLinkSite (a source reached through a link).
func (pw *pworld) enqueueFresh(user string) {
	var rs []state.Request
	for range pw.intn(2, 5) {
		lfn, d := pw.source(user, "fresh", otherBytes, nil)
		src := proctest.SourceSite
		if pw.chance(0.3) {
			src = sourceLinkSite
		}
		rs = append(rs, request(user, src, lfn, proctest.DestinationSite, pw.lfn(user, "user", "fresh"), d))
	}
	pw.enqueue("fresh", rs)
}

// enqueueFailing requests files onto free destinations that FTS must
// fail: no source, or a checksum that is not the source's.
func (pw *pworld) enqueueFailing(kind, shape string) {
	var rs []state.Request
	for range pw.intn(1, 3) {
		lfn, d := pw.source(propUser, kind, shape, nil)
		rs = append(rs, request(propUser, proctest.SourceSite, lfn, proctest.DestinationSite, pw.lfn(propUser, "user", kind), d))
	}
	pw.enqueue(kind, rs)
}

// enqueueCollision requests a file onto the destination of an earlier
// request (a done one, most of the time), named through the same site
// (mirror false) or through the other site of the same directory (mirror
// true: the same file through two URLs), with sources of several shapes.
func (pw *pworld) enqueueCollision(mirror bool) {
	kind := "collide"
	if mirror {
		kind = "collide-mirror"
	}
	orig := pw.pick(propUser, pw.doneIDs(), "fresh", "collide", "collide-mirror", "onto-placed", "missing-source", "bad-checksum")
	if orig == nil {
		pw.enqueueFresh(propUser)
		return
	}
	dst := orig.req.Destination
	if mirror {
		dst = map[string]string{proctest.DestinationSite: mirrorSite, mirrorSite: proctest.DestinationSite}[dst]
	}
	same, _ := os.ReadFile(pw.path(orig.req.Source, orig.req.SourceLFN))
	var rs []state.Request
	for _, shape := range pw.shapes() {
		lfn, d := pw.source(propUser, kind, shape, same)
		rs = append(rs, request(propUser, proctest.SourceSite, lfn, dst, orig.req.DestinationLFN, d))
		pw.tally[kind+", "+shape]++
	}
	pw.enqueue(kind, rs)
}

// placeByHand puts files at free destinations of propUser, as a person
// would: one or two that a later request will name, and one that no
// request names.
func (pw *pworld) placeByHand() {
	for range pw.intn(1, 2) {
		lfn := pw.lfn(propUser, "user", "placed")
		pw.place(lfn, pw.bytes())
		pw.placed = append(pw.placed, lfn)
	}
	pw.place(pw.lfn(propUser, "user", "bystander"), pw.bytes())
}

// enqueueOntoPlaced requests files onto a destination that was put there
// by hand (placing one first if none is left), named through the
// destination site or its mirror, with sources of several shapes.
func (pw *pworld) enqueueOntoPlaced() {
	if len(pw.placed) == 0 {
		pw.placeByHand()
	}
	lfn := pw.placed[0]
	pw.placed = pw.placed[1:]
	same, _ := os.ReadFile(pw.path(proctest.DestinationSite, lfn))
	dst := proctest.DestinationSite
	if pw.chance(0.3) {
		dst = mirrorSite
	}
	var rs []state.Request
	for _, shape := range pw.shapes() {
		src, d := pw.source(propUser, "onto-placed", shape, same)
		rs = append(rs, request(propUser, proctest.SourceSite, src, dst, lfn, d))
		pw.tally["onto-placed, "+shape]++
	}
	pw.enqueue("onto-placed", rs)
}

// enqueueSelfAlias requests, for aliasUser, copies of existing sources onto
// themselves through sourceLinkSite (a destination site whose root is a
// link to the source site's root), with the right checksum or a wrong
// one, and a fresh file read through that site; aliasUser's agents run
// with --overwrite.
func (pw *pworld) enqueueSelfAlias() {
	var rs []state.Request
	for range pw.intn(1, 2) {
		lfn := pw.anySource()
		data, err := os.ReadFile(pw.path(proctest.SourceSite, lfn))
		must(pw.t, err)
		d := digestOf(data)
		if pw.chance(0.5) {
			d.adler = digestOf(append(data, 1)).adler
		}
		rs = append(rs, request(aliasUser, proctest.SourceSite, lfn, sourceLinkSite, lfn, d))
		pw.tally["self-alias"]++
	}
	lfn, d := pw.source(aliasUser, "fresh", otherBytes, nil)
	rs = append(rs, request(aliasUser, sourceLinkSite, lfn, proctest.DestinationSite, pw.lfn(aliasUser, "user", "fresh"), d))
	pw.enqueue("self-alias", rs)
}

// anySource returns the LFN of a source file the test wrote, writing one
// for aliasUser if there is none.
func (pw *pworld) anySource() string {
	var lfns []string
	for _, r := range pw.reqs {
		if _, ok := pw.ledger.sources[pw.path(r.req.Source, r.req.SourceLFN)]; ok {
			lfns = append(lfns, r.req.SourceLFN)
		}
	}
	if len(lfns) == 0 {
		return pw.writeSource(aliasUser, "self", pw.bytes())
	}
	return lfns[pw.rng.IntN(len(lfns))]
}

// doneIDs are the IDs of the transfers the store has done.
func (pw *pworld) doneIDs() map[string]bool {
	out := map[string]bool{}
	for id, st := range pw.states() {
		if st == state.StateDone {
			out[id] = true
		}
	}
	return out
}
