package cmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/asyncstageout/aso/state"
)

// commands lists the constructors of aso's subcommands: adding a command is
// one line here. `aso --help` sorts them by name.
var commands = []func(g *Globals) *cobra.Command{
	newInitCommand,
	newEnqueueCommand,
	newRunCommand,
	newStatusCommand,
	newListCommand,
	newServeCommand,
	newPurgeCommand,
	newUnlockCommand,
	newFsckCommand,
	newKillCommand,
	newRetryCommand,
	newVerifyCommand,
	newResolveCommand,
	newResolveConflictsCommand,
	newRmCommand,
	newConfigCommand,
	newManCommand,
	newFTSSimCommand,
	newCompletionCommand,
	newVersionCommand,
}

// storeOpener opens the store at a --state URL.
type storeOpener func(ctx context.Context, g *Globals, url string, cfg state.Config) (state.Store, error)

// storeOpeners maps a --state URL scheme to the backend that opens it.
var storeOpeners = map[string]storeOpener{
	"file":    openMemfile,
	"couchdb": openCouch,
	"http":    openCouch,
	"https":   openCouch,
}
