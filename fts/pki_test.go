package fts_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// The test identity: a CA, a user certificate it signed, and RFC 3820
// proxies of that user, written the way voms-proxy-init writes them
// (proxy certificate, proxy key, user certificate).

var (
	oidProxyCertInfo = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 1, 14}
	oidInheritAll    = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 21, 1}
)

type testUser struct {
	caCert   *x509.Certificate
	caKey    *rsa.PrivateKey
	userCert *x509.Certificate
	userKey  *rsa.PrivateKey
}

var user = sync.OnceValue(func() *testUser {
	u := &testUser{caKey: mustKey(2048), userKey: mustKey(2048)}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{Country: []string{"CH"}, Organization: []string{"aso test"}, CommonName: "aso test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(30 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	u.caCert = mustCert(ca, ca, &u.caKey.PublicKey, u.caKey)
	usr := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject: pkix.Name{Country: []string{"CH"}, Organization: []string{"aso test"}, OrganizationalUnit: []string{"Users"},
			CommonName: "Alice Tester"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(30 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, BasicConstraintsValid: true,
	}
	u.userCert = mustCert(usr, u.caCert, &u.userKey.PublicKey, u.caKey)
	return u
})

// Keys are costly to make: every proxy shares one, as does every fake
// server's delegation request.
var (
	proxyKey  = sync.OnceValue(func() *rsa.PrivateKey { return mustKey(1024) })
	serverKey = sync.OnceValue(func() *rsa.PrivateKey { return mustKey(1024) })
)

func mustKey(bits int) *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		panic(err)
	}
	return k
}

func mustCert(tmpl, parent *x509.Certificate, pub any, key *rsa.PrivateKey) *x509.Certificate {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, key)
	if err != nil {
		panic(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		panic(err)
	}
	return c
}

// proxyOpts shapes a test proxy file.
type proxyOpts struct {
	life   time.Duration // default 12 h
	pkcs8  bool          // key as "PRIVATE KEY" instead of "RSA PRIVATE KEY"
	mode   os.FileMode   // default 0600
	noKey  bool
	before time.Duration // NotBefore offset from now (default -5 min)
}

// writeProxy writes a proxy of the test user into a new file and returns
// its path and certificate.
func writeProxy(t testing.TB, o proxyOpts) (string, *x509.Certificate) {
	t.Helper()
	u := user()
	if o.life == 0 {
		o.life = 12 * time.Hour
	}
	if o.mode == 0 {
		o.mode = 0o600
	}
	if o.before == 0 {
		o.before = -5 * time.Minute
	}
	key := proxyKey()
	pci, err := asn1.Marshal(struct {
		Policy struct{ Lang asn1.ObjectIdentifier }
	}{
		Policy: struct{ Lang asn1.ObjectIdentifier }{oidInheritAll}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	var rdns pkix.RDNSequence
	if _, err := asn1.Unmarshal(u.userCert.RawSubject, &rdns); err != nil {
		t.Fatal(err)
	}
	rdns = append(rdns, pkix.RelativeDistinguishedNameSET{{Type: asn1.ObjectIdentifier{2, 5, 4, 3}, Value: "123456789"}})
	subj, err := asn1.Marshal(rdns)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(123456789), RawSubject: subj,
		NotBefore: now.Add(o.before), NotAfter: now.Add(o.life),
		KeyUsage:        x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtraExtensions: []pkix.Extension{{Id: oidProxyCertInfo, Critical: true, Value: pci}},
	}
	proxy := mustCert(tmpl, u.userCert, &key.PublicKey, u.userKey)
	var keyBlock *pem.Block
	if o.pkcs8 {
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		keyBlock = &pem.Block{Type: "PRIVATE KEY", Bytes: der}
	} else {
		keyBlock = &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: proxy.Raw})
	if !o.noKey {
		data = append(data, pem.EncodeToMemory(keyBlock)...)
	}
	data = append(data, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: u.userCert.Raw})...)
	path := filepath.Join(t.TempDir(), "x509up_u1000")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, o.mode); err != nil {
		t.Fatal(err)
	}
	return path, proxy
}

// writeCADir writes certificates into a new CA directory the way grid CA
// directories hold them: a hash link name ("<hash>.0") and a .pem file.
func writeCADir(t testing.TB, certs ...*x509.Certificate) string {
	t.Helper()
	dir := t.TempDir()
	for i, c := range certs {
		data := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
		name := []string{"1a2b3c4d.0", "server-ca.pem"}[i%2]
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Files a CA directory also holds, which are not certificates.
	for name, body := range map[string]string{"1a2b3c4d.signing_policy": "access_id_CA X509 '/C=CH'", "1a2b3c4d.r0": "-----BEGIN X509 CRL-----\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// writeToken writes a bearer token file with the given mode.
func writeToken(t testing.TB, token string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}
