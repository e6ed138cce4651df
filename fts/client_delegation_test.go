package fts_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts"
)

const dlgID = "9e7a1c0d2b3f4a5e"

// delegationServer plays the FTS delegation endpoints on a fakeFTS and
// checks every PUT proxy the way FTS3 does (and as RFC 3820 asks).
type delegationServer struct {
	t   testing.TB
	key *rsa.PrivateKey

	mu      sync.Mutex
	none    string    // the reply without a delegation: "null", or "[]" (FTS 3.12+ clients)
	end     time.Time // termination of the stored delegation; zero = none
	puts    int
	last    *x509.Certificate
	putErrs []error
}

func newDelegationServer(t testing.TB, f *fakeFTS) *delegationServer {
	d := &delegationServer{t: t, key: serverKey(), none: "null"}
	f.reply("GET /whoami", 200, shared(t, "whoami.json"))
	f.handle("GET /delegation/"+dlgID, func(w http.ResponseWriter, _ *http.Request) {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.end.IsZero() {
			_, _ = w.Write([]byte(d.none))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"termination_time": d.end.UTC().Format("2006-01-02T15:04:05"), "voms_attrs": []string{"/cms/Role=NULL/Capability=NULL"}})
	})
	f.handle("GET /delegation/"+dlgID+"/request", func(w http.ResponseWriter, _ *http.Request) {
		der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{Organization: []string{"Dummy"}}}, d.key)
		if err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("X-Delegation-ID", dlgID)
		_ = pem.Encode(w, &pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	})
	f.handle("PUT /delegation/"+dlgID+"/credential", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		proxy, err := d.check(body)
		d.mu.Lock()
		defer d.mu.Unlock()
		d.puts++
		if err != nil {
			d.putErrs = append(d.putErrs, err)
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"status": "400 Bad Request", "message": "Could not process the proxy: " + err.Error()})
			return
		}
		d.end, d.last = proxy.NotAfter, proxy
		w.WriteHeader(http.StatusCreated)
	})
	return d
}

// check validates a delegated proxy: at least two certificates, the first
// for the server's key, signed by the second, whose subject it extends by
// one CN, with a critical RFC 3820 proxyCertInfo of language inheritAll.
func (d *delegationServer) check(body []byte) (*x509.Certificate, error) {
	var chain []*x509.Certificate
	for rest := body; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		chain = append(chain, c)
	}
	if len(chain) < 2 {
		return nil, errors.New("Malformed proxy")
	}
	proxy, issuer := chain[0], chain[1]
	if !d.key.PublicKey.Equal(proxy.PublicKey) {
		return nil, errors.New("The proxy does not match the stored associated private key")
	}
	if err := issuer.CheckSignature(proxy.SignatureAlgorithm, proxy.RawTBSCertificate, proxy.Signature); err != nil {
		return nil, fmt.Errorf("Failed to verify the proxy: %v", err)
	}
	var subj, iss pkix.RDNSequence
	if _, err := asn1.Unmarshal(proxy.RawSubject, &subj); err != nil {
		return nil, err
	}
	if _, err := asn1.Unmarshal(issuer.RawSubject, &iss); err != nil {
		return nil, err
	}
	if !bytes.Equal(proxy.RawIssuer, issuer.RawSubject) || len(subj) != len(iss)+1 ||
		fmt.Sprint(subj[:len(iss)]) != fmt.Sprint(iss) || !subj[len(iss)][0].Type.Equal(asn1.ObjectIdentifier{2, 5, 4, 3}) {
		return nil, fmt.Errorf("The subject and the issuer of the proxy do not match: %s != %s", proxy.Subject, issuer.Subject)
	}
	if fmt.Sprint(subj[len(iss)][0].Value) != proxy.SerialNumber.String() {
		return nil, fmt.Errorf("proxy CN %v is not its serial number %s", subj[len(iss)][0].Value, proxy.SerialNumber)
	}
	for _, e := range proxy.Extensions {
		if !e.Id.Equal(oidProxyCertInfo) {
			continue
		}
		var pci struct {
			Policy struct{ Lang asn1.ObjectIdentifier }
		}
		if _, err := asn1.Unmarshal(e.Value, &pci); err != nil || !e.Critical || !pci.Policy.Lang.Equal(oidInheritAll) {
			return nil, fmt.Errorf("proxyCertInfo critical=%v %v %v", e.Critical, pci, err)
		}
		return proxy, nil
	}
	return nil, errors.New("no RFC 3820 proxyCertInfo extension")
}

func (d *delegationServer) state() (puts int, end time.Time, errs []error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.puts, d.end, append([]error(nil), d.putErrs...)
}

func (d *delegationServer) setEnd(end time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.end = end
}

