package ftssim

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/asyncstageout/aso/internal/gridcert"
)

// delegationKeyBits is the size of the key the server generates for a
// delegation request.
const delegationKeyBits = 2048

// delegations holds each delegation id's state: the pending request's
// key and the stored proxy's termination.
type delegations struct {
	mu   sync.Mutex
	byID map[string]*delegation
}

// delegation is one user's delegation state: the key of the pending
// request, and the termination time of the stored proxy.
type delegation struct {
	key         *rsa.PrivateKey
	csrPEM      []byte
	termination *time.Time
	vomsAttrs   []string // the delegated proxy's FQANs
}

func newDelegations() *delegations { return &delegations{byID: map[string]*delegation{}} }

// expireAll makes every delegated proxy expired a second ago.
func (ds *delegations) expireAll() {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	past := time.Now().Add(-time.Second).UTC()
	for _, d := range ds.byID {
		if d.termination != nil {
			d.termination = &past
		}
	}
}

// check returns FTS's 419 message when the user has no usable
// delegated proxy, or "". Credential lifetimes are checked against real
// time, like the certificates themselves.
func (ds *delegations) check(id *identity) string {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	d := ds.byID[id.dlgID]
	if d == nil || d.termination == nil {
		return fmt.Sprintf("No delegation found for \"%s\"", id.dn)
	}
	left := time.Until(*d.termination)
	switch {
	case left <= 0:
		return fmt.Sprintf("The delegated credentials expired %d seconds ago (%s)", int64(-left.Seconds()), id.dlgID)
	case left < time.Hour:
		return fmt.Sprintf("The delegated credentials has less than one hour left (%s)", id.dlgID)
	}
	return ""
}

// ownDelegation wraps a delegation handler: a user may only touch their
// own delegation id.
func ownDelegation(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, id *identity, args []string) {
		if args[0] != id.dlgID {
			writeError(w, http.StatusForbidden, "The requested ID and the credentials ID do not match")
			return
		}
		h(w, r, id, args)
	}
}

// modernClientRE matches the User-Agent of FTS clients of 3.12 and later
// ("fts-rest-client/3.12.1", "fts-python-cli/3.13.0"), to which the server
// answers an absent delegation with [] instead of null.
var modernClientRE = regexp.MustCompile(`^fts[\w.-]*/(\d+)\.(\d+)`)

func modernClient(userAgent string) bool {
	m := modernClientRE.FindStringSubmatch(userAgent)
	if m == nil {
		return false
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	return major > 3 || (major == 3 && minor >= 12)
}

// handleInfo serves GET /delegation/{dlg}: the delegation's
// termination time and the delegated proxy's FQANs ([""] for a plain proxy,
// as FTS splits its empty attribute string), or null ([] to FTS 3.12+
// clients) without a delegation.
func (ds *delegations) handleInfo(w http.ResponseWriter, r *http.Request, id *identity, args []string) {
	ds.mu.Lock()
	d := ds.byID[id.dlgID]
	var reply any
	if modernClient(r.UserAgent()) {
		reply = []any{}
	}
	if d != nil && d.termination != nil {
		attrs := d.vomsAttrs
		if len(attrs) == 0 {
			attrs = []string{""}
		}
		reply = map[string]any{"termination_time": d.termination.UTC().Format(ftsTime), "voms_attrs": attrs}
	}
	ds.mu.Unlock()
	writeJSON(w, http.StatusOK, reply)
}

// handleDelete serves DELETE /delegation/{dlg}.
func (ds *delegations) handleDelete(w http.ResponseWriter, _ *http.Request, id *identity, args []string) {
	ds.mu.Lock()
	d := ds.byID[id.dlgID]
	found := d != nil && d.termination != nil
	if found {
		d.termination = nil
	}
	ds.mu.Unlock()
	if !found {
		writeError(w, http.StatusNotFound, "Delegated credentials not found")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleRequest serves GET /delegation/{dlg}/request: a PEM
// certificate request whose key the server keeps (and reuses until the
// proxy is delegated).
func (ds *delegations) handleRequest(w http.ResponseWriter, _ *http.Request, id *identity, _ []string) {
	csr := ds.pendingRequest(id.dlgID)
	if csr == nil {
		// Generate outside the lock (it is slow); the first to store wins.
		nd, err := newDelegationRequest()
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		ds.mu.Lock()
		d := ds.byID[id.dlgID]
		if d == nil {
			d = &delegation{}
			ds.byID[id.dlgID] = d
		}
		if d.key == nil {
			d.key, d.csrPEM = nd.key, nd.csrPEM
		}
		csr = d.csrPEM
		ds.mu.Unlock()
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Delegation-ID", id.dlgID)
	_, _ = w.Write(csr)
}

// pendingRequest returns the stored request of a delegation id, or nil.
func (ds *delegations) pendingRequest(dlgID string) []byte {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if d := ds.byID[dlgID]; d != nil && d.key != nil {
		return d.csrPEM
	}
	return nil
}

func newDelegationRequest() (*delegation, error) {
	key, err := rsa.GenerateKey(rand.Reader, delegationKeyBits)
	if err != nil {
		return nil, fmt.Errorf("generate delegation key: %w", err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{Organization: []string{"Dummy"}}, SignatureAlgorithm: x509.SHA256WithRSA,
	}, key)
	if err != nil {
		return nil, fmt.Errorf("create delegation request: %w", err)
	}
	return &delegation{key: key, csrPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})}, nil
}

// handlePut serves PUT /delegation/{dlg}/credential: the proxy the
// client signed from the request, followed by the client's own chain.
func (ds *delegations) handlePut(w http.ResponseWriter, r *http.Request, id *identity, args []string) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "Could not read the proxy: "+err.Error())
		return
	}
	ds.mu.Lock()
	var key *rsa.PrivateKey
	if d := ds.byID[id.dlgID]; d != nil {
		key = d.key
	}
	ds.mu.Unlock()
	if key == nil {
		writeError(w, http.StatusBadRequest, "No credential cache found")
		return
	}
	expiry, fqans, err := validateProxy(body, key)
	if err != nil {
		writeError(w, http.StatusBadRequest, "Could not process the proxy: "+err.Error())
		return
	}
	ds.mu.Lock()
	ds.byID[id.dlgID].termination = &expiry
	ds.byID[id.dlgID].vomsAttrs = fqans
	ds.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
}

