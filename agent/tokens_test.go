package agent_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/tokens"
)

// tokenWorld makes both sites of w take storage tokens (token base: the
// site's directory) and returns a token command that answers each scope
// with its own token, and the tokens by scope.
func tokenWorld(t *testing.T, w *world, exp time.Time) ([]string, map[string]string) {
	t.Helper()
	sites := fmt.Sprintf("%s:\n  protocol: file\n  tokens: true\n  token-base: %s\n  rules:\n    - path-match: /store/(.*)\n      result: file://%s/store/$1\n"+
		"%s:\n  protocol: file\n  tokens: true\n  token-base: %s\n  rules:\n    - path-match: /store/(.*)\n      result: file://%s/store/$1\n",
		srcSite, w.src, w.src, dstSite, w.dst, w.dst)
	w.useSites("token-sites.yaml", sites)
	dir := filepath.Join(w.dir, "tokens")
	must(t, os.MkdirAll(dir, 0o700))
	byScope := map[string]string{}
	for _, scope := range []string{"storage.read:/store/temp/user/" + testUser, "storage.modify:/store/user/" + testUser} {
		tok := ftstest.JWT(t, map[string]any{"iss": "https://cms-auth.example.org/", "sub": testUser, "exp": exp.Unix(), "scope": scope})
		byScope[scope] = tok
		must(t, os.WriteFile(filepath.Join(dir, strings.NewReplacer(":", "_", "/", "_").Replace(scope)), []byte(tok+"\n"), 0o600))
	}
	cmd := filepath.Join(w.dir, "get-token")
	must(t, os.WriteFile(cmd, []byte("#!/bin/sh\nread s\ncat \""+dir+"/$(echo \"$s\" | tr ':/' '__')\"\n"), 0o700))
	return []string{cmd}, byScope
}

// TestAgent_StorageTokens: every file to and from token sites carries the
// read token of its source directory and the modify token of its
// destination directory, the job asks for unmanaged tokens, each file has
// its scitag (the transfer's activity, else the run's), and no token is
// logged.
func TestAgent_StorageTokens(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	var logs bytes.Buffer
	w.log.SetOutput(&logs)
	w.log.SetLevel(5) // debug
	cmd, byScope := tokenWorld(t, w, epoch.Add(24*time.Hour))
	reqs := make([]state.Request, 20)
	for i := range reqs {
		reqs[i], _ = w.request("tok", i, true)
		if i%2 == 1 {
			reqs[i].Activity = 7
		}
	}
	w.enqueue(reqs)
	src := &tokens.Source{Command: cmd, Now: w.clk.Now}
	cfg := w.config("agent-1")
	cfg.StorageTokens, cfg.UnmanagedTokens, cfg.ScitagActivity = src, true, 2
	must(t, w.agent(cfg, nil).Run(context.Background()))
	files := w.sim.Files()
	if len(files) != len(reqs) {
		t.Fatalf("%d files submitted, want %d", len(files), len(reqs))
	}
	act := map[string]int{}
	for _, r := range reqs {
		act[r.ID()] = r.Activity
	}
	for _, f := range files {
		if f.SourceToken == nil || f.DestinationToken == nil {
			t.Fatalf("file %d carried no token pair: %+v", f.FileID, f)
		}
		if got, want := f.SourceToken.Scope, "storage.read:/store/temp/user/"+testUser; got != want {
			t.Errorf("source token scope %q, want %q", got, want)
		}
		if got, want := f.DestinationToken.Scope, "storage.modify:/store/user/"+testUser; got != want {
			t.Errorf("destination token scope %q, want %q", got, want)
		}
		if f.SourceToken.Subject != testUser || !f.UnmanagedTokens {
			t.Errorf("token subject %q, unmanaged %v", f.SourceToken.Subject, f.UnmanagedTokens)
		}
		want := int64(agent.Scitag(2))
		if act[transferIDOf(f)] == 7 {
			want = 3<<6 | 7
		}
		if f.Scitag == nil || *f.Scitag != want {
			t.Errorf("file of %s: scitag %v, want %d", transferIDOf(f), f.Scitag, want)
		}
	}
	for _, r := range reqs {
		if got := w.get(r.ID()); got.State != state.StateDone {
			t.Errorf("%s: %s %q", r.ID(), got.State, got.Reason)
		}
	}
	if src.Fetches != 2 {
		t.Errorf("%d tokens fetched for 2 scopes, want 2 (cached)", src.Fetches)
	}
	for _, tok := range byScope {
		if strings.Contains(logs.String(), tok) {
			t.Fatal("a storage token appears in the log")
		}
	}
}

