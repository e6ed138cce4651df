package state

import (
	"fmt"
	"slices"
	"time"
)

// VerifyResult is what a verification (aso verify) found at the
// destination of a transfer.
type VerifyResult string

// The results of a verification.
const (
	// VerifyPresent: the file is there with the size and adler32 of the
	// request.
	VerifyPresent VerifyResult = "present"
	// VerifyMissing: the storage says there is no such file (ENOENT).
	VerifyMissing VerifyResult = "missing"
	// VerifyDiffers: there is something of another size or checksum, or
	// not a file.
	VerifyDiffers VerifyResult = "differs"
	// VerifyUnreadable: the storage could not be asked (refused, failing,
	// unreachable, timed out) or has no checksum to give.
	VerifyUnreadable VerifyResult = "unreadable"
)

// VerifyResults lists every result, in the order reports show them.
var VerifyResults = []VerifyResult{VerifyPresent, VerifyMissing, VerifyDiffers, VerifyUnreadable}

// Valid reports whether r is one of VerifyResults.
func (r VerifyResult) Valid() bool { return slices.Contains(VerifyResults, r) }

// Verification is one item of Admin.RecordVerifications: what a
// verification found at the destination of transfer ID, and why.
type Verification struct {
	ID     string
	Result VerifyResult
	// Detail says what was found: "size 1024 and adler32 0a1b2c3d match",
	// "size 12, want 1024", the storage's error.
	Detail string
}

// VerifyReasonPrefix starts the reason of a verification's history entry.
const VerifyReasonPrefix = "verified: "

// VerifyOf records v in t's history as one entry (Transition.Verified set
// to the result), replacing the entry of t's previous verification, at
// now, by by. State, Reason and LastUpdate stay as they are: a
// verification changes nothing of the transfer but what is known of its
// destination. ErrNotTerminal for a transfer that has not ended (its
// destination is still being written); ErrInvalid for an unknown result.
func VerifyOf(t *Transfer, v Verification, now time.Time, by string) error {
	if !v.Result.Valid() {
		return fmt.Errorf("transfer %s: unknown verification result %q: %w", t.ID, v.Result, ErrInvalid)
	}
	if !t.State.Terminal() {
		return fmt.Errorf("transfer %s is %s: %w", t.ID, t.State, ErrNotTerminal)
	}
	t.History = slices.DeleteFunc(t.History, func(tr Transition) bool { return tr.Verified != "" })
	reason := VerifyReasonPrefix + string(v.Result)
	if v.Detail != "" {
		reason += ": " + v.Detail
	}
	t.History = appendHistory(t.History, Transition{At: At(now), From: t.State, To: t.State, By: by, Reason: reason, Verified: v.Result})
	return nil
}
