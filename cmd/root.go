// Package cmd is aso's command line: flags, environment, configuration file,
// logging setup, wiring of the backends, and exit codes. It is the only
// package that reads flags or the environment.
package cmd

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/asyncstageout/aso/state"
)

// Exit codes. They are documented in the README and in `aso --help`.
const (
	ExitOK     = 0 // success
	ExitError  = 1 // an error; the message says what to do
	ExitUsage  = 2 // bad flags, arguments or input records
	ExitLocked = 3 // another agent holds this user's run lock
)

const exitCodesHelp = `Exit codes:
  0  success
  1  error (the message says what went wrong)
  2  usage error, or some input records were rejected
  3  another agent holds this user's run lock (aso run): nothing to do here
  75 temporary: state store or FTS unreachable, run lock or lease lost; run again later
  78 permanent: configuration, sites file or credentials wrong; needs a person`

// usageError marks errors that map to ExitUsage.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef returns an error that exits with ExitUsage.
func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// commands lists the constructors of the subcommands; each command's file
// adds itself in an init function.
var commands []func(g *Globals) *cobra.Command

func register(f func(g *Globals) *cobra.Command) { commands = append(commands, f) }

// NewRootCommand builds the aso command tree.
func NewRootCommand(g *Globals) *cobra.Command {
	root := &cobra.Command{
		Use:           "aso",
		Short:         "Asynchronous stage-out agent: moves users' files between grid sites through FTS3",
		Long:          "aso claims a user's transfer requests, submits them to FTS3 in bulk, monitors them,\ncleans up failed transfers and records every outcome.\n\n" + exitCodesHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := g.Load(cmd); err != nil {
				return err
			}
			signalLog.Store(g.Log)
			return nil
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	g.AddFlags(root)
	for _, f := range commands {
		root.AddCommand(f(g))
	}
	return root
}

// Execute runs aso with os.Args and returns the process exit code.
func Execute() int {
	ctx, stop := notifySignals()
	defer stop()
	return ExecuteContext(ctx, os.Args[1:], os.Stdout, os.Stderr)
}

// ExitCode maps an error returned by a command to the process exit code.
func ExitCode(err error) int {
	var ue usageError
	var ce exitCodeError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ce):
		return ce.code
	case errors.Is(err, state.ErrLocked):
		return ExitLocked
	case errors.As(err, &ue):
		return ExitUsage
	case isPermanent(err):
		return ExitConfig
	case isTemporary(err):
		return ExitTempFail
	}
	return ExitError
}