// TestAgent_StorageTokenMissing: when no token can be had, nothing is
// submitted, the transfers go back to new without penalty, and the run
// fails saying why, without the token.
func TestAgent_StorageTokenMissing(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	cmd, byScope := tokenWorld(t, w, epoch.Add(10*time.Minute)) // expires too soon
	reqs := w.goodRequests(5)
	cfg := w.config("agent-1")
	cfg.StorageTokens = &tokens.Source{Command: cmd, Now: w.clk.Now}
	err := w.agent(cfg, nil).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "less than the minimum lifetime") {
		t.Fatalf("Run: %v, want the token's short lifetime", err)
	}
	for _, tok := range byScope {
		if strings.Contains(err.Error(), tok) {
			t.Fatal("the error shows a token")
		}
	}
	if n := len(w.sim.Files()); n != 0 {
		t.Fatalf("%d files submitted without tokens", n)
	}
	for _, r := range reqs {
		if got := w.get(r.ID()); got.State != state.StateNew || got.Attempts != 0 || got.SubmitSID != "" {
			t.Errorf("%s: %s attempts %d sid %q, want new, no penalty, no sid", r.ID(), got.State, got.Attempts, got.SubmitSID)
		}
	}
}

// TestAgent_StorageTokenRefresh: a later run, when the cached tokens have
// less than the minimum lifetime left, sends fresh ones (the command is run
// again), and files submitted before keep the tokens they had.
func TestAgent_StorageTokenRefresh(t *testing.T) {
	w := newWorld(t, ftstest.Options{})
	cmd, first := tokenWorld(t, w, epoch.Add(3*time.Hour))
	src := &tokens.Source{Command: cmd, Now: w.clk.Now, MinLifetime: time.Hour}
	cfg := w.config("agent-1")
	cfg.StorageTokens = src
	for i := 0; i < 4; i++ {
		r, _ := w.request("early", i, true)
		w.enqueue([]state.Request{r})
	}
	must(t, w.agent(cfg, nil).Run(context.Background()))
	ids := map[string]bool{}
	for _, f := range w.sim.Files() {
		ids[f.SourceToken.ID] = true
	}
	// 2h later the tokens have 1h left minus the run's time: below the minimum
	w.clk.Advance(2 * time.Hour)
	_, second := tokenWorld(t, w, epoch.Add(12*time.Hour))
	for i := 0; i < 4; i++ {
		r, _ := w.request("late", i, true)
		w.enqueue([]state.Request{r})
	}
	must(t, w.agent(cfg, nil).Run(context.Background()))
	if src.Fetches != 4 {
		t.Errorf("%d tokens fetched, want 2 then 2 fresh ones", src.Fetches)
	}
	late := 0
	for _, f := range w.sim.Files() {
		if strings.Contains(f.Source, "/late_") {
			late++
			if ids[f.SourceToken.ID] || f.SourceToken.Expires != epoch.Add(12*time.Hour).Unix() {
				t.Errorf("a late file carried the old token (exp %d)", f.SourceToken.Expires)
			}
		} else if !ids[f.SourceToken.ID] {
			t.Errorf("an early file's token changed")
		}
	}
	if late != 4 || first[scopeRead] == second[scopeRead] {
		t.Fatalf("%d late files; tokens differ: %v", late, first[scopeRead] != second[scopeRead])
	}
}

const scopeRead = "storage.read:/store/temp/user/" + testUser
