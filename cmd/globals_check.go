package cmd

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/internal/ranges"
	"github.com/asyncstageout/aso/state"
)

// commandLineOnly are the settings that widen what a command destroys or
// reaches to every transfer or every user: they are taken from the command
// line only, never from the environment or the configuration file, where a
// value set once for another purpose would act without being seen.
var commandLineOnly = map[string]bool{"all": true, "all-users": true, "older-than": true}

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
	"fts":               checkFTSEndpoint,
	"user":              checkUser,
}

// checkValue checks a value that was given for fl, a flag of command:
// one of its words, its form, and the range of a count or a duration
// (package ranges).
func checkValue(command string, fl *pflag.Flag) error {
	s := fl.Value.String()
	if want, ok := choices[fl.Name]; ok && !slices.Contains(want, s) {
		return fmt.Errorf("want %s", strings.Join(nonEmpty(want), ", "))
	}
	if check, ok := valueChecks[fl.Name]; ok {
		if err := check(s); err != nil {
			return err
		}
	}
	if v, ok := numberOf(fl.Value.Type(), s); ok {
		r, ok := ranges.Of(command, fl.Name)
		if !ok {
			return fmt.Errorf("aso has no range for this setting: please report it")
		}
		return r.Check(v)
	}
	return nil
}

// durationForm says what a duration looks like: a number without a unit
// is refused, whatever unit a person may have meant.
const durationForm = "want a duration: a number and its unit (ms, s, m, h), such as 90s, 15m or 2h"

// expected says what a value of fl's type must look like, for the error
// of a value that does not parse (err): a person never sees Go's parse
// error ("strconv.ParseInt: parsing ...").
func expected(fl *pflag.Flag, err error) string {
	switch fl.Value.Type() {
	case "duration":
		return durationForm
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

// durationSetting parses raw, the value of a duration setting with no
// flag, and checks its range.
func durationSetting(name, raw string) (time.Duration, error) {
	d, err := time.ParseDuration(raw)
	if err != nil {
		return 0, errors.New(durationForm)
	}
	r, _ := ranges.Of("", name)
	return d, r.Check(float64(d))
}

// numberOf returns the value of a numeric or duration flag (a duration in
// nanoseconds); ok is false for other types.
func numberOf(typ, s string) (float64, bool) {
	switch typ {
	case "duration":
		d, err := time.ParseDuration(s)
		return float64(d), err == nil
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64", "count":
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil
	}
	return 0, false
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

// checkUser accepts a user name (state.CheckUser), from --user, ASO_USER or
// the file.
func checkUser(s string) error {
	var ve *state.ValidationError
	if err := state.CheckUser(s); errors.As(err, &ve) {
		return errors.New(ve.Reason)
	}
	return nil
}

// checkFTSEndpoint accepts the in-process simulator or the URL of an
// FTS3 server: a URL that is not one is said first, before the
// credentials it would need.
func checkFTSEndpoint(s string) error {
	if s == "local" {
		return nil
	}
	if err := fts.CheckEndpoint(s); err != nil {
		return fmt.Errorf("%v (or local, the in-process simulator)", err)
	}
	return nil
}

// nonEmpty returns the words of list but "".
func nonEmpty(list []string) []string {
	return slices.DeleteFunc(slices.Clone(list), func(s string) bool { return s == "" })
}
