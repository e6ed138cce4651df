package memfile

import (
	"bytes"
	"errors"

	"github.com/google/btree"

	"github.com/asyncstageout/aso/state"
)

// db is the store in memory: the current version of every document of the
// file, decoded, and per user the index the agent's calls read. A
// transfer it holds is never changed: a write puts a new one in its place,
// and what a call returns is a copy (clone).
type db struct {
	docs    map[string]*state.Transfer // the valid transfers, by ID
	invalid map[string]invalidDoc
	locks   map[string]*state.LockDoc
	users   map[string]*userIndex
	// dests indexes the valid transfers by destination (DestinationRefs).
	dests map[state.Destination]map[string]*state.Transfer
	// pfns indexes the valid transfers by the PFNs they recorded (PFNRefs).
	pfns map[string]map[string]*state.Transfer
}

// invalidDoc is a stored document that is not a valid transfer: kept as it
// is (so compaction does not lose it) and skipped by every call.
type invalidDoc struct {
	reason string
	raw    []byte
}

// userIndex indexes the transfers of one user: what the agent's claims,
// monitor and DueUsers read without going through every transfer.
type userIndex struct {
	// queue holds the new and acquired transfers in claim order.
	queue *btree.BTreeG[*state.Transfer]
	// jobs holds the submitted transfers by FTS job, then by ID.
	jobs map[string]map[string]*state.Transfer
	// all holds every transfer of the user, by ID: what the per-user
	// commands read (List, Summary and UserWork of one user).
	all map[string]*state.Transfer
}

func newDB() *db {
	return &db{docs: map[string]*state.Transfer{}, invalid: map[string]invalidDoc{}, locks: map[string]*state.LockDoc{}, users: map[string]*userIndex{},
		dests: map[state.Destination]map[string]*state.Transfer{}, pfns: map[string]map[string]*state.Transfer{}}
}

func inQueue(s state.State) bool { return s == state.StateNew || s == state.StateAcquired }

// index adds t to the index of its user, or removes it.
func (d *db) index(t *state.Transfer, add bool) {
	ui := d.users[t.User]
	if ui == nil {
		ui = &userIndex{queue: btree.NewG(32, state.ClaimLess), jobs: map[string]map[string]*state.Transfer{}, all: map[string]*state.Transfer{}}
		d.users[t.User] = ui
	}
	if add {
		ui.all[t.ID] = t
	} else {
		delete(ui.all, t.ID)
	}
	switch {
	case inQueue(t.State) && add:
		ui.queue.ReplaceOrInsert(t)
	case inQueue(t.State):
		ui.queue.Delete(t)
	case t.State != state.StateSubmitted:
	case add:
		addTo(ui.jobs, t.FTSJob, t)
	default:
		dropFrom(ui.jobs, t.FTSJob, t.ID)
	}
}

// put stores t, a valid transfer, replacing any document with its ID.
func (d *db) put(t *state.Transfer) {
	d.remove(t.ID)
	delete(d.invalid, t.ID)
	d.docs[t.ID] = t
	d.index(t, true)
	addTo(d.dests, t.Dest(), t)
	for _, p := range [...]string{t.SourcePFN, t.DestPFN} {
		if p != "" {
			addTo(d.pfns, p, t)
		}
	}
}

// remove drops the valid transfer with id, if there is one.
func (d *db) remove(id string) {
	if old := d.docs[id]; old != nil {
		d.index(old, false)
		delete(d.docs, id)
		dropFrom(d.dests, old.Dest(), id)
		for _, p := range [...]string{old.SourcePFN, old.DestPFN} {
			dropFrom(d.pfns, p, id)
		}
	}
}

// apply puts a document read from the file, raw. A line that is not a
// document is an error (errNotDoc); one that is not a valid transfer or
// lock is kept as an invalid document.
func (d *db) apply(raw []byte) error {
	var a anyDoc
	err := decodeDoc(raw, &a)
	switch {
	case errors.Is(err, errNotDoc):
		return err
	case err != nil:
		d.remove(a.ID)
		delete(d.locks, a.ID)
		d.invalid[a.ID] = invalidDoc{reason: err.Error(), raw: bytes.Clone(raw)}
	case a.Type == state.LockDocType:
		d.putLock(a.lock())
	default:
		t := a.Transfer
		d.put(&t)
	}
	return nil
}

func (d *db) putLock(l *state.LockDoc) {
	delete(d.invalid, l.ID)
	d.locks[l.ID] = l
}

// addTo puts t into the set of transfers m holds under k.
func addTo[K comparable](m map[K]map[string]*state.Transfer, k K, t *state.Transfer) {
	if m[k] == nil {
		m[k] = map[string]*state.Transfer{}
	}
	m[k][t.ID] = t
}

// dropFrom removes id from the set m holds under k, and the set once empty.
func dropFrom[K comparable](m map[K]map[string]*state.Transfer, k K, id string) {
	if delete(m[k], id); len(m[k]) == 0 {
		delete(m, k)
	}
}
