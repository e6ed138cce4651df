package cmd

import (
	"context"
	"strings"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
)

// openMemfile opens --state file:PATH (or file://PATH), creating the file
// and its directory when missing. Warnings of the store (a torn record
// dropped after a crash) go to the log.
func openMemfile(_ context.Context, g *Globals, url string, cfg state.Config) (state.Store, error) {
	path := strings.TrimPrefix(url, "file:")
	path = strings.TrimPrefix(path, "//")
	if path == "" {
		return nil, usagef("--state %q: want file:PATH", url)
	}
	opts := memfile.Options{}
	if g.Log != nil {
		log := g.Log
		opts.Warn = func(msg string) { log.Warn(msg) }
	}
	return memfile.OpenOptions(path, cfg, opts)
}
