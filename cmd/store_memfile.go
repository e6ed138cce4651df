package cmd

import (
	"context"
	"strings"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
)

// openMemfile opens --state file:PATH (or file://PATH), creating the file
// and its directory when missing, except for a read-only command (see
// readOnly), which needs the file to exist and never writes it. Warnings of the store (a torn record
// dropped after a crash) go to the log.
func openMemfile(ctx context.Context, g *Globals, url string, cfg state.Config) (state.Store, error) {
	path := strings.TrimPrefix(url, "file:")
	path = strings.TrimPrefix(path, "//")
	if path == "" {
		return nil, usagef("--state %q: want file:PATH", url)
	}
	opts := memfile.Options{ReadOnly: isReadOnly(ctx)}
	if g.Log != nil {
		log := g.Log
		opts.Warn = func(msg string) { log.Warn(msg) }
	}
	return memfile.OpenOptions(path, cfg, opts)
}

// readOnlyKey marks the context of a command that only reads the store.
type readOnlyKey struct{}

// readOnly returns ctx for a command that only reads the store: a file
// store is then opened read-only, so that a mistyped --state is an error
// instead of a new empty store, and a file without write permission can
// be read.
func readOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, readOnlyKey{}, true)
}

func isReadOnly(ctx context.Context) bool { ro, _ := ctx.Value(readOnlyKey{}).(bool); return ro }
