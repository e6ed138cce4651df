package cmd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/state"
)

// result is what one aso invocation did.
type result struct {
	code           int
	stdout, stderr string
}

// invocation describes one run of aso: its environment and standard input.
type invocation struct {
	env   map[string]string
	stdin io.Reader
}

// run executes aso with args and the given environment (nothing else of the
// process environment is visible; a variable mapped to "" is set and empty)
// and standard input.
func (iv invocation) run(t testing.TB, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	stdin := iv.stdin
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	code := cmd.ExecuteWith(ctx, args, cmd.Env{
		Stdin: stdin, Stdout: &out, Stderr: &errb,
		LookupEnv: func(k string) (string, bool) { v, ok := iv.env[k]; return v, ok },
	})
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// aso runs aso with args, no environment and empty standard input.
func aso(t testing.TB, args ...string) result {
	t.Helper()
	return invocation{}.run(t, args...)
}

// newState returns a --state flag naming a fresh file store, created by
// aso init.
func newState(t testing.TB) string {
	t.Helper()
	flag, _ := stateFile(t)
	return flag
}

// stateFile returns a --state flag naming a fresh file store, created by
// aso init, and its path.
func stateFile(t testing.TB) (flag, path string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "s.aso")
	flag = "--state=file:" + path
	createStore(t, flag)
	return flag, path
}

// wantCode fails the test when r did not exit with code.
func (r result) wantCode(t testing.TB, code int) result {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
	return r
}

// wantStdout fails the test unless r's standard output contains every one
// of subs.
func (r result) wantStdout(t testing.TB, subs ...string) result {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
		}
	}
	return r
}

// wantMatch fails the test unless out matches every regular expression.
func wantMatch(t testing.TB, out string, res ...string) {
	t.Helper()
	for _, re := range res {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("output lacks %s:\n%s", re, out)
		}
	}
}

// wantQueue fails the test unless `aso status --json` with args counts
// exactly want transfers in each state named there.
func wantQueue(t testing.TB, want map[state.State]int, args ...string) {
	t.Helper()
	out := aso(t, append([]string{"status", "--json"}, args...)...).wantCode(t, 0)
	var got struct {
		ByState map[state.State]int `json:"by_state"`
	}
	if err := json.Unmarshal([]byte(out.stdout), &got); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out.stdout)
	}
	for s, n := range want {
		if got.ByState[s] != n {
			t.Errorf("%d transfers %s, want %d (by state: %v)", got.ByState[s], s, n, got.ByState)
		}
	}
}

// createStore creates the empty store named by a --state flag with aso
// init: no other command creates one.
func createStore(t testing.TB, stateFlag string) {
	t.Helper()
	aso(t, stateFlag, "init").wantCode(t, 0)
}
