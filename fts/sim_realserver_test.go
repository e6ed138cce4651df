package fts_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/fts/ftstest"
)

// TestSim_DatabaseDown: while FTS's database is down, Apache answers its own
// 500 HTML page. The client takes it as transient, like a 503: idempotent
// requests are retried through a short outage, and a submission that meets
// it fails with a transient error the agent retries on its next pass.
func TestSim_DatabaseDown(t *testing.T) {
	e := newSim(t, ftstest.Options{QueueDelay: time.Hour})
	c := e.tokenClient(t)
	ctx := context.Background()
	id, err := c.Submit(ctx, simSubmission("db-1", 1))
	if err != nil {
		t.Fatal(err)
	}

	e.srv.FailDatabase(2)
	sts, err := c.Status(ctx, []string{id})
	if err != nil || sts[0].Err != nil {
		t.Fatalf("Status through a short database outage: %v %+v", err, sts)
	}
	if got := e.srv.Requests()["status"]; got != 3 {
		t.Errorf("%d status requests, want 3 (two refused by the outage, then the answer)", got)
	}

	e.srv.SetDatabaseDown(true)
	_, err = c.Submit(ctx, simSubmission("db-2", 1))
	var he *fts.HTTPError
	switch {
	case err == nil:
		t.Fatal("Submit succeeded while the database is down")
	case !fts.IsTransient(err):
		t.Errorf("Submit error %v is not transient", err)
	case !errors.Is(err, fts.ErrServer) || !errors.As(err, &he) || he.StatusCode != http.StatusInternalServerError:
		t.Errorf("Submit error %v, want an HTTP 500 ErrServer", err)
	case !strings.Contains(err.Error(), "Internal Server Error") || strings.Contains(err.Error(), "<"):
		t.Errorf("Submit error %q: want Apache's message as text, without HTML", err)
	}
	sts, err = c.Status(ctx, []string{id})
	if err != nil || sts[0].Err == nil || !fts.IsTransient(sts[0].Err) {
		t.Errorf("Status during a long outage: %v %+v, want a transient per-job error once the retries are spent", err, sts)
	}
	e.srv.SetDatabaseDown(false)
	if _, err := c.Submit(ctx, simSubmission("db-2", 1)); err != nil {
		t.Errorf("Submit after the outage: %v", err)
	}
}

// TestSim_VOMSProxyAdoption: with a VOMS proxy the server's delegation id
// covers the FQANs and the VO is the proxy's; deterministic job ids follow
// from that VO, so a resubmission is adopted, and the delegation lists the
// FQANs.
func TestSim_VOMSProxyAdoption(t *testing.T) {
	e := newSim(t, ftstest.Options{RequireDelegation: true, QueueDelay: time.Hour})
	const fqan = "/cms/Role=NULL/Capability=NULL"
	c := e.proxyClient(t, ftstest.NewProxy(t, e.pki, 12*time.Hour, fqan), nil)
	plain := e.proxyClient(t, nil, nil)
	ctx := context.Background()
	w, err := c.WhoAmI(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pw, err := plain.WhoAmI(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.VOs) != 1 || w.VOs[0] != "cms" || w.DelegationID == pw.DelegationID {
		t.Fatalf("VOMS whoami %+v (plain %+v): want VO cms and a delegation id of its own", w, pw)
	}
	if len(pw.VOs) != 1 || pw.VOs[0] != pw.DelegationID {
		t.Errorf("plain proxy whoami %+v: want the delegation id as its VO", pw)
	}
	if err := c.EnsureDelegation(ctx); err != nil {
		t.Fatal(err)
	}
	id, err := c.Submit(ctx, simSubmission("voms-1", 2))
	if err != nil {
		t.Fatal(err)
	}
	if want := fts.JobIDFromSID("cms", "voms-1"); id != want {
		t.Errorf("job id %s, want %s (from the VOMS VO)", id, want)
	}
	_, err = c.Submit(ctx, simSubmission("voms-1", 2))
	var dup *fts.DuplicateError
	if !errors.As(err, &dup) || dup.JobID != id {
		t.Fatalf("resubmission: %v, want a DuplicateError for %s", err, id)
	}
	// The same user's plain proxy is another identity: it may not read the job.
	sts, err := plain.Status(ctx, []string{id})
	if err != nil || sts[0].Err == nil || !errors.Is(sts[0].Err, fts.ErrForbidden) {
		t.Errorf("another identity's status: %v %+v, want a per-job ErrForbidden", err, sts)
	}
	if sts, err := c.Status(ctx, []string{id}); err != nil || sts[0].Err != nil || len(sts[0].Files) != 2 {
		t.Errorf("owner's status: %v %+v", err, sts)
	}
}
