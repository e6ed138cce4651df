package statetest

import (
	"context"
	"errors"
	"time"

	"github.com/asyncstageout/aso/state"
)

var miscCases = []testCase{
	{"History/AppendedAndBounded", func(e *env) {
		s := e.store(Alice, "agent-a")
		id := e.enqueue(s, Req(Alice, 1))[0]
		ts := e.claim(s, 1)
		h := e.get(s, id).History
		if len(h) != 2 {
			e.t.Fatalf("history after claim %+v", h)
		}
		if last := h[1]; last.From != state.StateNew || last.To != state.StateAcquired || last.By != "agent-a" || !last.At.Equal(e.clock.Now()) {
			e.t.Fatalf("claim entry %+v", last)
		}
		for i := 0; i < state.MaxHistory; i++ {
			e.clock.Advance(time.Second)
			res, err := s.AbortTransfers(ctx, []state.Abort{{Transfer: ts[0], Reason: "shutdown", NoPenalty: true}})
			e.ok("AbortTransfers", res, err, 1)
			if ts = e.claim(s, 1); len(ts) != 1 {
				e.t.Fatalf("round %d: claimed %d", i, len(ts))
			}
		}
		h = e.get(s, id).History
		if len(h) != state.MaxHistory {
			e.t.Fatalf("history has %d entries, want it bounded to %d", len(h), state.MaxHistory)
		}
		if h[0].To != state.StateNew || h[0].From != "" {
			e.t.Fatalf("first entry %+v, want the creation", h[0])
		}
		if last := h[len(h)-1]; last.To != state.StateAcquired || !last.At.Equal(e.clock.Now()) {
			e.t.Fatalf("last entry %+v", last)
		}
		if prev := h[len(h)-2]; prev.From != state.StateAcquired || prev.To != state.StateNew {
			e.t.Fatalf("entry before last %+v", prev)
		}
	}},
	{"Context/Cancelled", func(e *env) {
		s := e.store(Alice, "agent-a")
		e.enqueue(s, Req(Alice, 1), Req(Alice, 2))
		sub := e.submit(s, 1, "job-1")[0]
		acq := e.claim(s, 1)[0]
		before := []state.Transfer{e.get(s, sub.ID), e.get(s, acq.ID)}
		c, cancel := context.WithCancel(context.Background())
		cancel()
		calls := map[string]func() error{
			"Enqueue":           func() error { _, err := s.Enqueue(c, []state.Request{Req(Alice, 3)}); return err },
			"NewTransfers":      func() error { _, err := s.NewTransfers(c, state.ClaimRequest{Limit: 5}); return err },
			"PrepareSubmits":    func() error { _, err := Prepare(c, s, []state.Transfer{acq}, "sid"); return err },
			"RenewLeases":       func() error { _, err := s.RenewLeases(c, []state.Transfer{acq}); return err },
			"SetTransferIDs":    func() error { _, err := Commit(c, s, commitsOf([]state.Transfer{acq}), "j"); return err },
			"AbortTransfers":    func() error { _, err := s.AbortTransfers(c, []state.Abort{{Transfer: acq}}); return err },
			"SetTransientState": func() error { _, err := s.SetTransientState(c, []state.Transient{{Transfer: sub}}); return err },
			"ActiveTransfers":   func() error { _, err := Active(c, s, Alice); return err },
			"SetTerminalState": func() error {
				_, err := s.SetTerminalState(c, []state.Terminal{{Transfer: sub, Outcome: state.OutcomeDone, FTSJob: "job-1"}})
				return err
			},
			"Get":         func() error { _, err := s.Get(c, sub.ID); return err },
			"List":        func() error { _, err := s.List(c, state.Filter{}); return err },
			"Summary":     func() error { _, err := s.Summary(c, state.SummaryOptions{}); return err },
			"RequestKill": func() error { _, err := s.RequestKill(c, []string{sub.ID}); return err },
			"Retry":       func() error { _, err := s.Retry(c, []string{sub.ID}); return err },
			"AcquireLock": func() error { _, err := s.AcquireLock(c, Alice, "agent-a", time.Minute); return err },
			"RenewLock": func() error {
				_, err := s.RenewLock(c, state.Lock{User: Alice, Holder: "agent-a"}, time.Minute)
				return err
			},
			"ReleaseLock": func() error { return s.ReleaseLock(c, state.Lock{User: Alice, Holder: "agent-a"}, nil) },
		}
		for name, call := range calls {
			if err := call(); !errors.Is(err, context.Canceled) {
				e.t.Errorf("%s with a cancelled context: %v, want context.Canceled", name, err)
			}
		}
		for _, b := range before {
			e.unchanged(s, b)
		}
		if _, err := s.Get(ctx, ReqID(Alice, 3)); !errors.Is(err, state.ErrNotFound) {
			e.t.Fatalf("Enqueue with a cancelled context stored the request: %v", err)
		}
		if _, err := s.AcquireLock(ctx, Alice, "agent-b", time.Minute); err != nil {
			e.t.Fatalf("AcquireLock with a cancelled context took the lock: %v", err)
		}
	}},
}
