package fleet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/asyncstageout/aso/internal/holder"
	"github.com/asyncstageout/aso/state"
)

func TestExpandUser(t *testing.T) {
	for _, c := range []struct{ user, want string }{
		{"alice", "/etc/aso/proxies/alice.pem"},
		{"a.b-c_d@cern.ch", "/etc/aso/proxies/a.b-c_d@cern.ch.pem"},
	} {
		got, err := expandUser("/etc/aso/proxies/{user}.pem", c.user)
		if err != nil || got != c.want {
			t.Errorf("expandUser(%q) = %q, %v; want %q", c.user, got, err, c.want)
		}
	}
	// names that would reach another file are refused, never expanded
	for _, u := range []string{"", ".", "..", "../root", "a/b", "-rf", "a\x00b"} {
		if got, err := expandUser("/etc/aso/proxies/{user}.pem", u); err == nil {
			t.Errorf("expandUser(%q) = %q, want an error", u, got)
		}
	}
}

// TestLogRelay: an agent's JSON lines keep their level, message, time and
// fields and gain the user; other lines are logged at info with the user,
// but for the agent's final "aso: ..." error (with the lines after it),
// which is kept as the reason of its end; a line split over writes is
// reassembled.
func TestLogRelay(t *testing.T) {
	var out bytes.Buffer
	log := logrus.New()
	log.SetOutput(&out)
	log.SetFormatter(&logrus.JSONFormatter{})
	log.SetLevel(logrus.DebugLevel)
	r := &logRelay{log: log, user: "alice"}
	line := `{"level":"warning","msg":"lost ownership","time":"2026-01-02T03:04:05Z","fts_job":"j1","error":"run lock lost"}` + "\n"
	for _, part := range []string{line[:20], line[20:], "queue of alice: new 0\n", "aso: this machine lacks what run needs:\n", "  - no gfal-rm"} {
		if _, err := r.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	r.flush()
	var got []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("relayed line %q: %v", l, err)
		}
		got = append(got, m)
	}
	if len(got) != 2 {
		t.Fatalf("%d lines relayed, want 2:\n%s", len(got), out.String())
	}
	if why := r.lastError(); why != "this machine lacks what run needs: - no gfal-rm" {
		t.Errorf("the agent's last error: %q", why)
	}
	first := got[0]
	for k, want := range map[string]any{"level": "warning", "msg": "lost ownership", "time": "2026-01-02T03:04:05Z",
		"fts_job": "j1", "error": "run lock lost", "user": "alice"} {
		if first[k] != want {
			t.Errorf("relayed JSON line: %s = %v, want %v (%v)", k, first[k], want, first)
		}
	}
	for i, msg := range []string{"queue of alice: new 0"} {
		if m := got[i+1]; m["msg"] != msg || m["level"] != "info" || m["user"] != "alice" {
			t.Errorf("relayed text line %d: %v, want msg %q at info with user alice", i, m, msg)
		}
	}
}

// TestAgentArgs_Templates: every per-user file flag of the fleet reaches
// each agent with {user} replaced, after the shared arguments so it wins.
func TestAgentArgs_Templates(t *testing.T) {
	cfg := &Config{Args: []string{"run", "--interval", "1s"}, PerUser: []Flag{{"proxy", "/p/{user}.pem"}, {"token-file", "/fixed/token"},
		{"metrics-file", "/m/aso_{user}.prom"}, {"storage-token-file", "/s/{user}.jwt"}, {"report", "/r/{user}.json"}}}
	a := &slots{cfg: cfg}
	args, err := a.args("alice", handoff{})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(args, " ")
	for _, want := range []string{"--proxy /p/alice.pem", "--metrics-file /m/aso_alice.prom",
		"--storage-token-file /s/alice.jwt", "--report /r/alice.json", "--user alice"} {
		if !strings.Contains(got, want) {
			t.Errorf("agent args %q lack %q", got, want)
		}
	}
	if strings.Contains(got, "/fixed/token") {
		t.Errorf("agent args %q repeat a flag without {user}: it reaches the agent through the shared arguments", got)
	}
	if _, err := a.args("../root", handoff{}); err == nil {
		t.Errorf("a user name that leaves the directory was put in a file name")
	}
}

