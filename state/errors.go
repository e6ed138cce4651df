package state

import (
	"errors"
	"fmt"
)

// Sentinel errors of the contract. Backends wrap them; callers test with errors.Is.
var (
	// ErrNotFound means no transfer (or lock) has the given ID.
	ErrNotFound = errors.New("not found")
	// ErrConflict means a revision-checked write lost against another writer.
	// Backends retry conflicts themselves; callers see it only when retries
	// were exhausted.
	ErrConflict = errors.New("revision conflict")
	// ErrLeaseLost means the transfer is no longer held by this agent, or is no
	// longer in the state the call expects (for example it was re-claimed after
	// the lease expired, or reached a terminal state). Nothing was written; the
	// agent must make no further update to that transfer.
	ErrLeaseLost = errors.New("lease lost")
	// ErrLocked means another agent holds the user's run lock.
	ErrLocked = errors.New("another agent holds the lock")
	// ErrLockLost means the run lock expired or was taken over; the holder must
	// stop all work.
	ErrLockLost = errors.New("run lock lost")
	// ErrInvalid is wrapped by every validation error.
	ErrInvalid = errors.New("invalid")
	// ErrTerminal means the operation needs a non-terminal transfer.
	ErrTerminal = errors.New("transfer is terminal")
	// ErrNotTerminal means the operation (Retry) needs a terminal transfer.
	ErrNotTerminal = errors.New("transfer is not terminal")
)

// ValidationError names the field and value of a request that was rejected.
type ValidationError struct {
	Field  string
	Value  string
	Reason string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("%s %q: %s", e.Field, truncate(e.Value, 120), e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *ValidationError) Unwrap() error { return ErrInvalid }

// LockedError is returned by AcquireLock when another agent holds the lock;
// it says who and until when, so an operator can act.
type LockedError struct {
	User   string
	Holder string
	Expire string
	// Since is when Holder took the lock (zero if unknown).
	Since Time
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("user %s: run lock held by %s until %s", e.User, e.Holder, e.Expire)
}

// Unwrap makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Unwrap() error { return ErrLocked }

// InvalidDoc describes a stored document that does not decode as a transfer.
// Backends skip such documents in every call and report them through Summary.
type InvalidDoc struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
