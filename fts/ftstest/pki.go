package ftstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/asyncstageout/aso/internal/gridcert"
)

// PKI is a throw-away grid PKI for tests and demos: a CA, a server certificate for
// 127.0.0.1/localhost, a user certificate and an RFC 3820 proxy of it.
type PKI struct {
	// CAPool holds the CA certificate.
	CAPool *x509.CertPool
	// CADir is a directory holding the CA certificate as a .pem file, to use
	// as X509_CERT_DIR.
	CADir string
	// Server is the server certificate and key (for TLSOptions.Cert).
	Server tls.Certificate
	// UserCertPEM and UserKeyPEM are the user's certificate and
	// unencrypted RSA key.
	UserCertPEM, UserKeyPEM []byte
	// ProxyPEM is an RFC 3820 proxy valid 12 hours: proxy certificate, its
	// key, then the user certificate, as in /tmp/x509up_u<uid>.
	ProxyPEM []byte
	// UserDN is the user's DN in FTS's form ("/DC=org/.../CN=...").
	UserDN string

	userCert *x509.Certificate
	userKey  *rsa.PrivateKey
}

var (
	keyPoolOnce sync.Once
	keyPool     [4]*rsa.PrivateKey
	keyPoolErr  error
)

// pooledKeys returns RSA keys generated once per process: generating RSA
// keys is slow, and test PKIs need not be unique.
func pooledKeys() ([4]*rsa.PrivateKey, error) {
	keyPoolOnce.Do(func() {
		var wg sync.WaitGroup
		errs := make([]error, len(keyPool))
		for i := range keyPool {
			wg.Add(1)
			go func() {
				defer wg.Done()
				keyPool[i], errs[i] = rsa.GenerateKey(rand.Reader, 2048)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				keyPoolErr = err
			}
		}
	})
	return keyPool, keyPoolErr
}

var (
	oidDC  = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}
	oidOU  = asn1.ObjectIdentifier{2, 5, 4, 11}
	serial = struct {
		sync.Mutex
		n int64
	}{n: time.Now().UnixNano()}
)

func nextSerial() *big.Int {
	serial.Lock()
	defer serial.Unlock()
	serial.n++
	return big.NewInt(serial.n)
}

// rawName encodes RDNs in the given order (pkix.Name would reorder them).
func rawName(rdns ...pkix.AttributeTypeAndValue) []byte {
	seq := make(pkix.RDNSequence, len(rdns))
	for i, a := range rdns {
		seq[i] = pkix.RelativeDistinguishedNameSET{a}
	}
	der, err := asn1.Marshal(seq)
	if err != nil {
		panic(fmt.Sprintf("ftssim: encode name: %v", err)) // printable strings always encode
	}
	return der
}

func atv(oid asn1.ObjectIdentifier, v string) pkix.AttributeTypeAndValue {
	return pkix.AttributeTypeAndValue{Type: oid, Value: v}
}

func createCert(tmpl, parent *x509.Certificate, pub, signer any) (*x509.Certificate, error) {
	if parent == nil {
		parent = tmpl // self-signed
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		return nil, fmt.Errorf("ftssim: create certificate: %w", err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("ftssim: parse certificate: %w", err)
	}
	return c, nil
}

func certPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

func keyPEM(k *rsa.PrivateKey) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
}