// TestFleetSpread: users due within one discovery interval come before
// later ones, in every fleet, once their grain holds enough users (see
// grains); a user due the widest grain's span after the others comes
// after them however few they are, so that no user waits behind later
// ones for longer. Within a grain, fleets that do not know each other
// begin with different users; two fleets that know each other share the
// users out, each taking its own first, then the other's in the reverse
// of the other's order: one's order is the other's reversed, so they
// meet head-on, once.
func TestFleetSpread(t *testing.T) {
	const interval, slots = 5 * time.Second, 8
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var due []state.UserDue
	for i := range 2 * grainSlots * slots {
		due = append(due, state.UserDue{User: fmt.Sprintf("u%04d", i), Since: t0.Add(time.Duration(i) * 10 * time.Millisecond)})
	}
	ha, hb := holder.Holder{Host: "hosta", PID: 100}, holder.Holder{Host: "hostb", PID: 200}
	order := func(due []state.UserDue, late state.UserDue, self holder.Holder, others ...holder.Holder) []string {
		f := &Fleet{cfg: Config{DiscoverInterval: interval, MaxAgents: slots}, place: fleetPlace(self), backlog: backlog{fleets: map[uint64]bool{}}}
		for _, h := range others {
			f.backlog.fleets[fleetPlace(h)] = true
		}
		d := append([]state.UserDue{late}, due...)
		f.spread(d)
		var names []string
		for _, u := range d {
			names = append(names, u.User)
		}
		if names[len(names)-1] != late.User {
			t.Fatalf("order %v: the user due %s after the others is not last", names, late.Since.Sub(t0))
		}
		return names[:len(due)]
	}
	late := state.UserDue{User: "late", Since: t0.Add(time.Minute)}
	a, b := order(due, late, ha), order(due, late, hb)
	if a[0] == b[0] {
		t.Errorf("both fleets begin with %s", a[0])
	}
	a, b = order(due, late, ha, hb), order(due, late, hb, ha)
	rev := slices.Clone(a)
	slices.Reverse(rev)
	if !slices.Equal(b, rev) {
		t.Errorf("two fleets that know each other do not work through their users from opposite ends:\n%v\n%v", a, b)
	}
	// a thin grain widens, but not past its span
	late = state.UserDue{User: "late", Since: t0.Add(grainSpan * interval)}
	for _, hs := range [][]holder.Holder{{ha}, {hb}, {ha, hb}, {hb, ha}} {
		order(due[:10], late, hs[0], hs[1:]...)
	}
}

// TestFleetSpread_ThinGrains: where users come slowly (here a user's
// oldest due transfer every 0.8 s, as a real server's enqueue spread
// them), four fleets of 8 slots that do not know each other yet still
// begin with different users: of their 32 first picks, few are taken by
// more than one (each such pick is a lost race for the run lock).
// Before, a grain was one discovery interval (5 s: 7 users for 32 slots),
// and the four fleets took the same users: 24 of the 32 picks lost.
func TestFleetSpread_ThinGrains(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const fleets, slots = 4, 8
	for _, users := range []int{200, 1000} {
		var due []state.UserDue
		for i := range users {
			due = append(due, state.UserDue{User: fmt.Sprintf("u%04d", i), Since: t0.Add(time.Duration(i) * 800 * time.Millisecond)})
		}
		picked := map[string]int{}
		for i := range fleets {
			self := holder.Holder{Host: fmt.Sprintf("host%d", i), PID: 100 + i}
			f := &Fleet{cfg: Config{DiscoverInterval: 5 * time.Second, MaxAgents: slots}, place: fleetPlace(self), backlog: backlog{fleets: map[uint64]bool{}}}
			d := slices.Clone(due)
			f.spread(d)
			for _, u := range d[:slots] {
				picked[u.User]++
			}
		}
		if lost := fleets*slots - len(picked); lost > fleets*slots/10 {
			t.Errorf("%d users: %d of the %d first picks of %d fleets that do not know each other were taken by another fleet too: %v", users, lost, fleets*slots, fleets, picked)
		} else {
			t.Logf("%d users: %d of %d first picks lost", users, lost, fleets*slots)
		}
	}
}
