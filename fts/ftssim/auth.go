package ftssim

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/asyncstageout/aso/internal/gridcert"
	"github.com/asyncstageout/aso/internal/jwtpayload"
)

// Authentication methods, as whoami reports them.
const (
	methodCert  = "certificate"
	methodOAuth = "oauth2"
)

// identity is an authenticated user (FTS's UserCredentials).
type identity struct {
	dn     string   // the user's DN (the end-entity certificate's subject)
	dns    []string // whoami's dn: the user's DN, then the proxy's
	method string
	vo     string
	fqans  []string // VOMS FQANs; nil for a plain proxy or a token
	dlgID  string
}

// owns reports whether the identity may read and change job j: every job
// belongs to the identity that submitted it (its delegation id: the DN and
// FQANs of a proxy, the issuer and subject of a token). A real server's
// access level may also open a VO's jobs to all its VOMS users; the
// simulator keeps them private (a plain proxy's VO is its delegation id, so
// there the two agree).
func (id *identity) owns(j *job) bool { return j.credID == id.dlgID }

// authenticate finds the request's credentials: a verified client
// certificate or proxy chain first, then a bearer token. Without either it
// returns the HTTP code and message of FTS's auth middleware.
func authenticate(o Options, r *http.Request) (*identity, int, string) {
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		var pool *x509.CertPool
		if o.TLS != nil {
			pool = o.TLS.ClientCAs
		}
		chain := r.TLS.PeerCertificates
		eec, err := gridcert.VerifyChain(chain, pool, time.Now())
		if err != nil {
			return nil, http.StatusForbidden, fmt.Sprintf("Invalid credentials (%v)", err)
		}
		return certIdentity(chain, eec), 0, ""
	}
	if auth := r.Header.Get("Authorization"); auth != "" {
		scheme, token, _ := strings.Cut(auth, " ")
		token = strings.TrimSpace(token)
		if !strings.EqualFold(scheme, "Bearer") || token == "" {
			return nil, http.StatusForbidden, "Invalid credentials (Authorization header is not a Bearer token)"
		}
		if !o.oauth2() {
			return nil, http.StatusBadRequest, "Unsupported authentication method: method=OAuth2"
		}
		if len(o.Tokens) > 0 && !slices.Contains(o.Tokens, token) {
			return nil, http.StatusForbidden, "Invalid credentials (Could not validate token)"
		}
		// FTS's delegation id of a token user is sha1(iss+sub); a token
		// that is not a JWT stands for itself.
		dlg := delegationID("token:"+token, nil)
		if iss, sub := jwtIssuerSubject(token); iss != "" && sub != "" {
			dlg = delegationID(iss+sub, nil)
		}
		return &identity{dn: o.UserDN, dns: []string{o.UserDN}, method: methodOAuth, vo: o.VO, dlgID: dlg}, 0, ""
	}
	return nil, http.StatusForbidden, "The user does not belong to any authorized vo"
}

// certIdentity is the identity of a verified chain whose end-entity
// certificate is eec: the delegation id from the DN and the FQANs of a
// VOMS proxy, whose first FQAN names the VO; a plain proxy's VO is its
// delegation id (FTS's virtual VO, from which deterministic job ids
// follow).
func certIdentity(chain []*x509.Certificate, eec *x509.Certificate) *identity {
	dn := gridcert.FormatDN(eec.RawSubject)
	id := &identity{dn: dn, dns: []string{dn}, method: methodCert, fqans: gridcert.VOMSFQANs(chain)}
	if chain[0] != eec {
		id.dns = append(id.dns, gridcert.FormatDN(chain[0].RawSubject))
	}
	id.dlgID = delegationID(dn, id.fqans)
	id.vo = id.dlgID
	if len(id.fqans) > 0 {
		id.vo = strings.SplitN(strings.TrimPrefix(id.fqans[0], "/"), "/", 2)[0]
	}
	return id
}

// jwtIssuerSubject reads iss and sub from a JWT's payload, without
// checking its signature.
func jwtIssuerSubject(token string) (iss, sub string) {
	var claims struct{ Iss, Sub string }
	if jwtpayload.Decode(token, &claims) != nil {
		return "", ""
	}
	return claims.Iss, claims.Sub
}

// handleWhoami serves GET /whoami.
func handleWhoami(w http.ResponseWriter, _ *http.Request, id *identity, _ []string) {
	level := map[string]string{"deleg": "all", "transfer": "vo"}
	if id.method == methodOAuth {
		level = map[string]string{"deleg": "all", "transfer": "all"}
	}
	fqans := id.fqans
	if fqans == nil {
		fqans = []string{}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"user_dn":       id.dn,
		"dn":            id.dns,
		"base_id":       baseID,
		"voms_cred":     fqans,
		"vos":           []string{id.vo},
		"vos_id":        []string{uuid5(baseID, id.vo).String()},
		"roles":         []string{},
		"level":         level,
		"delegation_id": id.dlgID,
		"method":        id.method,
		"is_root":       false,
	})
}

// handleVersion serves GET /.
func handleVersion(w http.ResponseWriter, _ *http.Request, _ *identity, _ []string) {
	v := func(a, b, c int) map[string]int { return map[string]int{"major": a, "minor": b, "patch": c} }
	writeJSON(w, http.StatusOK, map[string]any{
		"delegation": v(2, 0, 0),
		"api":        v(3, 13, 4),
		"core":       v(3, 14, 4),
		"schema":     v(3, 13, 4),
		"_links": map[string]any{
			"curies":         []map[string]string{{"name": "fts", "href": "https://fts3-docs.web.cern.ch/fts3-docs/"}},
			"fts:whoami":     map[string]any{"href": "/whoami", "title": "Check user certificate"},
			"fts:joblist":    map[string]any{"href": "/jobs{?vo_name,user_dn,dlg_id,state_in,limit}", "title": "List of active jobs", "templated": true},
			"fts:job":        map[string]any{"href": "/jobs/{id}", "title": "Job information", "templated": true},
			"fts:submitjob":  map[string]any{"href": "/jobs", "title": "Submit a transfer job"},
			"fts:delegation": map[string]any{"href": "/delegation/{dlg_id}", "title": "Delegation", "templated": true},
		},
	})
}
