package cmd_test

import (
	"testing"

	"github.com/asyncstageout/aso/cmd"
)

// TestFleet_Usage: --all-users refuses flags that make no sense with it,
// before it starts anything.
func TestFleet_Usage(t *testing.T) {
	sites, _, _ := localSites(t, 1)
	st := newState(t)
	for name, args := range map[string][]string{
		"with --user":          {"--user", "bob"},
		"no agent at once":     {"--max-agents", "0"},
		"no discovery":         {"--discover-interval", "0s"},
		"max agents not a num": {"--max-agents", "many"},
	} {
		t.Run(name, func(t *testing.T) {
			aso(t, append([]string{"run", st, "--all-users", "--sites", sites}, args...)...).wantCode(t, cmd.ExitUsage)
		})
	}
	t.Run("no sites file", func(t *testing.T) {
		aso(t, "run", st, "--all-users").wantCode(t, cmd.ExitUsage)
	})
	t.Run("sites file missing", func(t *testing.T) {
		aso(t, "run", st, "--all-users", "--sites", st[len("--state=file:"):]).wantCode(t, cmd.ExitConfig)
	})
}
