package chaos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// faults counts the faults a scenario injected, by kind.
type faults struct {
	mu     sync.Mutex
	counts map[string]int
}

func (f *faults) add(kind string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.counts == nil {
		f.counts = map[string]int{}
	}
	f.counts[kind] += n
}

// String lists the counts, like "reset_peer=4 sigkill=3".
func (f *faults) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for k, v := range f.counts {
		out = append(out, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, " ")
}

// total is the number of faults injected.
func (f *faults) total() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, v := range f.counts {
		n += v
	}
	return n
}

// link is a toxiproxy proxy on loopback between the agent and one server
// (FTS or CouchDB), run inside the test process.
type link struct {
	t      testing.TB
	name   string
	p      *toxiproxy.Proxy
	faults *faults
	mu     sync.Mutex
	seq    int
}

// newLink starts a proxy to upstream (host:port) on a free loopback port and
// stops it when t ends.
func newLink(t testing.TB, f *faults, name, upstream string) *link {
	t.Helper()
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatalf("chaos: start proxy %s to %s: %v", name, upstream, err)
	}
	t.Cleanup(p.Stop)
	return &link{t: t, name: name, p: p, faults: f}
}

// via returns raw (an http(s) URL) with its host replaced by the proxy's.
func (l *link) via(raw string) string {
	l.t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		l.t.Fatalf("chaos: %s: %v", raw, err)
	}
	u.Host = l.p.Listen
	return u.String()
}

// toxic adds a toxic of kind on stream ("upstream" or "downstream") with
// attrs and returns a function that removes it. The fault is counted under
// the link's name and kind.
func (l *link) toxic(kind, stream string, attrs map[string]any) func() {
	l.t.Helper()
	l.mu.Lock()
	l.seq++
	name := fmt.Sprintf("%s_%s_%d", kind, stream, l.seq)
	l.mu.Unlock()
	body, _ := json.Marshal(map[string]any{"name": name, "type": kind, "stream": stream, "toxicity": 1.0, "attributes": attrs})
	if _, err := l.p.Toxics.AddToxicJson(strings.NewReader(string(body))); err != nil {
		l.t.Fatalf("chaos: add %s to %s: %v", kind, l.name, err)
	}
	l.faults.add(l.name+"."+kind, 1)
	return func() { _ = l.p.Toxics.RemoveToxic(context.Background(), name) }
}

// down closes the proxy's port and every open connection through it; up
// opens it again on the same port.
func (l *link) down() {
	l.p.Stop()
	l.faults.add(l.name+".down", 1)
}

func (l *link) up() {
	l.t.Helper()
	if err := l.p.Start(); err != nil {
		l.t.Fatalf("chaos: restart proxy %s on %s: %v", l.name, l.p.Listen, err)
	}
}
