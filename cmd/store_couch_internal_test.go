package cmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/couch/couchtest"
)

// No command of this file's own opens a store, so the wiring of the
// couchdb, http and https schemes is tested through Globals directly.
func TestOpenStore_CouchDB(t *testing.T) {
	ctx := context.Background()
	base := couchtest.Server(t)
	name := couchtest.NewName()
	couchtest.DropLater(t, base+name)
	if err := couch.Init(ctx, couch.Options{URL: base + name}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"ASO_COUCHDB_TIMEOUT": "5s"}
	for _, u := range []string{"couchdb://" + strings.TrimPrefix(base, "http://") + name, base + name} {
		g := &Globals{StateURL: u, LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
		s, err := g.OpenStore(ctx, state.Config{Agent: state.Agent{User: "alice", Owner: "h:1:x"}})
		if err != nil {
			t.Fatalf("OpenStore(%s): %v", u, err)
		}
		res, err := s.Enqueue(ctx, []state.Request{{User: "alice", Source: "A", Destination: "B", SourceLFN: "/a", DestinationLFN: "/b"}})
		if err != nil || res[0].Err != nil {
			t.Fatalf("Enqueue through %s: %v %+v", u, err, res)
		}
		_ = s.Close()
	}
	g := &Globals{StateURL: base + name, LookupEnv: func(k string) (string, bool) { return "soon", k == "ASO_COUCHDB_TIMEOUT" }}
	if _, err := g.OpenStore(ctx, state.Config{}); ExitCode(err) != ExitUsage {
		t.Fatalf("bad timeout: %v, want a usage error", err)
	}
}

func TestCouchOptions(t *testing.T) {
	dir := t.TempDir()
	jsonCreds := filepath.Join(dir, "creds.json")
	if err := os.WriteFile(jsonCreds, []byte(`{"username":"svc","password":"pw1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "aso.yaml")
	if err := os.WriteFile(cfg, []byte("couchdb-ca-file: /etc/ca.pem\ncouchdb-timeout: 7s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		url      string
		env      map[string]string
		user, pw string
		ca       string
		timeout  time.Duration
	}{
		{"json credentials file", "http://h:5984/db", map[string]string{"ASO_COUCHDB_CREDENTIALS": jsonCreds}, "svc", "pw1", "", 30 * time.Second},
		{"environment", "http://h:5984/db", map[string]string{"ASO_COUCHDB_USER": "u", "ASO_COUCHDB_PASSWORD": "p"}, "u", "p", "", 30 * time.Second},
		{"URL wins", "http://x:y@h:5984/db", map[string]string{"ASO_COUCHDB_USER": "u", "ASO_COUCHDB_PASSWORD": "p"}, "", "", "", 30 * time.Second},
		{"config file", "http://h:5984/db", map[string]string{"ASO_CONFIG": cfg}, "", "", "/etc/ca.pem", 7 * time.Second},
		{"environment over config file", "http://h:5984/db", map[string]string{"ASO_CONFIG": cfg, "ASO_COUCHDB_TIMEOUT": "9s"}, "", "", "/etc/ca.pem", 9 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &Globals{LookupEnv: func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }}
			o, err := couchOptions(g, tc.url)
			if err != nil {
				t.Fatal(err)
			}
			if o.Username != tc.user || o.Password != tc.pw || o.CAFile != tc.ca || o.Timeout != tc.timeout {
				t.Fatalf("options %+v, want user %q password %q ca %q timeout %v", o, tc.user, tc.pw, tc.ca, tc.timeout)
			}
		})
	}
}
