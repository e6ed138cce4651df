package fts_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/fts/ftstest"
)

// Tests against the FTS3 simulator, over HTTPS with a proxy chain verified
// by the server, or with a bearer token.

type simEnv struct {
	srv *ftstest.Server
	pki *ftstest.PKI
}

func newSim(t testing.TB, opts ftstest.Options) *simEnv {
	t.Helper()
	pki := ftstest.NewPKI(t)
	opts.TLS = &ftstest.TLSOptions{Cert: pki.Server, ClientCAs: pki.CAPool}
	opts.OAuth2 = true // proxies and bearer tokens, as a server with OAuth2 enabled
	return &simEnv{srv: ftstest.NewServer(t, opts), pki: pki}
}

// writePEM writes a proxy (or any secret) file with mode 0600.
func writePEM(t testing.TB, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x509up_u1000")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// proxyClient returns a client presenting the PKI's 12-hour proxy, or
// proxy when given.
func (e *simEnv) proxyClient(t testing.TB, proxy []byte, edit func(*fts.Config)) *fts.Client {
	t.Helper()
	if proxy == nil {
		proxy = e.pki.ProxyPEM
	}
	return newClient(t, fts.Config{Endpoint: e.srv.URL, ProxyPath: writePEM(t, proxy), CertDir: e.pki.CADir}, edit)
}

func (e *simEnv) tokenClient(t testing.TB) *fts.Client {
	t.Helper()
	token := writeToken(t, "header.eyJpc3MiOiJpIiwic3ViIjoicyJ9.sig", 0o600)
	return newClient(t, fts.Config{Endpoint: e.srv.URL, TokenFile: token, CertDir: e.pki.CADir}, nil)
}

func simSubmission(sid string, n int) fts.Submission {
	s := fts.Submission{Params: fts.SubmitParams{IDGenerator: "deterministic", SID: sid, Retry: -1}}
	if sid == "" {
		s.Params.IDGenerator = ""
	}
	for i := range n {
		name := sid + "-" + string(rune('a'+i))
		s.Files = append(s.Files, fts.SubmitFile{
			Sources:      []string{"davs://se.site-a.example/store/user/alice/" + name},
			Destinations: []string{"davs://se.site-b.example/store/user/alice/" + name},
			Checksum:     "ADLER32:0a1b2c3d", Filesize: 1024,
			Metadata: map[string]string{"transfer_id": "t-" + name},
		})
	}
	return s
}

func TestSim_ProxySubmitStatusAdopt(t *testing.T) {
	e := newSim(t, ftstest.Options{RequireDelegation: true})
	c := e.proxyClient(t, nil, nil)
	ctx := context.Background()
	w, err := c.WhoAmI(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if w.UserDN != e.pki.UserDN || w.Method != "certificate" || w.DelegationID == "" {
		t.Errorf("whoami = %+v, want the proxy's user %s by certificate", w, e.pki.UserDN)
	}
	if err := c.EnsureDelegation(ctx); err != nil {
		t.Fatalf("EnsureDelegation: %v", err)
	}
	if err := c.EnsureDelegation(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.srv.Requests()["delegation"]; got != 1 {
		t.Errorf("%d delegations, want 1 (the second call finds a fresh one)", got)
	}

	id, err := c.Submit(ctx, simSubmission("sid-1", 3))
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	vo, err := c.VO(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := fts.JobIDFromSID(vo, "sid-1"); id != want {
		t.Errorf("job id %s, want JobIDFromSID = %s", id, want)
	}
	// Resubmitting the sid (a crash before the id was recorded) adopts the job.
	_, err = c.Submit(ctx, simSubmission("sid-1", 3))
	var dup *fts.DuplicateError
	if !errors.As(err, &dup) || dup.JobID != id {
		t.Fatalf("second Submit: %v, want a DuplicateError for job %s", err, id)
	}
	if n := len(e.srv.Files()); n != 3 {
		t.Errorf("the server holds %d files, want 3: the duplicate must not add any", n)
	}

	sts, err := c.Status(ctx, []string{id})
	if err != nil || sts[0].Err != nil {
		t.Fatalf("Status: %v %+v", err, sts)
	}
	st := sts[0]
	if !fts.TerminalJobState(st.State) || len(st.Files) != 3 {
		t.Fatalf("job %+v, want terminal with 3 files", st)
	}
	for _, f := range st.Files {
		if !strings.HasPrefix(f.TransferID(), "t-sid-1-") || f.FileID == 0 || !terminalFile(f.State) ||
			f.DestSURL == "" || f.FinishTime.IsZero() {
			t.Errorf("file %+v", f)
		}
	}
}

func TestSim_Token(t *testing.T) {
	e := newSim(t, ftstest.Options{RequireDelegation: true, QueueDelay: time.Hour})
	c := e.tokenClient(t)
	ctx := context.Background()
	if err := c.EnsureDelegation(ctx); err != nil {
		t.Fatal(err)
	}
	id, err := c.Submit(ctx, simSubmission("tok-1", 2))
	if err != nil {
		t.Fatalf("Submit with a token (no delegation needed): %v", err)
	}
	w, err := c.WhoAmI(ctx)
	if err != nil || w.Method != "oauth2" {
		t.Errorf("whoami = %+v, %v; want oauth2", w, err)
	}
	sts, err := c.Status(ctx, []string{id})
	if err != nil || sts[0].Err != nil || sts[0].State != "SUBMITTED" {
		t.Fatalf("Status: %v %+v, want SUBMITTED", err, sts)
	}
	if got := e.srv.Requests()["delegation_info"]; got != 0 {
		t.Errorf("token client asked for delegation info %d times", got)
	}
}

func TestSim_BulkStatusWithLostJob(t *testing.T) {
	e := newSim(t, ftstest.Options{})
	c := e.tokenClient(t)
	ctx := context.Background()
	var ids []string
	for _, sid := range []string{"b1", "b2", "b3"} {
		id, err := c.Submit(ctx, simSubmission(sid, 1))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	sts, err := c.Status(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range sts {
		if st.Err != nil || st.Lost || st.State == "" {
			t.Errorf("job %+v, want a state (200 reply)", st)
		}
	}
	e.srv.LoseJob(ids[1])
	sts, err = c.Status(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if !sts[1].Lost || sts[1].Err != nil {
		t.Errorf("lost job in a 207 reply: %+v, want Lost", sts[1])
	}
	if sts[0].Lost || sts[0].State == "" || sts[2].Lost || sts[2].State == "" {
		t.Errorf("known jobs next to a lost one: %+v %+v", sts[0], sts[2])
	}
	one, err := c.Status(ctx, ids[1:2])
	if err != nil || !one[0].Lost {
		t.Errorf("lost job alone (404 reply): %v %+v, want Lost", err, one)
	}
}

func TestSim_CancelFiles(t *testing.T) {
	e := newSim(t, ftstest.Options{QueueDelay: time.Hour})
	c := e.tokenClient(t)
	ctx := context.Background()
	id, err := c.Submit(ctx, simSubmission("cf", 2))
	if err != nil {
		t.Fatal(err)
	}
	sts, err := c.Status(ctx, []string{id})
	if err != nil || sts[0].Err != nil {
		t.Fatal(err, sts)
	}
	fid := sts[0].Files[0].FileID
	states, err := c.CancelFiles(ctx, id, []int64{fid})
	if err != nil || len(states) != 1 || states[0] != "CANCELED" {
		t.Fatalf("CancelFiles: %q %v", states, err)
	}
	sts, _ = c.Status(ctx, []string{id})
	if got := sts[0].Files[0].State; got != "CANCELED" {
		t.Errorf("cancelled file is %s", got)
	}
	if got := sts[0].Files[1].State; terminalFile(got) {
		t.Errorf("the other file is %s, want still queued", got)
	}
}

func TestSim_Delegation(t *testing.T) {
	e := newSim(t, ftstest.Options{RequireDelegation: true})
	ctx := context.Background()

	// 419 on submit: delegate, then the submission goes through.
	c := e.proxyClient(t, nil, nil)
	if _, err := c.Submit(ctx, simSubmission("d1", 1)); err != nil {
		t.Fatalf("Submit without a delegation: %v", err)
	}
	req := e.srv.Requests()
	if req["submit"] != 2 || req["delegation"] != 1 {
		t.Errorf("submits %d, delegations %d; want 2 and 1", req["submit"], req["delegation"])
	}
	// The server's delegation expires: 419 again, delegated again.
	e.srv.ExpireDelegation()
	if _, err := c.Submit(ctx, simSubmission("d2", 1)); err != nil {
		t.Fatalf("Submit after the delegation expired: %v", err)
	}
	if got := e.srv.Requests()["delegation"]; got != 2 {
		t.Errorf("%d delegations, want 2", got)
	}
}

func TestSim_ReDelegatesWhenShort(t *testing.T) {
	e := newSim(t, ftstest.Options{RequireDelegation: true})
	ctx := context.Background()
	// A 3-hour proxy leaves the server a delegation of under 3 hours.
	short := e.proxyClient(t, ftstest.NewProxy(t, e.pki, 3*time.Hour), nil)
	if err := short.EnsureDelegation(ctx); err != nil {
		t.Fatal(err)
	}
	// That is all this proxy can give: no new delegation each time.
	if err := short.EnsureDelegation(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.srv.Requests()["delegation"]; got != 1 {
		t.Fatalf("%d delegations with a 3-hour proxy, want 1", got)
	}
	// A renewed 48-hour proxy: the 3 hours left are under MinDelegation.
	long := e.proxyClient(t, ftstest.NewProxy(t, e.pki, 48*time.Hour), nil)
	if err := long.EnsureDelegation(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.srv.Requests()["delegation"]; got != 2 {
		t.Errorf("%d delegations after renewing the proxy, want 2", got)
	}
}

func TestSim_RefusedCredentials(t *testing.T) {
	e := newSim(t, ftstest.Options{})
	expired := writePEM(t, ftstest.NewProxy(t, e.pki, -time.Minute))
	if _, err := fts.New(fts.Config{Endpoint: e.srv.URL, ProxyPath: expired, CertDir: e.pki.CADir}); err == nil ||
		!strings.Contains(err.Error(), "expired at") {
		t.Errorf("New with an expired proxy: %v", err)
	}
	open := writePEM(t, e.pki.ProxyPEM)
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := fts.New(fts.Config{Endpoint: e.srv.URL, ProxyPath: open, CertDir: e.pki.CADir}); err == nil ||
		!strings.Contains(err.Error(), "chmod 600 "+open) {
		t.Errorf("New with a world-readable proxy: %v", err)
	}
	if n := len(e.srv.Requests()); n != 0 {
		t.Errorf("the server saw requests: %v", e.srv.Requests())
	}
	// A proxy of a user from another CA is refused by the server, for good.
	other := ftstest.NewPKI(t)
	c := e.proxyClient(t, other.ProxyPEM, nil)
	if _, err := c.WhoAmI(context.Background()); err == nil || fts.IsTransient(err) ||
		!strings.Contains(err.Error(), "the server refused the TLS handshake") {
		t.Errorf("WhoAmI with an untrusted proxy: %v, want a permanent handshake refusal", err)
	}
}

func TestSim_HangAndBurst(t *testing.T) {
	e := newSim(t, ftstest.Options{})
	c := e.tokenClient(t)
	ctx := context.Background()
	id, err := c.Submit(ctx, simSubmission("h1", 1))
	if err != nil {
		t.Fatal(err)
	}

	e.srv.Fail503(3)
	sts, err := c.Status(ctx, []string{id})
	if err != nil || sts[0].Err != nil {
		t.Fatalf("Status through a 503 burst: %v %+v", err, sts)
	}

	e.srv.SetHang(true)
	defer e.srv.SetHang(false)
	hung := e.proxyClient(t, nil, func(cfg *fts.Config) { cfg.Timeout = 200 * time.Millisecond; cfg.MaxElapsed = time.Minute })
	start := time.Now()
	sts, err = hung.Status(ctx, []string{id})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(sts[0].Err, fts.ErrTimeout) || sts[0].Lost {
		t.Errorf("status on a hung server: %+v, want ErrTimeout", sts[0])
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v with Timeout 200ms", d)
	}
}

// terminalFile reports whether a file in state s has ended: FINISHED,
// FAILED, CANCELED, or NOT_USED (a replica or hop that was not used).
func terminalFile(s string) bool {
	switch s {
	case "FINISHED", "FAILED", "CANCELED", "NOT_USED":
		return true
	}
	return false
}
