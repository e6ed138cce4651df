package fts

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"time"
)

var (
	// oidProxyCertInfo is the RFC 3820 proxyCertInfo extension.
	oidProxyCertInfo = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 1, 14}
	// oidInheritAll is the RFC 3820 policy language "inherit all".
	oidInheritAll = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 21, 1}
	oidCommonName = asn1.ObjectIdentifier{2, 5, 4, 3}
)

// delegationSlack: a new delegation must outlive the current one by this
// much to be worth making (a proxy near its end cannot do better).
const delegationSlack = 5 * time.Minute

// EnsureDelegation makes sure the server holds a delegated proxy with at
// least MinDelegation left (or as much as the local proxy allows), and
// delegates otherwise. It does nothing with a token.
func (c *Client) EnsureDelegation(ctx context.Context) error {
	if c.proxy == nil {
		return nil
	}
	c.dlgMu.Lock()
	defer c.dlgMu.Unlock()
	dlg, err := c.delegationID(ctx)
	if err != nil {
		return err
	}
	end, err := c.delegationEnd(ctx, dlg)
	if err != nil {
		return err
	}
	now := c.cfg.Now()
	if !end.IsZero() && end.Sub(now) >= c.cfg.MinDelegation {
		return nil
	}
	if !end.IsZero() && end.After(now) && !now.Add(c.lifetime(c.proxy.current(), now)).After(end.Add(delegationSlack)) {
		return nil // the local proxy would not give a longer delegation
	}
	return c.delegateLocked(ctx, dlg)
}

// delegate delegates now, whatever the server holds (after a 419).
func (c *Client) delegate(ctx context.Context) error {
	c.dlgMu.Lock()
	defer c.dlgMu.Unlock()
	dlg, err := c.delegationID(ctx)
	if err != nil {
		return err
	}
	return c.delegateLocked(ctx, dlg)
}

// delegationID is the server's delegation id for the client (from whoami).
func (c *Client) delegationID(ctx context.Context) (string, error) {
	w, err := c.whoami(ctx)
	if err != nil {
		return "", fmt.Errorf("fts: delegation: %w", err)
	}
	if w.DelegationID == "" {
		return "", fmt.Errorf("fts: delegation: whoami gives no delegation id for %s", w.UserDN)
	}
	return w.DelegationID, nil
}

// delegationEnd returns when the server's delegation ends; zero if it has none.
func (c *Client) delegationEnd(ctx context.Context, dlg string) (time.Time, error) {
	r, err := c.send(ctx, request{method: http.MethodGet, path: "/delegation/" + url.PathEscape(dlg), idempotent: true})
	if err != nil {
		return time.Time{}, fmt.Errorf("fts: delegation %s: %w", dlg, err)
	}
	if r.status != http.StatusOK {
		return time.Time{}, fmt.Errorf("fts: delegation %s: %w", dlg, r.httpError())
	}
	// No delegation is null, or [] to clients that look like FTS 3.12+.
	var none []json.RawMessage
	if json.Unmarshal(r.body, &none) == nil && len(none) == 0 {
		return time.Time{}, nil
	}
	var info struct {
		TerminationTime ftsTime `json:"termination_time"`
	}
	if err := json.Unmarshal(r.body, &info); err != nil {
		return time.Time{}, fmt.Errorf("fts: delegation %s: unreadable reply: %w", dlg, err)
	}
	return info.TerminationTime.Time, nil
}

// lifetime is the delegation lifetime to ask for: DelegationLifetime capped
// by the local proxy's remaining life less a minute.
func (c *Client) lifetime(p *proxyCredential, now time.Time) time.Duration {
	return min(c.cfg.DelegationLifetime, p.notAfter.Sub(now)-time.Minute)
}

