// Package exitcode holds aso's exit codes, which cron and systemd read to
// decide what to do, and which a fleet reads of its agents. They are
// documented in docs/operators.md and in every command's --help.
package exitcode

// The exit codes; 64, 75 and 78 come from sysexits.h; 75 and 78 say whether running
// again later can help.
const (
	OK     = 0  // success
	Error  = 1  // an error; the message says what to do
	Usage  = 64 // EX_USAGE: bad flags, arguments, settings or input records
	Locked = 3  // another agent holds this user's run lock
	// TempFail: the state store or FTS could not be reached, or the run
	// lock or a lease was lost. Nothing is wrong with the setup: run again
	// later.
	TempFail = 75 // EX_TEMPFAIL
	// Config: the configuration, the sites file or the credentials are
	// wrong. Running again will fail the same way until a person fixes it.
	Config = 78 // EX_CONFIG
)

// Severity orders exit codes from the least to the most severe: a fleet
// exits with the most severe code of its agents.
func Severity(code int) int {
	switch code {
	case OK:
		return 0
	case Locked:
		return 1
	case TempFail:
		return 2
	case Config, Usage:
		return 4
	}
	return 3 // Error and anything unknown (a signal)
}
