package main

import (
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/asyncstageout/aso/state"
)

// referenceTransfers returns the n transfers of the benchmark, as enqueued.
func referenceTransfers(n int, now time.Time) []state.Transfer {
	ts := make([]state.Transfer, n)
	for i, r := range requests(n) {
		ts[i] = state.NewTransfer(r, now, "reference")
	}
	return ts
}

// lifeSteps are the four revisions of a transfer that finishes at the first
// status query, made by the state rules the backends apply: claim,
// submit_sid, commit, terminal.
func lifeSteps(now time.Time) []func(t *state.Transfer) error {
	ag := state.Agent{User: benchUser, Owner: "reference"}
	pol := state.Policy{}.WithDefaults()
	return []func(t *state.Transfer) error{
		func(t *state.Transfer) error { return state.Claim(t, ag, now, pol.LeaseTTL) },
		func(t *state.Transfer) error { return state.Prepare(t, ag, "sid-"+t.ID[:8], now, pol.LeaseTTL) },
		func(t *state.Transfer) error {
			return state.CommitTo(t, ag, state.Commit{Transfer: *t, SourcePFN: "davs://s/" + t.ID, DestPFN: "davs://d/" + t.ID}, "job-"+t.ID[:8], now)
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