// delegateLocked runs the exchange: get the server's request, sign a proxy
// certificate for its key, put it back with our chain.
func (c *Client) delegateLocked(ctx context.Context, dlg string) error {
	now := c.cfg.Now()
	p := c.proxy.current()
	life := c.lifetime(p, now)
	if life <= 0 {
		return fmt.Errorf("fts: delegation: proxy %s expires at %s, too soon to delegate; renew it",
			p.path, p.notAfter.UTC().Format(time.RFC3339))
	}
	path := "/delegation/" + url.PathEscape(dlg)
	r, err := c.send(ctx, request{method: http.MethodGet, path: path + "/request", idempotent: true})
	if err != nil {
		return fmt.Errorf("fts: delegation %s: request: %w", dlg, err)
	}
	if r.status != http.StatusOK {
		return fmt.Errorf("fts: delegation %s: request: %w", dlg, r.httpError())
	}
	certPEM, err := signProxy(p, r.body, now, life)
	if err != nil {
		return fmt.Errorf("fts: delegation %s: %w", dlg, err)
	}
	body := append([]byte(nil), certPEM...)
	for _, cert := range p.chain {
		body = append(body, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})...)
	}
	r, err = c.send(ctx, request{method: http.MethodPut, path: path + "/credential", body: body,
		contentType: "application/x-pem-file", idempotent: true})
	if err != nil {
		return fmt.Errorf("fts: delegation %s: credential: %w", dlg, err)
	}
	if r.status < 200 || r.status > 299 {
		return fmt.Errorf("fts: delegation %s: credential: %w", dlg, r.httpError())
	}
	return nil
}

// signProxy signs an RFC 3820 proxy certificate for the key of the PEM
// certificate request csrPEM, issued by proxy p and valid for life.
func signProxy(p *proxyCredential, csrPEM []byte, now time.Time, life time.Duration) ([]byte, error) {
	block, _ := pem.Decode(bytes.TrimSpace(csrPEM))
	if block == nil || (block.Type != "CERTIFICATE REQUEST" && block.Type != "NEW CERTIFICATE REQUEST") {
		return nil, fmt.Errorf("the server's certificate request is not PEM: %s", clip(string(csrPEM)))
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("certificate request: %w", err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("certificate request signature: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 63))
	if err != nil {
		return nil, err
	}
	serial.Add(serial, big.NewInt(1))
	subject, err := proxySubject(p.chain[0].RawSubject, serial.String())
	if err != nil {
		return nil, err
	}
	pci, err := asn1.Marshal(proxyCertInfo{Policy: proxyPolicy{Language: oidInheritAll}})
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		RawSubject:            subject,
		NotBefore:             now.Add(-5 * time.Minute),
		NotAfter:              now.Add(life),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		ExtraExtensions:       []pkix.Extension{{Id: oidProxyCertInfo, Critical: true, Value: pci}},
	}
	if tmpl.NotBefore.Before(p.chain[0].NotBefore) {
		tmpl.NotBefore = p.chain[0].NotBefore
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.chain[0], csr.PublicKey, p.key)
	if err != nil {
		return nil, fmt.Errorf("sign proxy: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

type proxyCertInfo struct {
	PathLen *int `asn1:"optional"`
	Policy  proxyPolicy
}

type proxyPolicy struct {
	Language asn1.ObjectIdentifier
}

// proxySubject is the issuer's subject with one more RDN, CN=cn. The
// issuer's RDNs are kept byte for byte, so the proxy's subject starts with
// exactly the issuer's name.
func proxySubject(issuer []byte, cn string) ([]byte, error) {
	var seq asn1.RawValue
	if rest, err := asn1.Unmarshal(issuer, &seq); err != nil || len(rest) > 0 ||
		seq.Class != asn1.ClassUniversal || seq.Tag != asn1.TagSequence {
		return nil, errors.New("unreadable subject in our proxy certificate")
	}
	rdn, err := asn1.Marshal(pkix.RelativeDistinguishedNameSET{{Type: oidCommonName, Value: cn}})
	if err != nil {
		return nil, err
	}
	return asn1.Marshal(asn1.RawValue{
		Class: asn1.ClassUniversal, Tag: asn1.TagSequence, IsCompound: true,
		Bytes: append(append([]byte(nil), seq.Bytes...), rdn...),
	})
}
