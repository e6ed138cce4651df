// Package admin is what the operator commands do to chosen transfers:
// which transfers they pick (the IDs given, or a selection), the dry run,
// the question before a large action, the action a batch at a time
// (kill, retry, purge), and the line each transfer's outcome prints. It
// reads no flags and logs nothing: the commands give it their choices and
// log what it counted.
package admin

import (
	"errors"
	"fmt"
)

// BatchSize is how many IDs an operator command hands to one store call.
const BatchSize = 1000

// AskAbove is how many transfers an operator command changes without
// asking first, on a terminal.
const AskAbove = 100

// ErrUsage marks the errors of what the operator gave (an ID that is too
// short or ambiguous): the command exits 64.
var ErrUsage = errors.New("usage")

// ErrNotConfirmed is the error of an action the operator declined.
var ErrNotConfirmed = errors.New("not confirmed: nothing was changed (--yes acts without asking)")

// usageError is an error of what the operator gave: errors.Is(err,
// ErrUsage).
type usageError struct{ error }

func (usageError) Is(target error) bool { return target == ErrUsage }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }
