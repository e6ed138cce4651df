package ftssim

import (
	"crypto/tls"
	"crypto/x509"
	"time"
)

// Options configure a Simulator. The zero value is a usable simulator on
// real time where every file finishes at the first status query after its
// submission.
type Options struct {
	// Now is the simulated clock; nil means real time, sped up by Speed.
	Now func() time.Time
	// Speed is the real-time speed factor when Now is nil (1, or 0, means
	// real time; 60 makes a simulated minute pass every real second).
	Speed float64
	// Seed makes every simulated random choice (failures, reasons, sizes,
	// job ids) reproducible.
	Seed int64
	// VO is the VO of every user; default "cms".
	VO string
	// UserDN is the DN of bearer-token users (X.509 users get their
	// certificate's DN); default DefaultUserDN.
	UserDN string

	// QueueDelay (SUBMITTED to READY), StartDelay (READY to ACTIVE) and
	// TransferTime (ACTIVE to FINISHED or FAILED) time a file's life in
	// simulated time. All zero: a file finishes at the first query after its
	// submission.
	QueueDelay, StartDelay, TransferTime time.Duration
	// FailureRate is the probability that an attempt fails.
	FailureRate float64
	// FailureReasons are the FTS reasons failures draw from, like
	// "TRANSFER [110] Connection timed out" (recoverable: retried by FTS) or
	// "SOURCE [2] No such file or directory" (not); default
	// DefaultFailureReasons.
	FailureReasons []string
	// DefaultRetry is the server's retry count used for jobs that ask for
	// retry 0.
	DefaultRetry int
	// Latency is added (in real time) to every response.
	Latency time.Duration
	// LocalFiles accepts file:// URLs (real FTS refuses them) and really
	// copies the bytes when both ends are file://.
	LocalFiles bool
	// RequireDelegation makes X.509 clients delegate a proxy before they
	// can submit (419 otherwise), as a real FTS does.
	RequireDelegation bool
	// TLS serves HTTPS; nil serves plain HTTP (bearer tokens only).
	TLS *TLSOptions
	// Tokens are the accepted bearer tokens; empty accepts any non-empty
	// token.
	Tokens []string
}

// TLSOptions configure HTTPS and client-certificate authentication.
type TLSOptions struct {
	// Cert is the server's certificate and key.
	Cert tls.Certificate
	// ClientCAs verify client certificates and proxy chains; nil asks for no
	// client certificate.
	ClientCAs *x509.CertPool
	// RequireClientCert refuses TLS connections without a client
	// certificate; otherwise bearer tokens work too.
	RequireClientCert bool
}

// DefaultUserDN is the DN of bearer-token users when Options.UserDN is empty.
const DefaultUserDN = "/DC=org/DC=asyncstageout/OU=Users/CN=fts-sim user"

// DefaultFailureReasons are the reasons random failures draw from when
// Options.FailureReasons is empty: two recoverable, two not.
var DefaultFailureReasons = []string{
	"TRANSFER [110] Connection timed out",
	"TRANSFER [70] Communication error on send",
	"SOURCE [2] No such file or directory",
	"DESTINATION [13] Permission denied",
}

func (o Options) withDefaults() Options {
	if o.VO == "" {
		o.VO = "cms"
	}
	if o.UserDN == "" {
		o.UserDN = DefaultUserDN
	}
	if o.Speed <= 0 {
		o.Speed = 1
	}
	if len(o.FailureReasons) == 0 {
		o.FailureReasons = DefaultFailureReasons
	}
	return o
}
