package cmd

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// A number or duration given by a flag, the environment or the file must be
// positive: zero or a negative value is a usage error, never replaced by a
// default. The settings below are the exceptions, each with a documented
// meaning for zero (or a negative value). A new numeric flag whose zero
// means something adds its name here.
var (
	zeroAllowed = map[string]bool{
		"max-runtime": true, "give-up-after": true, "monitor-group": true, "fts-retry": true, "fts-retry-delay": true,
		"sim-seed": true, "sim-failure-rate": true, "sim-transfer-time": true,
		"seed": true, "failure-rate": true, "default-retry": true,
		"queue-delay": true, "start-delay": true, "transfer-time": true,
		"scitag-activity": true, "max-active-per-link": true, "fleet-read-quorum": true,
	}
	negativeAllowed = map[string]bool{"fts-retry": true, "sim-seed": true, "seed": true}
)

// choices lists the settings that take one of a few words.
var choices = map[string][]string{
	"progress":   {"auto", "always", "never"},
	"log-format": {"", "text", "json"},
	"log-level":  {"debug", "info", "warn", "error"},
}

// valueChecks holds the checks of settings whose form the flag type does not
// enforce.
var valueChecks = map[string]func(string) error{
	"max-time-in-queue": checkMaxTimeInQueue,
	"sim-failure-rate":  checkProbability,
	"failure-rate":      checkProbability,
}

// checkValue checks a value that was given for fl.
func checkValue(fl *pflag.Flag) error {
	s := fl.Value.String()
	if want, ok := choices[fl.Name]; ok && !contains(want, s) {
		return fmt.Errorf("want %s", strings.Join(nonEmpty(want), ", "))
	}
	if check, ok := valueChecks[fl.Name]; ok {
		if err := check(s); err != nil {
			return err
		}
	}
	sign, ok := numberSign(fl.Value.Type(), s)
	switch {
	case !ok:
	case sign < 0 && !negativeAllowed[fl.Name]:
		return fmt.Errorf("must be positive")
	case sign == 0 && !zeroAllowed[fl.Name]:
		return fmt.Errorf("must be greater than zero")
	}
	return nil
}

// expected says what a value of fl's type must look like, for the error
// of a value that does not parse (err): a person never sees Go's parse
// error ("strconv.ParseInt: parsing ...").
func expected(fl *pflag.Flag, err error) string {
	switch fl.Value.Type() {
	case "duration":
		return "want a duration: a number and its unit (ms, s, m, h), such as 90s, 15m or 2h"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "count":
		if errors.Is(err, strconv.ErrRange) {
			return "want a whole number, and a smaller one"
		}
		return "want a whole number, such as 100"
	case "float32", "float64":
		return "want a number, such as 0.5"
	case "bool":
		return "want true or false"
	}
	return err.Error()
}

// flagValueError is the usage error of a value given for fl on the command
// line that does not parse (a *pflag.InvalidValueError), err as it is
// otherwise.
func flagValueError(err error) error {
	var ive *pflag.InvalidValueError
	if errors.As(err, &ive) {
		return usagef("--%s %q: %s", ive.GetFlag().Name, ive.GetValue(), expected(ive.GetFlag(), err))
	}
	return usageError{err}
}

// numberSign returns the sign of a numeric or duration flag's value; ok is
// false for other types.
func numberSign(typ, s string) (sign int, ok bool) {
	var f float64
	switch typ {
	case "duration":
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, false
		}
		f = float64(d)
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64", "count":
		var err error
		if f, err = strconv.ParseFloat(s, 64); err != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	switch {
	case f < 0:
		return -1, true
	case f > 0:
		return 1, true
	}
	return 0, true
}

var maxTimeInQueueRE = regexp.MustCompile(`^[1-9][0-9]*[smhd]?$`)

// checkMaxTimeInQueue accepts what FTS3 accepts for max_time_in_queue: a
// whole number of hours, or a whole number with an s, m, h or d suffix.
func checkMaxTimeInQueue(s string) error {
	if !maxTimeInQueueRE.MatchString(s) {
		return fmt.Errorf("want a positive whole number with an s, m, h or d suffix, such as 12h or 90m")
	}
	return nil
}

func checkProbability(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f > 1 {
		return fmt.Errorf("want a probability from 0 to 1")
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func nonEmpty(list []string) []string {
	var out []string
	for _, x := range list {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}
