package cmd_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCrowdTable prints the requests and the time of one user's commands
// on an empty database and on one crowded with ASO_CROWD_TABLE other
// users' transfers (docs/performance.md). It measures, it asserts nothing
// (TestRun_IdleStartPerUser and TestPerUserCommands_ReadPerUser do), so it
// runs only when asked:
//
//	ASO_CROWD_TABLE=100000 go test ./cmd -run TestCrowdTable -v
func TestCrowdTable(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("ASO_CROWD_TABLE"))
	if n <= 0 {
		t.Skip("set ASO_CROWD_TABLE=N (other users' transfers) to print the table")
	}
	sites, _, _ := localSites(t, 1)
	commands := []struct {
		name string
		args []string
	}{
		{"run (idle)", []string{"run", "--sites", sites, "--fts", "local", "--progress", "never"}},
		{"run (typo user)", nil},
		{"status --user", []string{"status"}},
		{"list --user", []string{"list"}},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n| database | command | exit | CouchDB requests | wall time (best of 3) |\n|---|---|---|---|---|\n")
	for _, size := range []int{0, n} {
		st, u := couchState(t, size)
		coolingOff(t, u, "alice")
		for _, c := range commands {
			user, args := "alice", c.args
			if args == nil {
				user, args = "typo", commands[0].args
			}
			best := time.Duration(0)
			var reqs []string
			var code int
			for range 3 {
				start := time.Now()
				r := aso(t, append([]string{st, "--user", user, "--log-level", "debug", "--log-format", "json"}, args...)...)
				took := time.Since(start)
				code = r.code
				if best == 0 || took < best {
					best = took
				}
				reqs = couchRequests(t, r.stderr)
			}
			fmt.Fprintf(&b, "| %d other transfers | %s | %d | %d | %.2f s |\n", size, c.name, code, len(reqs), best.Seconds())
		}
	}
	t.Log(b.String())
}
