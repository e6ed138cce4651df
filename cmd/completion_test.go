package cmd_test

import (
	"slices"
	"strings"
	"testing"
)

// completions runs cobra's hidden __complete command with args and returns
// the values it offers (descriptions cut off).
func completions(t *testing.T, env map[string]string, args ...string) []string {
	t.Helper()
	r := invocation{env: env}.run(t, append([]string{"__complete"}, args...)...).wantCode(t, 0)
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if strings.HasPrefix(l, ":") || l == "" {
			continue // the directive
		}
		v, _, _ := strings.Cut(l, "\t")
		out = append(out, v)
	}
	if strings.Contains(r.stdout+r.stderr, "level=") || strings.Contains(r.stdout, "msg") {
		t.Errorf("a log line in a completion:\n%s%s", r.stdout, r.stderr)
	}
	return out
}

// TestCompletion_Values: the shell completion completes words, states
// (the last of a list), error classes, and from the store users, links and
// transfer IDs by prefix, of --user only when it is given.
func TestCompletion_Values(t *testing.T) {
	flag, path := stateFile(t)
	reqs := `{"user":"alice","source":"T2_A","destination":"T1_B","source_lfn":"/store/a/1","destination_lfn":"/store/a/1","size":1}
{"user":"bob","source":"T2_C","destination":"T1_B","source_lfn":"/store/b/1","destination_lfn":"/store/b/1","size":1}
`
	invocation{stdin: strings.NewReader(reqs)}.run(t, flag, "enqueue").wantCode(t, 0)
	ids := listIDs(t, flag, "list", "--all-users")
	env := map[string]string{"ASO_STATE": "file:" + path, "ASO_CONFIG": ""}
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want []string
	}{
		{env, []string{"--progress", ""}, []string{"auto", "always", "never"}},
		{env, []string{"kill", "--in-state", "new,s"}, []string{"new,submitted"}},
		{env, []string{"list", "--error-class", "no_"}, []string{"no_space"}},
		{env, []string{"status", "--user", ""}, []string{"alice", "bob"}},
		{env, []string{"list", "--link", "T2_C"}, []string{"T2_C->T1_B"}},
		{env, []string{"kill", ids[0][:3]}, slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return !strings.HasPrefix(id, ids[0][:3]) })},
		{map[string]string{"ASO_STATE": "file:" + path, "ASO_CONFIG": "", "ASO_USER": "bob"}, []string{"retry", ""}, listIDs(t, flag, "--user", "bob", "list")},
		{map[string]string{"ASO_STATE": "file:" + path + ".missing", "ASO_CONFIG": ""}, []string{"status", ""}, nil},
	} {
		got := completions(t, tc.env, tc.args...)
		slices.Sort(got)
		want := slices.Clone(tc.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("__complete %q: %q, want %q", tc.args, got, want)
		}
	}
}

// TestCompletion_BashNeedsBashCompletion: the bash script calls
// bash-completion's _get_comp_words_by_ref, so the help that shows how to
// load it says which package that needs.
func TestCompletion_BashNeedsBashCompletion(t *testing.T) {
	script := invocation{}.run(t, "completion", "bash").wantCode(t, 0).stdout
	if !strings.Contains(script, "_get_comp_words_by_ref") {
		t.Fatal("the bash script no longer calls _get_comp_words_by_ref: the help's bash-completion note may be wrong")
	}
	help := invocation{}.run(t, "help", "completion").wantCode(t, 0).stdout
	if !strings.Contains(help, "needs the bash-completion package") {
		t.Errorf("aso help completion does not say bash needs the bash-completion package:\n%s", help)
	}
}
