package holder_test

import (
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/internal/holder"
)

// TestParse: both forms of an owner ID, and strings that are none.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		id   string
		want holder.Holder
		ok   bool
	}{
		{"node1:4242:883211-5f1e9a2c-9f3a2b1c", holder.Holder{Host: "node1", PID: 4242, Start: 883211, Machine: "5f1e9a2c"}, true},
		// an older agent's ID: the process is named by its pid alone
		{"node1:4242:9f3a2b1c", holder.Holder{Host: "node1", PID: 4242}, true},
		// a host name with colons (an IPv6 address)
		{"fe80::1:77:12-ab-cd", holder.Holder{Host: "fe80::1", PID: 77, Start: 12, Machine: "ab"}, true},
		// a start time that is not a number leaves the process unnamed
		{"node1:5:x-ab-cd", holder.Holder{Host: "node1", PID: 5}, true},
		{"node1:0:ab", holder.Holder{}, false},
		{"node1:pid:ab", holder.Holder{}, false},
		{"login@host:cli", holder.Holder{}, false},
		{"agent-a", holder.Holder{}, false},
	} {
		got, ok := holder.Parse(c.id)
		if got != c.want || ok != c.ok {
			t.Errorf("Parse(%q) = %+v, %v; want %+v, %v", c.id, got, ok, c.want, c.ok)
		}
	}
}

// TestHolder_ID: an ID written by ID parses back to its process.
func TestHolder_ID(t *testing.T) {
	for _, h := range []holder.Holder{
		{Host: "node1.example.org", PID: 31337, Start: 99, Machine: "0a1b2c3d"},
		{Host: "node1", PID: 7}, // no start time known: the older form
	} {
		id := h.ID("feedbeef")
		got, ok := holder.Parse(id)
		if !ok || got != h {
			t.Errorf("Parse(ID(%+v)) = %+v, %v (ID %q)", h, got, ok, id)
		}
	}
}

// TestRefusal: the refusal of a run names the holder and says, by what
// this host knows of it and by the lock's freshness, what to do.
func TestRefusal(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fresh, stale := now.Add(50*time.Second).Format(time.RFC3339Nano), now.Add(5*time.Second).Format(time.RFC3339Nano)
	self := holder.NewID()
	other := holder.Holder{Host: "elsewhere.example.org", PID: 9}.ID("x")
	for _, c := range []struct{ id, expire, want string }{
		{self, fresh, "that agent is working on this queue"},
		{self, stale, "it looks dead (not renewed for a while); if it is, `aso unlock alice --force`"},
		{other, fresh, "if that agent is dead, `aso unlock alice --force` releases the lock now"},
	} {
		got := holder.Refusal(c.id, c.expire, "alice", now, time.Minute)
		if !strings.HasPrefix(got, "the run lock of alice is held by "+c.id+" until "+c.expire+": ") || !strings.Contains(got, c.want) {
			t.Errorf("Refusal(%s, %s) = %q, want %q", c.id, c.expire, got, c.want)
		}
	}
}
