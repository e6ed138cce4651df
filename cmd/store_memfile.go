package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
	s, err := memfile.OpenOptions(path, cfg, opts)
	if err != nil {
		return nil, fileStoreError(err, path)
	}
	return s, nil
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
// (isPermanent).
func fileStoreError(err error, path string) error {
	switch {
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
