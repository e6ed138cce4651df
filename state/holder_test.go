package state_test

import (
	"testing"

	"github.com/asyncstageout/aso/state"
)

func TestParseHolder(t *testing.T) {
	for _, c := range []struct {
		id   string
		want state.Holder
		ok   bool
	}{
		{"node1:4242:883211-5f1e9a2c-9f3a2b1c", state.Holder{Host: "node1", PID: 4242, Start: 883211, Machine: "5f1e9a2c"}, true},
		// an older agent's ID: the process is named by its pid alone
		{"node1:4242:9f3a2b1c", state.Holder{Host: "node1", PID: 4242}, true},
		// a host name with colons (an IPv6 address)
		{"fe80::1:77:12-ab-cd", state.Holder{Host: "fe80::1", PID: 77, Start: 12, Machine: "ab"}, true},
		// a start time that is not a number leaves the process unnamed
		{"node1:5:x-ab-cd", state.Holder{Host: "node1", PID: 5}, true},
		{"node1:0:ab", state.Holder{}, false},
		{"node1:pid:ab", state.Holder{}, false},
		{"login@host:cli", state.Holder{}, false},
		{"agent-a", state.Holder{}, false},
	} {
		got, ok := state.ParseHolder(c.id)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseHolder(%q) = %+v, %v; want %+v, %v", c.id, got, ok, c.want, c.ok)
		}
	}
}

// TestHolderID: an ID written by HolderID parses back to its process, and
// the host and pid stay where readers of older IDs look for them.
func TestHolderID(t *testing.T) {
	for _, h := range []state.Holder{
		{Host: "node1.example.org", PID: 31337, Start: 99, Machine: "0a1b2c3d"},
		{Host: "node1", PID: 7}, // no start time known: the older form
	} {
		id := state.HolderID(h, "feedbeef")
		got, ok := state.ParseHolder(id)
		if !ok || got != h {
			t.Errorf("ParseHolder(HolderID(%+v)) = %+v, %v (ID %q)", h, got, ok, id)
		}
		if host, pid, ok := state.HolderHostPID(id); !ok || host != h.Host || pid != h.PID {
			t.Errorf("HolderHostPID(%q) = %s, %d, %v", id, host, pid, ok)
		}
	}
}
