package ftssim_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"math/big"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts/ftssim"
	"github.com/asyncstageout/aso/fts/ftstest"
)

// delegator signs delegation requests as a client does: a proxy of the
// user's certificate for the server's key.
type delegator struct {
	user    *x509.Certificate
	userKey crypto.Signer
}

func newDelegator(t *testing.T, p *ftstest.PKI) *delegator {
	t.Helper()
	cb, _ := pem.Decode(p.UserCertPEM)
	kb, _ := pem.Decode(p.UserKeyPEM)
	user, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	key, err := x509.ParsePKCS1PrivateKey(kb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return &delegator{user: user, userKey: key}
}

// sign makes the PUT body for a CSR: proxy (signed by signer, for pub)
// followed by the user's certificate.
func (d *delegator) sign(t *testing.T, csrPEM []byte, lifetime time.Duration, mutate func(tmpl, parent *x509.Certificate) (pub any, signer crypto.Signer)) []byte {
	t.Helper()
	b, _ := pem.Decode(csrPEM)
	if b == nil || b.Type != "CERTIFICATE REQUEST" {
		t.Fatalf("not a PEM certificate request: %q", csrPEM)
	}
	csr, err := x509.ParseCertificateRequest(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if err := csr.CheckSignature(); err != nil {
		t.Fatalf("request signature: %v", err)
	}
	var seq pkix.RDNSequence
	if _, err := asn1.Unmarshal(d.user.RawSubject, &seq); err != nil {
		t.Fatal(err)
	}
	seq = append(seq, pkix.RelativeDistinguishedNameSET{{Type: asn1.ObjectIdentifier{2, 5, 4, 3}, Value: "1234567"}})
	subject, _ := asn1.Marshal(seq)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1234567), RawSubject: subject,
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(lifetime)}
	parent := *d.user
	pub, signer := csr.PublicKey, d.userKey
	if mutate != nil {
		pub, signer = mutate(tmpl, &parent)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, &parent, pub, signer)
	if err != nil {
		t.Fatal(err)
	}
	out := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: d.user.Raw})...)
}

func TestDelegation(t *testing.T) {
	p := ftstest.NewPKI(t)
	srv := tlsServer(t, p, ftssim.Options{RequireDelegation: true, OAuth2: true})
	c := certClient(t, p, p.ProxyPEM)
	do := func(method, path string, body any) reply { return call(t, c, method, srv.URL+path, "", body) }
	job := jobBody(nil, transfer("gsiftp://a.example.org/f", "gsiftp://b.example.org/f"))

	r := do(http.MethodPost, "/jobs", job)
	wantEq(t, "code before delegation", r.code, 419)
	wantEq(t, "body", r.obj(t), map[string]any{"status": "419 Authentication Timeout", "message": `No delegation found for "` + p.UserDN + `"`})
	wantEq(t, "bad JSON comes first", do(http.MethodPost, "/jobs", "{").code, 400)
	wantEq(t, "bearer clients need no delegation", call(t, srv.Client(), http.MethodPost, srv.URL+"/jobs", testToken, job).code, 200)

	dlg := do(http.MethodGet, "/whoami", nil).obj(t)["delegation_id"].(string)
	wantEq(t, "no credential yet", do(http.MethodGet, "/delegation/"+dlg, nil).json(t), nil)
	wantEq(t, "someone else's", do(http.MethodGet, "/delegation/0123456789abcdef", nil).code, 403)
	wantEq(t, "PUT before request", do(http.MethodPut, "/delegation/"+dlg+"/credential", "x").code, 400)

	req := do(http.MethodGet, "/delegation/"+dlg+"/request", nil)
	wantEq(t, "X-Delegation-ID", req.hdr.Get("X-Delegation-ID"), dlg)
	again := do(http.MethodGet, "/delegation/"+dlg+"/request", nil)
	wantEq(t, "cached request", string(again.body), string(req.body))
	d := newDelegator(t, p)

	bad := map[string][]byte{
		"Malformed proxy": d.sign(t, req.body, 12*time.Hour, nil)[:0],
		"The proxy does not match the stored associated private key": d.sign(t, req.body, 12*time.Hour, func(_, _ *x509.Certificate) (any, crypto.Signer) {
			return d.user.PublicKey, d.userKey
		}),
		"Failed to verify the proxy, maybe signed with the wrong private key?": d.sign(t, req.body, 12*time.Hour, func(_, parent *x509.Certificate) (any, crypto.Signer) {
			k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			parent.PublicKey = k.Public()
			b, _ := pem.Decode(req.body)
			csr, _ := x509.ParseCertificateRequest(b.Bytes)
			return csr.PublicKey, k
		}),
	}
	for msg, body := range bad {
		r := do(http.MethodPut, "/delegation/"+dlg+"/credential", body)
		wantEq(t, "bad proxy code", r.code, 400)
		wantEq(t, "bad proxy message", r.obj(t)["message"], "Could not process the proxy: "+msg)
	}

	wantEq(t, "delegate", do(http.MethodPut, "/delegation/"+dlg+"/credential", d.sign(t, req.body, 12*time.Hour, nil)).code, 201)
	info := do(http.MethodGet, "/delegation/"+dlg, nil).obj(t)
	if s, _ := info["termination_time"].(string); !ftsTimeRE.MatchString(s) {
		t.Fatalf("termination_time %v", info["termination_time"])
	}
	wantEq(t, "submit after delegation", do(http.MethodPost, "/jobs", job).code, 200)

	srv.ExpireDelegation()
	r = do(http.MethodPost, "/jobs", job)
	wantEq(t, "code after expiry", r.code, 419)
	if m, _ := r.obj(t)["message"].(string); !regexp.MustCompile(`^The delegated credentials expired \d+ seconds ago \(` + dlg + `\)$`).MatchString(m) {
		t.Fatalf("expiry message %q", m)
	}

	wantEq(t, "short delegation", do(http.MethodPut, "/delegation/"+dlg+"/credential", d.sign(t, req.body, 30*time.Minute, nil)).code, 201)
	r = do(http.MethodPost, "/jobs", job)
	wantEq(t, "short message", r.obj(t)["message"], "The delegated credentials has less than one hour left ("+dlg+")")

	wantEq(t, "delete", do(http.MethodDelete, "/delegation/"+dlg, nil).code, 204)
	wantEq(t, "after delete", do(http.MethodPost, "/jobs", job).code, 419)
	wantEq(t, "counters", srv.Requests()["delegation"], 6)
}
