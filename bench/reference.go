package main

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"os/user"
	"path/filepath"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sys/unix"

	"github.com/asyncstageout/aso/state"
)

// referenceTransfers returns the n transfers of the benchmark, as enqueued
// (by login@host:cli, as aso enqueue names its writer).
func referenceTransfers(n int, now time.Time) []state.Transfer {
	ts := make([]state.Transfer, n)
	by := cliWriter()
	for i, r := range requests(n) {
		ts[i] = state.NewTransfer(r, now, by)
	}
	return ts
}

// cliWriter is the writer aso's commands name in history entries.
func cliWriter() string {
	login := os.Getenv("USER")
	if login == "" {
		login = os.Getenv("LOGNAME")
	}
	if login == "" {
		if u, err := user.Current(); err == nil {
			login = u.Username
		}
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return fmt.Sprintf("%s@%s:cli", login, host)
}

// lifeSteps are the four revisions of a transfer that finishes at the first
// status query, made by the state rules the backends apply: claim,
// submit_sid, commit, terminal. The values the agent would write have the
// agent's shapes (its owner name, a UUID for the submission ID and for the
// FTS job, the PFNs of the bench's sites file), so that the reference
// writes documents of the agent's size.
func lifeSteps(now time.Time) []func(t *state.Transfer) error {
	ag := state.Agent{User: benchUser, Owner: fmt.Sprintf("bench:%d", os.Getpid())}
	pol := state.Policy{}.WithDefaults()
	return []func(t *state.Transfer) error{
		func(t *state.Transfer) error { return state.Claim(t, ag, now, pol.LeaseTTL) },
		func(t *state.Transfer) error { return state.Prepare(t, ag, uuid.NewString(), now, pol.LeaseTTL) },
		func(t *state.Transfer) error {
			c := state.Commit{Transfer: *t, SourcePFN: srcPrefix + t.SourceLFN, DestPFN: dstPrefix + t.DestinationLFN}
			return state.CommitTo(t, ag, c, uuid.NewString(), now)
		},
		func(t *state.Transfer) error {
			_, err := state.ApplyTerminal(t, ag, state.Terminal{Transfer: *t, Outcome: state.OutcomeDone, FTSJob: t.FTSJob}, pol, now)
			return err
		},
	}
}

// journalReference appends the 4n revisions of the transfers' lives to a
// fresh file as records journal records (the documents spread evenly), JSON
// encoded with a CRC-32C like memfile's, with fsyncs of them fdatasynced
// (spread evenly). It returns the time taken.
func journalReference(path string, n int, records, fsyncs int64) (float64, error) {
	records = max(records, 1)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, err
	}
	defer os.Remove(path)
	defer f.Close()
	now := time.Now()
	ts := referenceTransfers(n, now)
	steps := lifeSteps(now)
	total := int64(4 * n)
	table := crc32.MakeTable(crc32.Castagnoli)
	t0 := time.Now()
	var doc, rec int64
	var off int64
	var body []byte
	for rec = 0; rec < records; rec++ {
		end := total * (rec + 1) / records
		body = body[:0]
		k := 0
		for ; doc < end; doc++ {
			t := &ts[doc%int64(n)]
			if err := steps[doc/int64(n)](t); err != nil {
				return 0, err
			}
			b, err := json.Marshal(t)
			if err != nil {
				return 0, err
			}
			body = append(append(body, b...), '\n')
			k++
		}
		h := fmt.Sprintf(`{"batch":%d,"bytes":%d,"crc32c":"%08x"}`+"\n", k, len(body), crc32.Checksum(body, table))
		out := append([]byte(h), body...)
		if _, err := f.WriteAt(out, off); err != nil {
			return 0, err
		}
		off += int64(len(out))
		if fsyncs*(rec+1)/records > fsyncs*rec/records {
			if err := unix.Fdatasync(int(f.Fd())); err != nil {
				return 0, err
			}
		}
	}
	return time.Since(t0).Seconds(), nil
}

// RefResult is one reference measured: how it wrote the revisions and how
// long it took.
type RefResult struct {
	Name     string  `json:"name"`
	InFlight int     `json:"in_flight,omitempty"` // CouchDB: _bulk_docs requests in flight
	Seconds  float64 `json:"seconds"`
}

// refVariant is a reference to measure.
type refVariant struct {
	name     string
	inFlight int
	measure  func() (float64, error)
}

// measureRefs measures every variant, starting with the one at rot (modulo
// their number) and going round, and returns their results in the
// variants' order.
func measureRefs(vs []refVariant, rot int) ([]RefResult, error) {
	out := make([]RefResult, len(vs))
	for k := range vs {
		i := (rot + k) % len(vs)
		secs, err := vs[i].measure()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", vs[i].name, err)
		}
		out[i] = RefResult{Name: vs[i].name, InFlight: vs[i].inFlight, Seconds: secs}
	}
	return out, nil
}

// couchReferences measures the CouchDB reference of n transfers in
// batches of batch with one request in flight (sequential), then with each
// of inFlight.
func couchReferences(ctx context.Context, cs *couchServer, aso string, n, batch int, inFlight []int, rot int) ([]RefResult, error) {
	vs := []refVariant{{name: fmt.Sprintf("%d revisions in _bulk_docs batches of %d, one after another", 4*n, batch), inFlight: 1}}
	for _, k := range inFlight {
		vs = append(vs, refVariant{name: fmt.Sprintf("the same, %d in flight", k), inFlight: k})
	}
	for i := range vs {
		k := vs[i].inFlight
		vs[i].measure = func() (float64, error) { return cs.reference(ctx, aso, n, batch, k) }
	}
	return measureRefs(vs, rot)
}

// journalReferences measures the memfile reference of n transfers: the 4n
// documents as the agent writes them (records journal records, fsyncs
// fdatasyncs), then batched as the file allows: the same records with one
// fdatasync, records of batch documents, and one record per revision of
// every transfer (four), each fdatasynced.
func journalReferences(dir string, n, batch int, records, fsyncs int64, rot int) ([]RefResult, error) {
	path := filepath.Join(dir, "reference.aso")
	perBatch := int64(4 * ((n + batch - 1) / batch))
	vs := []refVariant{
		{name: fmt.Sprintf("%d documents in %d journal records, %d fsyncs", 4*n, records, fsyncs)},
		{name: fmt.Sprintf("the same %d records, one fsync", records)},
		{name: fmt.Sprintf("%d records of %d documents, each fsynced", perBatch, batch)},
		{name: "4 records of a revision of every transfer, each fsynced"},
	}
	pattern := [][2]int64{{records, fsyncs}, {records, 1}, {perBatch, perBatch}, {4, 4}}
	for i := range vs {
		p := pattern[i]
		vs[i].measure = func() (float64, error) { return journalReference(path, n, p[0], p[1]) }
	}
	return measureRefs(vs, rot)
}
