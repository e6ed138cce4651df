package verify

import (
	"errors"
	"fmt"

	"github.com/asyncstageout/aso/state"
)

// Totals counts the outcomes of a verification by result.
type Totals struct {
	Present    int `json:"present"`
	Missing    int `json:"missing"`
	Differs    int `json:"differs"`
	Unreadable int `json:"unreadable"`
	// NotRecorded counts the results that could not be written into
	// their transfers' histories (the transfer was retried or purged
	// meanwhile).
	NotRecorded int `json:"not_recorded,omitempty"`
}

// Errors a verification ends with (Totals.Err), checked with errors.Is.
var (
	// ErrFound: a file is missing or differs.
	ErrFound = errors.New("files are missing or differ")
	// ErrUnreadable: none is missing or differs, but some could not be read.
	ErrUnreadable = errors.New("files could not be read")
)

// Add counts o.
func (t *Totals) Add(o Outcome) {
	switch o.Result {
	case state.VerifyPresent:
		t.Present++
	case state.VerifyMissing:
		t.Missing++
	case state.VerifyDiffers:
		t.Differs++
	case state.VerifyUnreadable:
		t.Unreadable++
	}
	if o.NotRecorded != "" {
		t.NotRecorded++
	}
}

// Checked counts the transfers checked.
func (t Totals) Checked() int { return t.Present + t.Missing + t.Differs + t.Unreadable }

// String is the totals as aso verify's last line says them.
func (t Totals) String() string {
	s := fmt.Sprintf("%d checked: %d present, %d missing, %d differ, %d unreadable", t.Checked(), t.Present, t.Missing, t.Differs, t.Unreadable)
	if t.NotRecorded > 0 {
		s += fmt.Sprintf(" (%d not recorded)", t.NotRecorded)
	}
	return s
}

// Err is nil when every file checked is present; wraps ErrFound when one
// is missing or differs, whatever else could not be read; else wraps
// ErrUnreadable when one could not be read.
func (t Totals) Err() error {
	switch {
	case t.Missing+t.Differs > 0:
		return fmt.Errorf("%d missing and %d differ of %d checked: %w", t.Missing, t.Differs, t.Checked(), ErrFound)
	case t.Unreadable > 0:
		return fmt.Errorf("%d of %d checked could not be read: %w", t.Unreadable, t.Checked(), ErrUnreadable)
	}
	return nil
}
