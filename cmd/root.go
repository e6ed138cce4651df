// Package cmd is aso's command line: flags, environment, configuration file,
// logging setup, wiring of the backends, and exit codes. It is the only
// package that reads flags or the environment.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/asyncstageout/aso/fleet"
	"github.com/asyncstageout/aso/internal/exitcode"
	"github.com/asyncstageout/aso/state"
)

// Exit codes (see package exitcode). They are documented in
// docs/operators.md and, from exitMeaning, in every command's --help and
// man page.
const (
	ExitOK       = exitcode.OK
	ExitError    = exitcode.Error
	ExitUsage    = exitcode.Usage
	ExitLocked   = exitcode.Locked
	ExitTempFail = exitcode.TempFail
	ExitConfig   = exitcode.Config
)

// exitCodeError carries the exit code of a command that ends with its
// own (enqueue stopped by a signal).
type exitCodeError struct {
	code int
	err  error
}

func (e exitCodeError) Error() string { return e.err.Error() }
func (e exitCodeError) Unwrap() error { return e.err }

// usageError marks errors that map to ExitUsage.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef returns an error that exits with ExitUsage.
func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// loadGlobals reads the configuration of cmd into g and sets up logging,
// signals included: what every command does before it runs.
func loadGlobals(g *Globals, cmd *cobra.Command) error {
	if err := g.Load(cmd); err != nil {
		return err
	}
	signalLog.Store(g.Log)
	setStopAction(cmd.Name())
	return nil
}

// NewRootCommand builds the aso command tree.
func NewRootCommand(g *Globals) *cobra.Command {
	root := &cobra.Command{
		Use:               "aso",
		Short:             "Asynchronous stage-out agent: moves users' files between grid sites through FTS3",
		Long:              "aso claims a user's transfer requests, submits them to FTS3 in bulk, monitors them,\ncleans up failed transfers and records every outcome.\n\nEvery flag can be set in the environment (ASO_ and its name in capitals, - as _, named\nin [$...] after each flag) or in the configuration file (see aso config).",
		SilenceUsage:      true,
		SilenceErrors:     true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return loadGlobals(g, cmd) },
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return flagValueError(err) })
	g.AddFlags(root)
	for _, f := range commands {
		root.AddCommand(f(g))
	}
	root.Version = versionString()
	root.SetVersionTemplate("aso {{.Version}}\n")
	g.knownKeys = settingKeys(root)
	setupHelp(root)
	setupCompletion(root, g)
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
	var fe *fleet.ExitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ce):
		return ce.code
	case errors.As(err, &fe):
		return fe.Code
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

// ExecuteContext runs aso with args, writing to stdout and stderr, and returns
// the exit code. Errors are printed to stderr as "aso: <message>".
func ExecuteContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return ExecuteWith(ctx, args, Env{Stdin: os.Stdin, Stdout: stdout, Stderr: stderr, LookupEnv: os.LookupEnv})
}

// Env is the process environment aso runs in: its standard streams and its
// environment variables. Tests pass their own instead of the process's.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// LookupEnv reads an environment variable telling empty from unset; nil
	// means os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// ExecuteWith runs aso with args in env and returns the exit code. Errors
// are printed to env.Stderr as "aso: <message>".
func ExecuteWith(ctx context.Context, args []string, env Env) int {
	g := &Globals{Stdin: env.Stdin, Stdout: env.Stdout, Stderr: env.Stderr, LookupEnv: env.LookupEnv}
	root := NewRootCommand(g)
	root.SetArgs(args)
	root.SetIn(g.stdin())
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	err := root.ExecuteContext(ctx)
	if err != nil && isCobraUsage(err) {
		err = usageError{err}
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "aso: %v\n", err)
	}
	return ExitCode(err)
}

// isCobraUsage recognises the argument errors cobra returns untyped.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least", "requires at most", "invalid argument", "flag needs an argument"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
