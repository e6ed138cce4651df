package fts

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/asyncstageout/aso/internal/gridcert"
)

// proxyCredential is an X.509 proxy: its certificate chain (proxy first) and
// the proxy's private key.
type proxyCredential struct {
	path     string
	chain    []*x509.Certificate
	key      crypto.Signer
	tlsCert  tls.Certificate
	notAfter time.Time // earliest expiry in the chain
	stamp    fileStamp // of the file it was read from
}

// statPrivate refuses a secret file that group or others can access, and
// returns its file information.
func statPrivate(kind, path string) (os.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, credErrorf("fts: %s file: %w", kind, err)
	}
	if !st.Mode().IsRegular() {
		return nil, credErrorf("fts: %s file %s is not a regular file", kind, path)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return nil, credErrorf("fts: %s file %s is accessible by group or others (mode %04o); run: chmod 600 %s",
			kind, path, perm, path)
	}
	return st, nil
}

// loadProxy reads a proxy PEM file: every CERTIFICATE block in order as the
// chain, and the one private key (PKCS#1, PKCS#8 or SEC 1).
func loadProxy(path string) (*proxyCredential, error) {
	st, err := statPrivate("proxy", path)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("fts: proxy file: %w", err)
	}
	p := &proxyCredential{path: path, stamp: stampOf(st)}
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		switch {
		case block.Type == "CERTIFICATE":
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("fts: proxy file %s: certificate %d: %w", path, len(p.chain)+1, err)
			}
			p.chain = append(p.chain, cert)
			p.tlsCert.Certificate = append(p.tlsCert.Certificate, block.Bytes)
		case strings.HasSuffix(block.Type, "PRIVATE KEY"):
			if p.key != nil {
				return nil, fmt.Errorf("fts: proxy file %s holds more than one private key", path)
			}
			if p.key, err = parseKey(block); err != nil {
				return nil, fmt.Errorf("fts: proxy file %s: %w", path, err)
			}
		}
	}
	if len(p.chain) == 0 || p.key == nil {
		return nil, fmt.Errorf("fts: proxy file %s must hold a certificate and its private key in PEM", path)
	}
	if !samePublicKey(p.chain[0].PublicKey, p.key.Public()) {
		return nil, fmt.Errorf("fts: proxy file %s: the private key does not belong to the first certificate", path)
	}
	p.tlsCert.PrivateKey = p.key
	p.tlsCert.Leaf = p.chain[0]
	p.notAfter = p.chain[0].NotAfter
	for _, c := range p.chain[1:] {
		if c.NotAfter.Before(p.notAfter) {
			p.notAfter = c.NotAfter
		}
	}
	return p, nil
}

func parseKey(block *pem.Block) (crypto.Signer, error) {
	if _, encrypted := block.Headers["DEK-Info"]; encrypted || block.Type == "ENCRYPTED PRIVATE KEY" {
		return nil, errors.New("the private key is encrypted; a proxy's key must not be")
	}
	var key any
	var err error
	switch block.Type {
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("unsupported key type %q", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("private key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("unsupported private key %T", key)
	}
	return signer, nil
}

func samePublicKey(a, b crypto.PublicKey) bool {
	type equaler interface{ Equal(crypto.PublicKey) bool }
	switch k := a.(type) {
	case *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey:
		return k.(equaler).Equal(b)
	}
	return false
}

// checkValid refuses a proxy that has expired (or is not yet valid).
func (p *proxyCredential) checkValid(now time.Time) error {
	if !now.Before(p.notAfter) {
		return credErrorf("fts: proxy %s expired at %s; renew it (e.g. voms-proxy-init)",
			p.path, p.notAfter.UTC().Format(time.RFC3339))
	}
	if now.Before(p.chain[0].NotBefore) {
		return credErrorf("fts: proxy %s is not valid before %s; check the clock",
			p.path, p.chain[0].NotBefore.UTC().Format(time.RFC3339))
	}
	return nil
}

// loadCertDir reads every certificate file of dir into a pool.
func loadCertDir(dir string) (*x509.CertPool, error) {
	pool, n, err := gridcert.CAPool(dir)
	if err != nil {
		return nil, fmt.Errorf("fts: CA directory: %w; give the directory of trusted CA certificates (X509_CERT_DIR)", err)
	}
	if n == 0 {
		return nil, fmt.Errorf("fts: CA directory %s holds no certificate (*.pem, *.crt, <hash>.0)", dir)
	}
	return pool, nil
}
