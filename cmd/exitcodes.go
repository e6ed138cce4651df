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