// MakePKI makes a CA, a server certificate for 127.0.0.1, ::1 and localhost,
// a user certificate and a 12-hour RFC 3820 proxy; the CA certificate is
// written as a .pem file into dir (for X509_CERT_DIR).
func MakePKI(dir string) (*PKI, error) {
	keys, err := pooledKeys()
	if err != nil {
		return nil, fmt.Errorf("ftssim: generate keys: %w", err)
	}
	// Each PKI has its own CA key (ECDSA: fast to make), so PKIs do not
	// trust each other's certificates.
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("ftssim: generate CA key: %w", err)
	}
	now := time.Now()
	caSerial := nextSerial()
	ca, err := createCert(&x509.Certificate{
		SerialNumber: caSerial, RawSubject: rawName(atv(oidDC, "org"), atv(oidDC, "asyncstageout"), atv(gridcert.OIDCN, "ASO Test CA "+caSerial.String())),
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(30 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}, nil, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	srv, err := createCert(&x509.Certificate{
		SerialNumber: nextSerial(), RawSubject: rawName(atv(oidDC, "org"), atv(oidDC, "asyncstageout"), atv(gridcert.OIDCN, "localhost")),
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(30 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}, ca, &keys[1].PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	user, err := createCert(&x509.Certificate{
		SerialNumber: nextSerial(), RawSubject: rawName(atv(oidDC, "org"), atv(oidDC, "asyncstageout"), atv(oidOU, "Users"), atv(gridcert.OIDCN, "aso test user")),
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(30 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca, &keys[2].PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	p := &PKI{
		CAPool: x509.NewCertPool(), CADir: dir,
		Server:      tls.Certificate{Certificate: [][]byte{srv.Raw, ca.Raw}, PrivateKey: keys[1], Leaf: srv},
		UserCertPEM: certPEM(user), UserKeyPEM: keyPEM(keys[2]), UserDN: gridcert.FormatDN(user.RawSubject),
		userCert: user, userKey: keys[2],
	}
	p.CAPool.AddCert(ca)
	if err := os.WriteFile(filepath.Join(p.CADir, "aso-test-ca.pem"), certPEM(ca), 0o644); err != nil {
		return nil, fmt.Errorf("ftssim: write CA: %w", err)
	}
	if p.ProxyPEM, err = makeProxy(p, keys[0], 12*time.Hour, nil); err != nil {
		return nil, err
	}
	return p, nil
}

// MakeProxy makes another RFC 3820 proxy of p's user, valid from an hour ago
// for lifetime from now (a negative lifetime gives an expired proxy). With
// fqans it is a VOMS proxy carrying those FQANs (like
// "/cms/Role=NULL/Capability=NULL"; the first names the VO).
func MakeProxy(p *PKI, lifetime time.Duration, fqans ...string) ([]byte, error) {
	keys, err := pooledKeys()
	if err != nil {
		return nil, fmt.Errorf("ftssim: generate keys: %w", err)
	}
	return makeProxy(p, keys[3], lifetime, fqans)
}

func makeProxy(p *PKI, key *rsa.PrivateKey, lifetime time.Duration, fqans []string) ([]byte, error) {
	now := time.Now()
	sn := nextSerial()
	var seq pkix.RDNSequence
	if _, err := asn1.Unmarshal(p.userCert.RawSubject, &seq); err != nil {
		return nil, fmt.Errorf("ftssim: user subject: %w", err)
	}
	seq = append(seq, pkix.RelativeDistinguishedNameSET{atv(gridcert.OIDCN, sn.String())})
	subject, err := asn1.Marshal(seq)
	if err != nil {
		return nil, fmt.Errorf("ftssim: proxy subject: %w", err)
	}
	pci, err := asn1.Marshal(struct {
		Policy struct{ Language asn1.ObjectIdentifier }
	}{Policy: struct{ Language asn1.ObjectIdentifier }{asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 21, 1}}})
	if err != nil {
		return nil, fmt.Errorf("ftssim: proxyCertInfo: %w", err)
	}
	notBefore := now.Add(-time.Hour)
	if lifetime < 0 {
		notBefore = now.Add(lifetime - time.Hour)
	}
	exts := []pkix.Extension{{Id: gridcert.OIDProxyCertInfo, Critical: true, Value: pci}}
	if len(fqans) > 0 {
		ac, err := vomsExtension(fqans)
		if err != nil {
			return nil, err
		}
		exts = append(exts, ac)
	}
	proxy, err := createCert(&x509.Certificate{
		SerialNumber: sn, RawSubject: subject, NotBefore: notBefore, NotAfter: now.Add(lifetime),
		KeyUsage:        x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtraExtensions: exts,
	}, p.userCert, &key.PublicKey, p.userKey)
	if err != nil {
		return nil, err
	}
	out := certPEM(proxy)
	out = append(out, keyPEM(key)...)
	return append(out, certPEM(p.userCert)...), nil
}
