package cmd_test

import (
	"strings"
	"testing"

	"github.com/asyncstageout/aso/cmd"
)

// TestUserNames_EveryEntry: a user name that is not a CMS user name
// (state.CheckUser) is refused at every entry: a request of aso enqueue
// (rejected naming its line, the good records stored), --user, ASO_USER,
// user: in the file, the login name, and aso unlock's argument.
func TestUserNames_EveryEntry(t *testing.T) {
	st := newState(t)
	in := `{"user": "alice", "source": "T2_A", "destination": "T2_B", "source_lfn": "/a", "destination_lfn": "/a", "size": 1}
{"user": "../victim", "source": "T2_A", "destination": "T2_B", "source_lfn": "/b", "destination_lfn": "/b", "size": 1}
{"user": "/etc/passwd", "source": "T2_A", "destination": "T2_B", "source_lfn": "/c", "destination_lfn": "/c", "size": 1}
{"user": "Alice.Smith", "source": "T2_A", "destination": "T2_B", "source_lfn": "/d", "destination_lfn": "/d", "size": 1}
`
	r := invocation{stdin: strings.NewReader(in)}.run(t, st, "enqueue").wantCode(t, cmd.ExitUsage)
	r.wantStdout(t, `line 2: rejected: user "../victim": not a user name: want lowercase letters, digits, _ and -`,
		`line 3: rejected: user "/etc/passwd": not a user name`, `line 4: rejected: user "Alice.Smith": not a user name`,
		"1 stored, 0 already queued, 3 rejected")
	cfg := writeConfig(t, "user: ../victim\n")
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"--user", nil, []string{"--user", "../victim", "status"}, `--user "../victim": not a user name`},
		{"ASO_USER", map[string]string{"ASO_USER": "/etc"}, []string{"status"}, `--user "/etc" (from ASO_USER): not a user name`},
		{"config file", map[string]string{"ASO_CONFIG": cfg}, []string{"status"}, `--user "../victim" (from config file ` + cfg + `): not a user name`},
		{"login name", map[string]string{"USER": "Root"}, []string{"status"}, `the login name "Root" ($USER) is not a user name`},
		{"unlock", nil, []string{"unlock", "../victim"}, `unlock: user "../victim": not a user name`},
		{"enqueue default", map[string]string{"ASO_USER": "a/b"}, []string{"enqueue"}, `--user "a/b" (from ASO_USER): not a user name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := invocation{env: tc.env}.run(t, append([]string{st}, tc.args...)...).wantCode(t, cmd.ExitUsage)
			if !strings.Contains(r.stderr, tc.want) {
				t.Errorf("stderr %q, want %q", r.stderr, tc.want)
			}
		})
	}
}

// TestEnqueue_EchoedInputIsQuoted: a rejected record is echoed quoted, so
// that escape sequences in a crafted request file never reach the
// operator's terminal raw.
func TestEnqueue_EchoedInputIsQuoted(t *testing.T) {
	in := "\x1b]0;owned\x07\x1b[2J\x1b[1;1H not json\n" +
		`{"user": "alice` + "\x1b[31m" + `", "source": "T2_A", "destination": "T2_B", "source_lfn": "/a", "destination_lfn": "/a", "size": 1}` + "\n"
	r := invocation{stdin: strings.NewReader(in)}.run(t, newState(t), "enqueue").wantCode(t, cmd.ExitUsage)
	if strings.ContainsAny(r.stdout+r.stderr, "\x1b\x07") {
		t.Errorf("a raw escape sequence of the input reached the terminal:\nstdout %q\nstderr %q", r.stdout, r.stderr)
	}
	r.wantStdout(t, `line 1: rejected: not a JSON object: "\x1b]0;owned\a\x1b[2J\x1b[1;1H not json"`, `line 2: rejected: `)
}
