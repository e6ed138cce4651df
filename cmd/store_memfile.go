package cmd

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
)

// openMemfile opens --state file:PATH (or file://PATH). The file must
// exist: only `aso init` creates a store, so that a mistyped path fails
// (exit 78) instead of serving a new empty store. A read-only command (see
// readOnly) never writes the file. Warnings of the store (a torn record
// dropped after a crash) go to the log.
func openMemfile(ctx context.Context, g *Globals, url string, cfg state.Config) (state.Store, error) {
	path, err := memfilePath(url)
	if err != nil {
		return nil, err
	}
	opts := memfile.Options{ReadOnly: isReadOnly(ctx)}
	if g.Log != nil {
		log := g.Log
		opts.Warn = func(msg string) { log.Warn(msg) }
	}
	if stop, ok := ctx.Value(damageKey{}).(context.CancelCauseFunc); ok {
		log := g.Log
		opts.Damaged = func(err error) {
			err = fileStoreError(err, path)
			if log != nil {
				log.WithError(err).Error("the file store is damaged: stopping at once, writing nothing more")
			}
			stop(err)
		}
	}
	s, err := memfile.OpenOptions(path, cfg, opts)
	if err != nil {
		return nil, fileStoreError(err, path)
	}
	return s, nil
}

// damageKey marks the context of a command that stops as soon as its file
// store is found damaged while it runs (stopOnDamage).
type damageKey struct{}

// stopOnDamage returns ctx for a command that runs on: it is cancelled,
// with the damage as its cause, when a call of a file store opened with it
// finds damage appended since the store was opened. The command then
// returns damaged(ctx), and exits 78 pointing to aso fsck, as it would
// have had it found the damage at its start.
func stopOnDamage(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	return context.WithValue(ctx, damageKey{}, cancel), func() { cancel(nil) }
}

// damaged returns the damage that stopped ctx (stopOnDamage), nil if none
// did.
func damaged(ctx context.Context) error {
	if err := context.Cause(ctx); errors.Is(err, memfile.ErrDamaged) {
		return err
	}
	return nil
}

// memfilePath returns the path of a file store's URL, file:PATH or
// file://PATH.
func memfilePath(url string) (string, error) {
	path := strings.TrimPrefix(strings.TrimPrefix(url, "file:"), "//")
	if path == "" {
		return "", usagef("--state %q: want file:PATH", url)
	}
	return path, nil
}

// fileStoreError adds to an error of the file store at path what a person
// does about it. The exit code comes from the memfile sentinel it wraps
// (isPermanent); a path that is a directory, or a file this user may not
// write, needs a person too (78), and is said once, by its errno.
func fileStoreError(err error, path string) error {
	var errno syscall.Errno
	errors.As(err, &errno)
	switch {
	case errno == syscall.EISDIR:
		return permanentError{fmt.Errorf("--state file:%s is a directory, not a state file: name the file (aso init --state file:%s creates one there)", path, filepath.Join(path, "state.aso"))}
	case errno == syscall.EACCES || errno == syscall.EPERM || errno == syscall.EROFS:
		return permanentError{fmt.Errorf("--state file:%s cannot be written (%v): this command writes the store; run it as the user that owns the file, or read it with aso status or aso list, which need no write", path, errno)}
	case errors.Is(err, memfile.ErrNoStore):
		return fmt.Errorf("%w: is --state right? aso init --state file:%s creates a new store", err, path)
	case errors.Is(err, memfile.ErrDamaged):
		return fmt.Errorf("%w: stop the agents; aso fsck --state file:%s lists the damage, and aso fsck --repair --state file:%s writes what can be read into a new file", err, path, path)
	}
	return err
}

// readOnlyKey marks the context of a command that only reads the store.
type readOnlyKey struct{}

// readOnly returns ctx for a command that only reads the store: a file
// store is then opened read-only, so that the command never writes it and
// a file without write permission can be read.
func readOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, readOnlyKey{}, true)
}

func isReadOnly(ctx context.Context) bool { ro, _ := ctx.Value(readOnlyKey{}).(bool); return ro }