func TestEnsureDelegation(t *testing.T) {
	now := time.Now()
	for name, tc := range map[string]struct {
		server     time.Time     // stored delegation's end (zero: none)
		proxyLife  time.Duration // of the local proxy
		wantPuts   int
		wantEndGap time.Duration // new delegation's end before the proxy's (when delegated)
	}{
		"none":              {proxyLife: 12 * time.Hour, wantPuts: 1, wantEndGap: time.Minute},
		"expired":           {server: now.Add(-time.Hour), proxyLife: 12 * time.Hour, wantPuts: 1, wantEndGap: time.Minute},
		"fresh":             {server: now.Add(20 * time.Hour), proxyLife: 48 * time.Hour},
		"short":             {server: now.Add(2 * time.Hour), proxyLife: 48 * time.Hour, wantPuts: 1, wantEndGap: 24 * time.Hour},
		"short proxy too":   {server: now.Add(2 * time.Hour), proxyLife: 2*time.Hour + 30*time.Second},
		"short, proxy able": {server: now.Add(2 * time.Hour), proxyLife: 6 * time.Hour, wantPuts: 1, wantEndGap: time.Minute},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t)
			d := newDelegationServer(t, f)
			d.setEnd(tc.server)
			proxy, proxyCert := writeProxy(t, proxyOpts{life: tc.proxyLife})
			c := f.proxyClient(t, func(cfg *fts.Config) { cfg.ProxyPath = proxy })
			if err := c.EnsureDelegation(context.Background()); err != nil {
				t.Fatalf("EnsureDelegation: %v", err)
			}
			puts, end, errs := d.state()
			if len(errs) > 0 {
				t.Fatalf("server refused the delegated proxy: %v", errs)
			}
			if puts != tc.wantPuts {
				t.Fatalf("%d delegations, want %d", puts, tc.wantPuts)
			}
			if puts == 0 {
				return
			}
			if gap := proxyCert.NotAfter.Sub(end); gap < tc.wantEndGap-2*time.Second || gap > tc.wantEndGap+2*time.Second {
				t.Errorf("delegation ends %v before the proxy, want %v", gap, tc.wantEndGap)
			}
			// Now the server holds a good delegation: nothing more to do.
			if err := c.EnsureDelegation(context.Background()); err != nil {
				t.Fatal(err)
			}
			if puts, _, _ := d.state(); puts != tc.wantPuts {
				t.Errorf("delegated again although the server's delegation is as long as it can be")
			}
		})
	}
}

// TestEnsureDelegation_NoneAsNullOrList: a server without the client's
// delegation answers null, or [] when the User-Agent looks like an FTS
// 3.12+ client; both mean "none", so the client delegates.
func TestEnsureDelegation_NoneAsNullOrList(t *testing.T) {
	for _, none := range []string{"null", "[]", " [ ]\n"} {
		t.Run(none, func(t *testing.T) {
			f := newFake(t)
			d := newDelegationServer(t, f)
			d.mu.Lock()
			d.none = none
			d.mu.Unlock()
			proxy, _ := writeProxy(t, proxyOpts{life: 12 * time.Hour})
			c := f.proxyClient(t, func(cfg *fts.Config) { cfg.ProxyPath = proxy })
			if err := c.EnsureDelegation(context.Background()); err != nil {
				t.Fatalf("EnsureDelegation with %q: %v", none, err)
			}
			if puts, _, errs := d.state(); puts != 1 || len(errs) > 0 {
				t.Fatalf("%d delegations (errors %v), want 1", puts, errs)
			}
		})
	}
}

func TestSubmit_DelegationStillRefused(t *testing.T) {
	f := newFake(t)
	d := newDelegationServer(t, f)
	f.reply("POST /jobs", 419, shared(t, "delegation_419.json"))
	c := f.proxyClient(t, nil)
	_, err := c.Submit(context.Background(), testSubmission("sid-4"))
	if !errors.Is(err, fts.ErrNeedDelegation) || fts.IsTransient(err) {
		t.Fatalf("Submit: %v, want ErrNeedDelegation", err)
	}
	if n := len(f.requests("POST /jobs")); n != 4 {
		t.Errorf("%d submissions, want 4 (a retry after each of three delegations)", n)
	}
	if puts, _, _ := d.state(); puts != 3 {
		t.Errorf("%d delegations, want 3", puts)
	}
}

// TestSubmit_NeedsDelegation: a submission answered 419 delegates and is
// sent again; when the server's copy expires again before the retry
// arrives (419 twice), it delegates again and goes through.
func TestSubmit_NeedsDelegation(t *testing.T) {
	for _, expiries := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d refusals", expiries), func(t *testing.T) {
			f := newFake(t)
			d := newDelegationServer(t, f)
			f.handle("POST /jobs", func(w http.ResponseWriter, _ *http.Request) {
				if puts, _, _ := d.state(); puts < expiries {
					w.WriteHeader(419)
					_, _ = w.Write(shared(t, "delegation_419.json"))
					return
				}
				_, _ = w.Write(shared(t, "submit.json"))
			})
			c := f.proxyClient(t, nil)
			id, err := c.Submit(context.Background(), testSubmission("sid-3"))
			if err != nil {
				t.Fatalf("Submit: %v", err)
			}
			if id != jobShared {
				t.Errorf("job id %q", id)
			}
			if n := len(f.requests("POST /jobs")); n != expiries+1 {
				t.Errorf("%d submissions, want %d (before and after each delegation)", n, expiries+1)
			}
			if puts, _, errs := d.state(); puts != expiries || len(errs) != 0 {
				t.Errorf("%d delegations (errors %v), want %d", puts, errs, expiries)
			}
		})
	}
}

func TestEnsureDelegation_Refused(t *testing.T) {
	f := newFake(t)
	newDelegationServer(t, f)
	f.reply("PUT /delegation/"+dlgID+"/credential", http.StatusBadRequest,
		[]byte(`{"status": "400 Bad Request", "message": "Could not process the proxy: Malformed proxy"}`))
	c := f.proxyClient(t, nil)
	err := c.EnsureDelegation(context.Background())
	if !errors.Is(err, fts.ErrBadRequest) || !strings.Contains(err.Error(), "Could not process the proxy: Malformed proxy") {
		t.Errorf("EnsureDelegation refused: %v", err)
	}

	f.reply("GET /delegation/"+dlgID+"/request", 200, []byte("not a certificate request"))
	if err := c.EnsureDelegation(context.Background()); err == nil || !strings.Contains(err.Error(), "not PEM") {
		t.Errorf("EnsureDelegation with a bad request: %v", err)
	}
}
