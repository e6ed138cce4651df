package main

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/asyncstageout/aso/state"
)

// crowd is the population of the crowded database: docs transfer
// documents of users other users, each with the history of its life,
// generated from the document's number alone, so that every build holds
// the same documents. Of every ten, seven are done, two failed for good
// and one is queued but not due (failed once, to be retried in 2099):
// every user has done, failed and queued transfers, and none has work a
// fleet would start an agent for. The first fleetUsersWithWk users, whose
// agents the fleet round starts, have no transfer queued (their agents
// would wait for its retry): that tenth failed for good.
type crowd struct {
	docs, users int
}

// crowdBase is the time of the first document; document k was created k
// seconds later and took a minute to end.
var crowdBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// notDue is the retry time of the crowd's queued transfers.
var notDue = state.At(time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC))

// crowdUser is the name of the crowd's user u.
func crowdUser(u int) string { return fmt.Sprintf("crowd%04d", u) }

// crowdNS names the deterministic UUIDs of the crowd's submissions and jobs.
var crowdNS = uuid.MustParse("6f1c2a54-5b0e-4c1e-9d8b-2f3a4c5d6e7f")

func crowdUUID(kind byte, k int) string {
	var b [9]byte
	b[0] = kind
	binary.BigEndian.PutUint64(b[1:], uint64(k))
	return uuid.NewSHA1(crowdNS, b[:]).String()
}

// doc returns document k of the crowd.
func (c crowd) doc(k int) (state.Transfer, error) {
	u := k % c.users
	user := crowdUser(u)
	r := state.Request{User: user, Source: srcSite, Destination: dstSite,
		SourceLFN:      fmt.Sprintf("/store/temp/user/%s/task%d/out_%08d.root", user, k/c.users/1000, k),
		DestinationLFN: fmt.Sprintf("/store/user/%s/task%d/out_%08d.root", user, k/c.users/1000, k),
		Size:           1_000_000 + int64(k%5000)*1000,
		Checksums:      map[string]string{"adler32": fmt.Sprintf("%08x", uint32(k)*2654435761)},
	}
	at := crowdBase.Add(time.Duration(k) * time.Second)
	t := state.NewTransfer(r, at, "producer@crab:cli")
	ag := state.Agent{User: user, Owner: "agent@host" + fmt.Sprint(u%7) + ":" + fmt.Sprint(1000+u)}
	pol := state.Policy{}.WithDefaults()
	if err := state.Claim(&t, ag, at, pol.LeaseTTL); err != nil {
		return t, err
	}
	if err := state.Prepare(&t, ag, crowdUUID('s', k), at, pol.LeaseTTL); err != nil {
		return t, err
	}
	cm := state.Commit{Transfer: t, SourcePFN: srcPrefix + t.SourceLFN, DestPFN: dstPrefix + t.DestinationLFN}
	if err := state.CommitTo(&t, ag, cm, crowdUUID('j', k), at); err != nil {
		return t, err
	}
	end := state.Terminal{Transfer: t, Outcome: state.OutcomeDone, FTSJob: t.FTSJob}
	switch k % 10 {
	case 7, 8:
		end.Outcome, end.Reason, end.ErrorClass = state.OutcomeFailed, "SOURCE [2] No such file or directory", "no_source"
	case 9:
		if u < fleetUsersWithWk { // the fleet round's users: an agent would wait for a retry
			end.Outcome, end.Reason, end.ErrorClass = state.OutcomeFailed, "SOURCE [2] No such file or directory", "no_source"
			break
		}
		end.Outcome, end.Reason, end.Retryable, end.ErrorClass = state.OutcomeFailed, "TRANSFER [110] Connection timed out", true, "timeout"
	}
	if _, err := state.ApplyTerminal(&t, ag, end, pol, at.Add(time.Minute)); err != nil {
		return t, err
	}
	if t.State == state.StateNew {
		t.RetryAfter = notDue
	}
	t.Type = state.DocType
	return t, nil
}
