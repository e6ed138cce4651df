package cmd

import (
	"context"
	"errors"
	"io/fs"
	"net"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/memfile"
)

// Exit codes for cron and systemd beyond ExitOK..ExitLocked, from
// sysexits.h: whether running again later can help.
const (
	// ExitTempFail: the state store or FTS could not be reached, or the run
	// lock or a lease was lost. Nothing is wrong with the setup: run again
	// later.
	ExitTempFail = 75 // EX_TEMPFAIL
	// ExitConfig: the configuration, the sites file or the credentials are
	// wrong. Running again will fail the same way until a person fixes it.
	ExitConfig = 78 // EX_CONFIG
)

// permanentError marks errors that map to ExitConfig.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// permanent marks err as needing a person (ExitConfig), unless it is
// transient: a credential file on a network share that did not answer is
// worth another try.
func permanent(err error) error {
	if err == nil || isTemporary(err) {
		return err
	}
	return permanentError{err}
}

// isTemporary reports whether err may go away by itself: an unreachable or
// failing state store or FTS server, a timeout, a lost lock or lease.
func isTemporary(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	// A file that is missing or unreadable stays so: *fs.PathError has the
	// methods of a net.Error, but only its timeouts are worth a retry.
	var pe *fs.PathError
	if errors.As(err, &pe) && !pe.Timeout() {
		return false
	}
	if errors.Is(err, state.ErrLockLost) || errors.Is(err, state.ErrLeaseLost) || errors.Is(err, agent.ErrNoProgress) ||
		errors.Is(err, context.DeadlineExceeded) || fts.IsTransient(err) {
		return true
	}
	var sc interface{ HTTPStatus() int }
	if errors.As(err, &sc) && sc.HTTPStatus() >= 500 {
		return true // CouchDB failed, or kivik could not reach it (502)
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// isPermanent reports whether err needs a person: a marked configuration
// error, credentials FTS does not accept, credentials CouchDB refuses, a
// file store that is missing (`aso init` creates one), damaged (`aso
// fsck`) or not a state file, or a CouchDB database that does not exist
// (`aso init` creates it).
func isPermanent(err error) bool {
	var pe permanentError
	return errors.As(err, &pe) || fts.IsCredential(err) || errors.Is(err, fts.ErrNeedDelegation) || couch.Denied(err) ||
		errors.Is(err, memfile.ErrNoStore) || errors.Is(err, memfile.ErrDamaged) || errors.Is(err, memfile.ErrNotStateFile) ||
		errors.Is(err, couch.ErrNoDatabase)
}

// severity orders exit codes from the least to the most severe, for
// `run --all-users`, which exits with the most severe code of its agents.
func severity(code int) int {
	switch code {
	case ExitOK:
		return 0
	case ExitLocked:
		return 1
	case ExitTempFail:
		return 2
	case ExitConfig, ExitUsage:
		return 4
	}
	return 3 // ExitError and anything unknown (a signal)
}
