package serve

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/asyncstageout/aso/internal/gridcert"
)

// Auth says who a request comes from and what it may see: a user sees
// that user's transfers only; an operator sees every user's, and the
// metrics.
type Auth struct {
	// passwords are the bcrypt hashes of basic auth, by user (an
	// htpasswd file); nil: no basic auth.
	passwords map[string][]byte
	// clientCAs verify client certificates and proxies; users maps a
	// certificate's DN to a user (a grid-mapfile). nil: none accepted.
	clientCAs *x509.CertPool
	users     map[string]string
	operators map[string]bool
	now       func() time.Time

	mu sync.Mutex
	ok map[[32]byte]time.Time // basic credentials already checked, until when
}

// AuthOptions configure NewAuth.
type AuthOptions struct {
	// Htpasswd is a file of "user:bcrypt-hash" lines (htpasswd -B).
	Htpasswd string
	// ClientCAs verify client certificates and grid proxies.
	ClientCAs *x509.CertPool
	// GridMapfile is a file of `"DN" user` lines mapping certificate DNs
	// (the user certificate's subject, "/DC=ch/DC=cern/OU=Users/CN=...",
	// also for a proxy of it) to users.
	GridMapfile string
	// Operators are the users who see every user's transfers.
	Operators []string
	Now       func() time.Time
}

// NewAuth reads the htpasswd file and the grid-mapfile. Errors name the
// file and line, never a hash.
func NewAuth(o AuthOptions) (*Auth, error) {
	a := &Auth{clientCAs: o.ClientCAs, operators: map[string]bool{}, now: o.Now, ok: map[[32]byte]time.Time{}}
	if a.now == nil {
		a.now = time.Now
	}
	for _, op := range o.Operators {
		if op = strings.TrimSpace(op); op != "" {
			a.operators[op] = true
		}
	}
	if o.Htpasswd != "" {
		m, err := readHtpasswd(o.Htpasswd)
		if err != nil {
			return nil, err
		}
		a.passwords = m
	}
	if (o.ClientCAs == nil) != (o.GridMapfile == "") {
		return nil, errors.New("client certificates need both the CAs that issue them and a grid-mapfile that maps their DNs to users")
	}
	if o.GridMapfile != "" {
		m, err := readGridMapfile(o.GridMapfile)
		if err != nil {
			return nil, err
		}
		a.users = m
	}
	if a.passwords == nil && a.users == nil {
		return nil, errors.New("no way to authenticate: give an htpasswd file, or client CAs and a grid-mapfile")
	}
	return a, nil
}

// Certificates reports whether a accepts client certificates.
func (a *Auth) Certificates() bool { return a != nil && a.clientCAs != nil }

// TLSConfig is the TLS configuration of a server with cert: with client
// CAs (a may be nil: none) it asks for client certificates and verifies
// them and grid proxy chains itself (gridcert), which Go's verification
// refuses; a request without one may still log in with basic auth.
func (a *Auth) TLSConfig(cert tls.Certificate) *tls.Config {
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if !a.Certificates() {
		return cfg
	}
	cfg.ClientAuth = tls.RequestClientCert
	cfg.VerifyPeerCertificate = gridcert.VerifyPeer(a.clientCAs, a.now)
	return cfg
}

// viewer is who a request comes from.
type viewer struct {
	Name     string // "" when nobody is authenticated (no Auth)
	Operator bool
}

// identify returns the viewer of r, or the status and message of a
// refusal.
func (a *Auth) identify(r *http.Request) (*viewer, int, string) {
	if a == nil {
		return &viewer{Operator: true}, 0, ""
	}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 && a.clientCAs != nil {
		eec, err := gridcert.VerifyChain(r.TLS.PeerCertificates, a.clientCAs, a.now())
		if err != nil {
			return nil, http.StatusForbidden, "client certificate refused: " + err.Error()
		}
		dn := gridcert.FormatDN(eec.RawSubject)
		user, ok := a.users[dn]
		if !ok {
			return nil, http.StatusForbidden, fmt.Sprintf("certificate DN %s is not in the grid-mapfile", dn)
		}
		return &viewer{Name: user, Operator: a.operators[user]}, 0, ""
	}
	if user, pass, ok := r.BasicAuth(); ok && a.passwords != nil {
		if a.checkPassword(user, pass) {
			return &viewer{Name: user, Operator: a.operators[user]}, 0, ""
		}
		return nil, http.StatusUnauthorized, "wrong user name or password"
	}
	if a.passwords != nil {
		return nil, http.StatusUnauthorized, "log in with your aso user name and password"
	}
	return nil, http.StatusUnauthorized, "present a client certificate or a grid proxy"
}

