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
	// Seed makes every simulated random choice (failures, reasons, sizes)
	// reproducible; job ids are version 1 UUIDs of the real clock, as FTS's.
	Seed int64
	// VO is the VO of bearer-token users; default "cms". X.509 users get
	// the VO of their VOMS proxy's first FQAN, or, with a plain proxy,
	// their delegation id as a virtual VO (as a real server does).
	VO string
	// UserDN is the DN of bearer-token users (X.509 users get their
	// certificate's DN); default DefaultUserDN.
	UserDN string
	// OAuth2 accepts bearer tokens, as a server with OAuth2 enabled does;
	// without it (and without Tokens) a bearer token gets 400
	// "Unsupported authentication method".
	OAuth2 bool

	// QueueDelay (SUBMITTED to READY), StartDelay (READY to ACTIVE) and
	// TransferTime (ACTIVE to FINISHED or FAILED) time a file's life in
	// simulated time. All zero: a file finishes at the first query after its
	// submission.
	QueueDelay, StartDelay, TransferTime time.Duration
	// TransferTimeOf, when set and positive for a file's source and
	// destination URLs, is its TransferTime: a slow link, say.
	TransferTimeOf func(source, destination string) time.Duration
	// FailureRate is the probability that an attempt fails.
	FailureRate float64
	// FailureReasons are the FTS reasons failures draw from, one at random
	// for each failed attempt, like "TRANSFER [110] Connection timed out"
	// (recoverable: retried by FTS) or "SOURCE [2] No such file or
	// directory" (not); default DefaultFailureReasons. ReadFailureReasons
	// reads them from a file.
	FailureReasons []string
	// DefaultRetry is the server's retry count used for jobs that ask for
	// retry 0.
	DefaultRetry int
	// Latency is added (in real time) to every response.
	Latency time.Duration
	// LocalFiles accepts file:// URLs (real FTS refuses them) and really
	// copies the bytes when both ends are file://.
	LocalFiles bool
	// LocalOnly, with LocalFiles, refuses every URL that is not file://
	// (400 at submission), so that nothing is reported done that was not
	// copied: the in-process simulator of aso run.
	LocalOnly bool
	// RequireDelegation makes X.509 clients delegate a proxy before they
	// can submit (419 otherwise), as a real FTS does.
	RequireDelegation bool
	// TLS serves HTTPS; nil serves plain HTTP (bearer tokens only).
	TLS *TLSOptions
	// RefuseUnmanagedTokens refuses submissions with params.unmanaged_tokens
	// (400), as a server without AllowNonManagedTokens does.
	RefuseUnmanagedTokens bool
	// Tokens are the accepted bearer tokens, and enable OAuth2; empty with
	// OAuth2 accepts any non-empty token.
	Tokens []string
	// CheckDuplicates is FTS's fts3.CheckDuplicates for every VO: a job
	// with a single-source file whose destination an active file (of any
	// job, or of the same job) already writes is refused as a whole with
	// 409 "The submission is duplicated ...", and nothing of it is stored.
	CheckDuplicates bool
}

// oauth2 reports whether bearer tokens are accepted.
func (o Options) oauth2() bool { return o.OAuth2 || len(o.Tokens) > 0 }

// TLSOptions configure HTTPS and client-certificate authentication.
type TLSOptions struct {
	// Cert is the server's certificate and key.
	Cert tls.Certificate
	// ClientCAs verify client certificates and proxy chains; nil asks for no
	// client certificate. A connection without one may still use a bearer
	// token.
	ClientCAs *x509.CertPool
}

// DefaultUserDN is the DN of bearer-token users when Options.UserDN is empty.
const DefaultUserDN = "/DC=org/DC=asyncstageout/OU=Users/CN=fts-sim user"

// DefaultFailureReasons are the reasons random failures draw from when
// Options.FailureReasons is empty: real texts of the HTTP, XRootD, SRM and
// GridFTP plugins (failures.txt), recoverable or not by FTS's rules.
var DefaultFailureReasons = mustReadReasons(defaultReasons)

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
