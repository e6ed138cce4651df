package state

import "time"

// RunRecord is one run of an agent, recorded in the user's lock document
// when the run releases the lock.
type RunRecord struct {
	Holder   string `json:"holder"`
	Started  Time   `json:"started"`
	Ended    Time   `json:"ended"`
	ExitCode int    `json:"exit_code"`
	// Error is why the run ended with an error, or why a lock whose holder
	// had died was released (ExitCode -1: unknown).
	Error string `json:"error,omitempty"`
	// By is who released the lock instead of its holder, at Ended: the
	// operator's login@host (aso unlock), or the agent that took the lock
	// over from a holder found dead; empty for a run that released its
	// own lock.
	By string `json:"by,omitempty"`
	// TookOver names the holder whose lock this run took over, found dead
	// before the lock expired, and why it was judged dead.
	TookOver string `json:"took_over,omitempty"`
}

// UnlockDoc applies Unlock by by to the stored lock d at now.
func UnlockDoc(d *LockDoc, user, holder, by, note string, now time.Time) error {
	if err := NotHeldBy(d, user, holder); err != nil {
		return err
	}
	d.LastRun = &RunRecord{Holder: holder, Started: d.Since, Ended: At(now), ExitCode: -1, Error: note, By: by}
	d.Expire = Time{}
	return nil
}

// ReleaseDoc applies ReleaseLock with a run record to the stored lock d: it reports
// false when d is not held by l.Holder (nothing to write).
func ReleaseDoc(d *LockDoc, l Lock, run *RunRecord) bool {
	if d == nil || d.Holder != l.Holder || d.Expire.IsZero() {
		return false
	}
	d.Expire = Time{}
	if run != nil {
		r := *run
		d.LastRun = &r
	}
	return true
}

// NotHeldBy returns an error wrapping ErrLockLost, naming the holder, if
// the stored lock d of user (nil if none) is not held by holder (expired
// or not); nil if it is.
func NotHeldBy(d *LockDoc, user, holder string) error {
	if d != nil && d.Holder == holder && !d.Expire.IsZero() {
		return nil
	}
	h := "nobody"
	if d != nil && !d.Expire.IsZero() {
		h = d.Holder
	}
	return &lockLostError{user: user, holder: h, want: holder}
}

type lockLostError struct{ user, holder, want string }

func (e *lockLostError) Error() string {
	return "run lock of " + e.user + " is held by " + e.holder + ", not " + e.want
}
func (e *lockLostError) Unwrap() error { return ErrLockLost }

// TakenSince is the Since of a lock that holder takes at now over the
// stored lock cur (nil if none): kept when holder already held it live.
func TakenSince(cur *LockDoc, holder string, now time.Time) Time {
	if cur != nil && cur.Holder == holder && cur.Expire.After(now) && !cur.Since.IsZero() {
		return cur.Since
	}
	return At(now)
}