// okFor is how long a checked password is taken without bcrypt again.
const okFor = 5 * time.Minute

// checkPassword compares pass with user's bcrypt hash, remembering a
// match for okFor (by a hash of user and password, never the password) so
// that each page does not cost a bcrypt comparison.
func (a *Auth) checkPassword(user, pass string) bool {
	key := sha256.Sum256([]byte(user + "\x00" + pass))
	now := a.now()
	a.mu.Lock()
	until, seen := a.ok[key]
	a.mu.Unlock()
	if seen && now.Before(until) {
		return true
	}
	hash, known := a.passwords[user]
	if !known {
		// the same work as for a known user, so that timing does not say
		// which users exist
		_ = bcrypt.CompareHashAndPassword(dummyHash, []byte(pass))
		return false
	}
	if bcrypt.CompareHashAndPassword(hash, []byte(pass)) != nil {
		return false
	}
	a.mu.Lock()
	if len(a.ok) > maxEntries {
		clear(a.ok)
	}
	a.ok[key] = now.Add(okFor)
	a.mu.Unlock()
	return true
}

var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("aso"), bcrypt.DefaultCost)

// readHtpasswd reads "user:hash" lines; only bcrypt hashes are accepted.
func readHtpasswd(path string) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := eachLine(path, func(n int, line string) error {
		user, hash, ok := strings.Cut(line, ":")
		if !ok || user == "" {
			return fmt.Errorf("htpasswd file %s line %d: want user:bcrypt-hash", path, n)
		}
		if _, err := bcrypt.Cost([]byte(hash)); err != nil {
			return fmt.Errorf("htpasswd file %s line %d (user %s): not a bcrypt hash (make one with htpasswd -B)", path, n, user)
		}
		out[user] = []byte(hash)
		return nil
	})
	return out, err
}

// readGridMapfile reads `"DN" user[,user...]` lines (the first user is
// taken).
func readGridMapfile(path string) (map[string]string, error) {
	out := map[string]string{}
	err := eachLine(path, func(n int, line string) error {
		var dn, rest string
		if strings.HasPrefix(line, `"`) {
			end := strings.Index(line[1:], `"`)
			if end < 0 {
				return fmt.Errorf("grid-mapfile %s line %d: the DN's closing quote is missing", path, n)
			}
			dn, rest = line[1:end+1], line[end+2:]
		} else {
			dn, rest, _ = strings.Cut(line, " ")
		}
		user, _, _ := strings.Cut(strings.TrimSpace(rest), ",")
		if !strings.HasPrefix(dn, "/") || user == "" {
			return fmt.Errorf("grid-mapfile %s line %d: want \"/DN\" user", path, n)
		}
		out[dn] = strings.TrimSpace(user)
		return nil
	})
	return out, err
}

// eachLine calls f on each line of path that is not blank or a comment.
func eachLine(path string, f func(n int, line string) error) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := f(n, line); err != nil {
			return err
		}
	}
	return sc.Err()
}

// scope returns the user whose transfers a request may see when it names
// user ("": none): user for an operator (every user when ""), the
// viewer's own user otherwise, or false when it names another user.
func (v *viewer) scope(user string) (string, bool) {
	if v.Operator {
		return user, true
	}
	if user != "" && subtle.ConstantTimeCompare([]byte(user), []byte(v.Name)) != 1 {
		return "", false
	}
	return v.Name, true
}