// validateProxy checks a delegated proxy as FTS's _validate_proxy: at
// least two certificates, the first's key is the stored one, it is signed
// by the second, and its subject is its issuer plus a trailing CN. It
// returns the proxy's expiry and the FQANs its chain carries.
func validateProxy(body []byte, key *rsa.PrivateKey) (time.Time, []string, error) {
	var certs []*x509.Certificate
	for rest := body; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			break
		}
		certs = append(certs, c)
	}
	if len(certs) < 2 {
		//lint:ignore ST1005 FTS sends this message as it is
		return time.Time{}, nil, fmt.Errorf("Malformed proxy")
	}
	proxy, issuer := certs[0], certs[1]
	pub, ok := proxy.PublicKey.(*rsa.PublicKey)
	if !ok || !pub.Equal(&key.PublicKey) {
		//lint:ignore ST1005 FTS sends this message as it is
		return time.Time{}, nil, fmt.Errorf("The proxy does not match the stored associated private key")
	}
	if err := issuer.CheckSignature(proxy.SignatureAlgorithm, proxy.RawTBSCertificate, proxy.Signature); err != nil {
		//lint:ignore ST1005 FTS sends this message as it is
		return time.Time{}, nil, fmt.Errorf("Failed to verify the proxy, maybe signed with the wrong private key?")
	}
	var sub, iss pkix.RDNSequence
	_, err1 := asn1.Unmarshal(proxy.RawSubject, &sub)
	_, err2 := asn1.Unmarshal(proxy.RawIssuer, &iss)
	if err1 != nil || err2 != nil || len(sub) == 0 || gridcert.FormatRDNs(sub[:len(sub)-1]) != gridcert.FormatRDNs(iss) {
		//lint:ignore ST1005 FTS sends this message as it is
		return time.Time{}, nil, fmt.Errorf("The subject and the issuer of the proxy do not match: %s != %s", gridcert.FormatDN(proxy.RawSubject), gridcert.FormatDN(proxy.RawIssuer))
	}
	if last := sub[len(sub)-1]; len(last) != 1 || !last[0].Type.Equal(gridcert.OIDCN) {
		//lint:ignore ST1005 FTS sends this message as it is
		return time.Time{}, nil, fmt.Errorf("Missing trailing Common Name in the proxy")
	}
	return proxy.NotAfter.UTC(), gridcert.VOMSFQANs(certs), nil
}
