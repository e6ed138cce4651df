package gridcert

import (
	"bytes"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"strings"
	"time"
)

// OIDProxyCertInfo is the RFC 3820 proxyCertInfo extension.
var OIDProxyCertInfo = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 1, 14}

// IsProxyOf reports whether c is a proxy certificate issued by parent: its
// issuer is parent's subject and its subject is parent's subject plus one
// trailing CN (RFC 3820 and legacy proxies alike).
func IsProxyOf(c, parent *x509.Certificate) bool {
	if !bytes.Equal(c.RawIssuer, parent.RawSubject) {
		return false
	}
	var sub, iss pkix.RDNSequence
	if _, err := asn1.Unmarshal(c.RawSubject, &sub); err != nil {
		return false
	}
	if _, err := asn1.Unmarshal(parent.RawSubject, &iss); err != nil {
		return false
	}
	if len(sub) != len(iss)+1 {
		return false
	}
	lastRDN := sub[len(sub)-1]
	return len(lastRDN) == 1 && lastRDN[0].Type.Equal(OIDCN) && FormatRDNs(sub[:len(iss)]) == FormatRDNs(iss)
}

// VerifyChain checks a client's certificate chain the way
// mod_gridsite does: any leading proxies must each be signed by the next
// certificate and be valid at now; the first non-proxy (the user's
// end-entity certificate) must verify against roots. It returns that
// end-entity certificate, whose subject is the user's DN.
func VerifyChain(chain []*x509.Certificate, roots *x509.CertPool, now time.Time) (*x509.Certificate, error) {
	if roots == nil {
		return nil, errors.New("client certificates are not accepted by this server")
	}
	i := 0
	for ; i+1 < len(chain) && IsProxyOf(chain[i], chain[i+1]); i++ {
		c, parent := chain[i], chain[i+1]
		if now.Before(c.NotBefore) || now.After(c.NotAfter) {
			return nil, fmt.Errorf("proxy %s expired or not yet valid (valid %s to %s)", FormatDN(c.RawSubject), c.NotBefore.UTC().Format(time.RFC3339), c.NotAfter.UTC().Format(time.RFC3339))
		}
		if err := parent.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature); err != nil {
			return nil, fmt.Errorf("proxy %s is not signed by its issuer: %w", FormatDN(c.RawSubject), err)
		}
	}
	eec := chain[i]
	inter := x509.NewCertPool()
	for _, c := range chain[i+1:] {
		inter.AddCert(c)
	}
	_, err := eec.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	if err != nil {
		return nil, fmt.Errorf("certificate %s: %w", FormatDN(eec.RawSubject), err)
	}
	return eec, nil
}

var (
	// OIDCN is the commonName attribute of a DN.
	OIDCN = asn1.ObjectIdentifier{2, 5, 4, 3}
	// dnNames are OpenSSL's short names for DN attributes.
	dnNames = map[string]string{
		"2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.10": "O", "2.5.4.11": "OU",
		"2.5.4.5": "serialNumber", "2.5.4.9": "street", "2.5.4.17": "postalCode",
		"0.9.2342.19200300.100.1.25": "DC", "0.9.2342.19200300.100.1.1": "UID", "1.2.840.113549.1.9.1": "emailAddress",
	}
)

// FormatDN renders a DER subject in the OpenSSL one-line form FTS uses:
// "/DC=ch/DC=cern/OU=Users/CN=name".
func FormatDN(raw []byte) string {
	var seq pkix.RDNSequence
	if _, err := asn1.Unmarshal(raw, &seq); err != nil {
		return ""
	}
	return FormatRDNs(seq)
}

// FormatRDNs renders a parsed DN as FormatDN does.
func FormatRDNs(seq pkix.RDNSequence) string {
	var b strings.Builder
	for _, rdn := range seq {
		for _, atv := range rdn {
			name, ok := dnNames[atv.Type.String()]
			if !ok {
				name = atv.Type.String()
			}
			fmt.Fprintf(&b, "/%s=%v", name, atv.Value)
		}
	}
	return b.String()
}

// VerifyPeer returns a tls.Config.VerifyPeerCertificate that accepts a
// client certificate chain, grid proxies included, when VerifyChain
// accepts it against roots at now(); a handshake without a client
// certificate passes (the server decides what such a client may do).
func VerifyPeer(roots *x509.CertPool, now func() time.Time) func([][]byte, [][]*x509.Certificate) error {
	return func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 {
			return nil
		}
		chain := make([]*x509.Certificate, len(raw))
		for i, r := range raw {
			c, err := x509.ParseCertificate(r)
			if err != nil {
				return fmt.Errorf("client certificate: %w", err)
			}
			chain[i] = c
		}
		_, err := VerifyChain(chain, roots, now())
		return err
	}
}
