package fts

import "strings"

// ErrorClass names the cause of a failed transfer in a small, stable
// vocabulary that operators can alert on and users can read. The class
// decides whether another attempt can help (Retryable) and whether the
// destination copy is the transfer's own to delete (DestinationOurs).
type ErrorClass string

// The error classes. docs/operators.md ("Error classes") documents each.
const (
	ClassSourceMissing         ErrorClass = "source_missing"
	ClassSourcePermission      ErrorClass = "source_permission"
	ClassDestinationExists     ErrorClass = "destination_exists"
	ClassDestinationPermission ErrorClass = "destination_permission"
	// ClassDestinationBusy is not a failure reason of a file: FTS refused
	// a submission ("The submission is duplicated") because an active FTS
	// transfer already writes the destination.
	ClassDestinationBusy    ErrorClass = "destination_busy"
	ClassNoSpace            ErrorClass = "no_space"
	ClassChecksumMismatch   ErrorClass = "checksum_mismatch"
	ClassTimeout            ErrorClass = "timeout"
	ClassStorageUnavailable ErrorClass = "storage_unavailable"
	ClassQueueExpired       ErrorClass = "queue_expired"
	ClassCanceled           ErrorClass = "canceled"
	ClassCredentials        ErrorClass = "credentials"
	// ClassTLS: a storage's TLS handshake failed on a certificate (its
	// host certificate, or the CA or CRL that checks it): the site's to
	// fix, not the user's proxy or the destination's quota.
	ClassTLS         ErrorClass = "tls"
	ClassUnsupported ErrorClass = "unsupported"
	// ClassSameFile is not FTS's: the source and destination PFNs of a
	// transfer name one file, and aso never submits it (it would overwrite
	// its own source, and the cleanup of a failed attempt delete it).
	ClassSameFile ErrorClass = "same_file"
	ClassUnknown  ErrorClass = "unknown"
)

// ErrorClasses lists every class, in the order the status command shows them.
var ErrorClasses = []ErrorClass{
	ClassSourceMissing, ClassSourcePermission, ClassDestinationExists, ClassDestinationPermission,
	ClassDestinationBusy, ClassNoSpace, ClassChecksumMismatch, ClassTimeout, ClassStorageUnavailable, ClassQueueExpired,
	ClassCanceled, ClassCredentials, ClassTLS, ClassUnsupported, ClassSameFile, ClassUnknown,
}

// Valid reports whether c is one of ErrorClasses.
func (c ErrorClass) Valid() bool {
	for _, v := range ErrorClasses {
		if c == v {
			return true
		}
	}
	return false
}

// classRetries says which classes another attempt can help; unknown is
// not among them: Classify follows FTS's judgement of its failures.
var classRetries = map[ErrorClass]bool{
	ClassTimeout: true, ClassStorageUnavailable: true, ClassQueueExpired: true, ClassCredentials: true,
	ClassDestinationBusy: true, ClassTLS: true,
}

// DestinationOurs reports whether the destination copy of a transfer that
// failed with class c may be deleted: FTS may have written it. Not when the
// destination already held a file FTS refused to overwrite
// (destination_exists), nor when the transfer never left FTS's queue
// (queue_expired), nor when FTS refused to take it because another transfer
// writes there (destination_busy): whatever is there was not written by
// this transfer; nor, above all, when the destination is the source
// (same_file).
func (c ErrorClass) DestinationOurs() bool {
	return c != ClassDestinationExists && c != ClassQueueExpired && c != ClassDestinationBusy && c != ClassSameFile
}

// Failure is the classification of one failed file.
type Failure struct {
	Reason    Reason
	Class     ErrorClass
	Retryable bool
}

// Classify maps an FTS failure reason to its error class and retry
// decision. recoverable is the file's "recoverable" flag from the status
// reply, nil when the server sent none; it decides the retry of unknown
// failures, which otherwise follow FTS's own errno rules (and are retried
// when those do not forbid it).
func Classify(reason string, recoverable *bool) Failure {
	r := ParseReason(reason)
	f := Failure{Reason: r, Class: r.class()}
	switch {
	case f.Class != ClassUnknown:
		f.Retryable = classRetries[f.Class]
	case recoverable != nil:
		f.Retryable = *recoverable
	default:
		f.Retryable = !ftsFatalErrno(r.Scope, r.Errno)
	}
	return f
}

// Linux errno values the classification reads (FTS reports Linux numbers
// whatever the platform aso runs on).
const (
	eperm           = 1
	enoent          = 2
	e2big           = 7
	eagain          = 11
	eacces          = 13
	ebusy           = 16
	eexist          = 17
	enotdir         = 20
	eisdir          = 21
	efbig           = 27
	enospc          = 28
	erofs           = 30
	epipe           = 32
	enametoolong    = 36
	enosys          = 38
	etime           = 62
	ecomm           = 70
	eprotonosupport = 93
	eopnotsupp      = 95
	enetdown        = 100
	enetunreach     = 101
	econnaborted    = 103
	econnreset      = 104
	enotconn        = 107
	etimedout       = 110
	econnrefused    = 111
	ehostdown       = 112
	ehostunreach    = 113
	eremoteio       = 121
	edquot          = 122
	ecanceled       = 125
	ekeyexpired     = 127
	ekeyrejected    = 129
)

// class decides the class: a certificate error of libcurl first (its code
// is more precise than the errno gfal2 maps it to), then the errno with
// the scope, then the codes in the message (HTTP, curl, XRootD, SRM, FTP,
// the older format's category), and the message text only when neither
// says anything.
func (r Reason) class() ErrorClass {
	if tlsCurlCodes[r.CurlCode] {
		return ClassTLS
	}
	if c := r.errnoClass(); c != "" {
		return c
	}
	if c := r.codeClass(); c != "" {
		return c
	}
	return r.textClass()
}

// errnoClass classifies by errno and scope; "" when the errno is absent or
// does not tell the cause (EIO, EINVAL, EPROTO...).
func (r Reason) errnoClass() ErrorClass {
	switch r.Errno {
	case enoent:
		if r.Scope == ScopeSource {
			return ClassSourceMissing
		}
	case eperm, eacces:
		if r.credentialCode() {
			return ClassCredentials
		}
		return r.permission()
	case erofs:
		if r.Scope != ScopeSource {
			return ClassDestinationPermission
		}
	case eexist:
		return r.resolve(classExisting)
	case enospc, edquot, efbig:
		return ClassNoSpace
	case etimedout, etime:
		return ClassTimeout
	case ecanceled:
		return ClassCanceled
	case ekeyexpired, ekeyrejected:
		return ClassCredentials
	case econnrefused, econnreset, econnaborted, ehostunreach, enetunreach, enetdown, ehostdown,
		enotconn, epipe, eagain, ebusy, ecomm, eremoteio:
		return ClassStorageUnavailable
	case eprotonosupport, eopnotsupp, enosys, eisdir, enotdir, enametoolong, e2big:
		return ClassUnsupported
	}
	return ""
}

// permission is the class of a refusal: credentials when the message says
// the credential itself expired or failed to authenticate (the errno and
// codes of a refusal do not tell that apart), else the permission class of
// the failing side; a third-party copy (TRANSFER scope) is run by the
// destination.
func (r Reason) permission() ErrorClass {
	msg := strings.ToLower(r.Message)
	if hasAny(msg, credentialTexts) {
		return ClassCredentials
	}
	if hasAny(msg, tlsTexts) {
		return ClassTLS
	}
	if r.Scope == ScopeSource {
		return ClassSourcePermission
	}
	return ClassDestinationPermission
}

// credentialCode: a code that says the credentials were refused rather
// than the path (HTTP 401, SRM authentication failure, FTP 530).
func (r Reason) credentialCode() bool {
	return r.HTTPStatus == 401 || r.SRMStatus == "SRM_AUTHENTICATION_FAILURE" || r.FTPCode == 530
}

// codeClass classifies by the codes of the message; "" when none tells.
func (r Reason) codeClass() ErrorClass {
	if r.credentialCode() {
		return ClassCredentials
	}
	for _, c := range [...]ErrorClass{
		r.resolve(categoryClasses[r.Category]), r.resolve(srmClasses[r.SRMStatus]), r.resolve(xrootdClasses[r.XRootDCode]),
		r.httpClass(), curlClasses[r.CurlCode], ftpClasses[r.FTPCode],
	} {
		if c != "" {
			return c
		}
	}
	return ""
}

func (r Reason) httpClass() ErrorClass {
	switch s := r.HTTPStatus; {
	case s == 403:
		return r.permission()
	case s == 404 || s == 410:
		if r.Scope == ScopeSource {
			return ClassSourceMissing
		}
	case s == 409:
		return r.resolve(classExisting)
	case s == 408:
		return ClassTimeout
	case s == 507:
		return ClassNoSpace
	case s == 501:
		return ClassUnsupported
	case s >= 500 && s <= 599:
		return ClassStorageUnavailable
	}
	return ""
}

// Stand-ins of the code tables, resolved by the reason's scope:
// classMissing is source_missing on the SOURCE side and says nothing on
// the other (a missing parent directory at the destination is not a
// missing source); classExisting is destination_exists except on the
// SOURCE side, where an existing file says nothing; classRefused is the
// refusal of the failing side.
const (
	classMissing  ErrorClass = "(missing)"
	classExisting ErrorClass = "(existing)"
	classRefused  ErrorClass = "(refused)"
)

// resolve turns a table's class into the reason's class.
func (r Reason) resolve(c ErrorClass) ErrorClass {
	switch c {
	case classMissing:
		if r.Scope == ScopeSource {
			return ClassSourceMissing
		}
		return ""
	case classExisting:
		if r.Scope == ScopeSource {
			return ""
		}
		return ClassDestinationExists
	case classRefused:
		return r.permission()
	}
	return c
}

// curlClasses reads libcurl's error numbers (Davix).
var curlClasses = map[int]ErrorClass{
	28: ClassTimeout, 1: ClassUnsupported, 3: ClassUnsupported,
	5: ClassStorageUnavailable, 6: ClassStorageUnavailable, 7: ClassStorageUnavailable, 35: ClassStorageUnavailable,
	52: ClassStorageUnavailable, 55: ClassStorageUnavailable, 56: ClassStorageUnavailable,
}

// tlsCurlCodes are libcurl's errors of a TLS handshake that failed on a
// certificate: 51 and 60 the peer's certificate (or its CA), 58 the
// client's, 77 and 82 the CA and CRL files, 83 the issuer, 90 a pinned
// key, 91 the certificate's status. 35, a handshake that failed (a reset
// as well as a certificate), stays storage_unavailable.
var tlsCurlCodes = map[int]bool{51: true, 58: true, 60: true, 77: true, 82: true, 83: true, 90: true, 91: true}

// xrootdClasses reads the XRootD server's kXR error codes.
var xrootdClasses = map[int]ErrorClass{
	3011: classMissing,                     // kXR_NotFound
	3010: classRefused,                     // kXR_NotAuthorized
	3009: ClassNoSpace, 3021: ClassNoSpace, // kXR_NoSpace, kXR_overQuota
	3018: classExisting,                            // kXR_ItExists
	3019: ClassChecksumMismatch,                    // kXR_ChkSumErr
	3012: ClassStorageUnavailable,                  // kXR_ServerError
	3014: ClassStorageUnavailable,                  // kXR_noserver
	3024: ClassStorageUnavailable,                  // kXR_Overloaded
	3013: ClassUnsupported, 3016: ClassUnsupported, // kXR_Unsupported, kXR_isDirectory
	3017: ClassCanceled, // kXR_Cancelled
}

// srmClasses reads the SRM v2.2 status codes.
var srmClasses = map[string]ErrorClass{
	"SRM_INVALID_PATH": classMissing, "SRM_AUTHORIZATION_FAILURE": classRefused,
	"SRM_NO_FREE_SPACE": ClassNoSpace, "SRM_EXCEED_ALLOCATION": ClassNoSpace, "SRM_NO_USER_SPACE": ClassNoSpace,
	"SRM_DUPLICATION_ERROR": classExisting, "SRM_REQUEST_TIMED_OUT": ClassTimeout,
	"SRM_ABORTED": ClassCanceled, "SRM_NOT_SUPPORTED": ClassUnsupported,
	"SRM_INTERNAL_ERROR": ClassStorageUnavailable, "SRM_FILE_UNAVAILABLE": ClassStorageUnavailable,
	"SRM_FILE_BUSY": ClassStorageUnavailable, "SRM_TOO_MANY_REQUESTS": ClassStorageUnavailable,
}

// ftpClasses reads GridFTP's FTP reply codes; 550 says nothing by itself
// (a missing file and a refused permission share it).
var ftpClasses = map[int]ErrorClass{
	452: ClassNoSpace, 421: ClassStorageUnavailable, 425: ClassStorageUnavailable, 426: ClassStorageUnavailable,
}

// categoryClasses reads the category of the older reason format.
var categoryClasses = map[string]ErrorClass{
	"INVALID_PATH": classMissing, "PERMISSION": classRefused,
	"FILE_EXIST": classExisting, "FILE_EXISTS": classExisting,
	"NO_SPACE_LEFT": ClassNoSpace, "SECURITY_ERROR": ClassCredentials, "CHECKSUM_MISMATCH": ClassChecksumMismatch,
	"TRANSFER_TIMEOUT": ClassTimeout, "REQUEST_TIMEOUT": ClassTimeout, "OPERATION_TIMEOUT": ClassTimeout,
	"CONNECTION": ClassStorageUnavailable, "CONNECTION_ERROR": ClassStorageUnavailable,
	"COMMUNICATION_ERROR": ClassStorageUnavailable, "STORAGE_INTERNAL_ERROR": ClassStorageUnavailable,
}

// The texts of the last resort, lower case, for reasons whose errno and
// codes say nothing: FTS's own messages for queue expiry, cancels, stalled
// transfers and checksum comparisons, and the common plugin texts.
var (
	queueTexts      = []string{"stayed in the queue for too long", "max-time-in-queue"}
	timeoutTexts    = []string{"timed out", "timeout", "operation expired", "probably stalled"}
	canceledTexts   = []string{"canceled", "cancelled"}
	credentialTexts = []string{"proxy expired", "certificate has expired", "credentials expired", "credential has expired",
		"token has expired", "token expired", "authentication failed", "crl has expired", "authorization expired"}
	tlsTexts         = []string{"certificate verify failed", "ssl certificate problem", "unable to get local issuer certificate", "self signed certificate", "self-signed certificate", "certificate revoked"}
	existsTexts      = []string{"file exists", "overwrite is not enabled"}
	noSpaceTexts     = []string{"no space left", "quota exceeded", "not enough space", "insufficient storage", "no free space"}
	permissionTexts  = []string{"permission denied", "operation not permitted", "permission refused"}
	missingTexts     = []string{"no such file or directory", "file not found", "does not exist"}
	unavailableTexts = []string{"connection refused", "connection reset", "couldn't connect", "could not connect",
		"no route to host", "name or service not known", "service unavailable", "end of file",
		"broken pipe", "unexpected server error"}
	unsupportedTexts = []string{"protocol not supported", "not supported", "unsupported", "can not transfer local files"}
)

// textOrder is the order the texts are tried in: the most specific first
// (a queue expiry says "canceled" and "timeout"; a performance-marker
// timeout says "canceled").
var textOrder = []struct {
	texts []string
	class ErrorClass
}{
	{queueTexts, ClassQueueExpired},
	{timeoutTexts, ClassTimeout},
	{canceledTexts, ClassCanceled},
	{credentialTexts, ClassCredentials},
	{tlsTexts, ClassTLS},
	{existsTexts, classExisting},
	{noSpaceTexts, ClassNoSpace},
	{permissionTexts, classRefused},
	{missingTexts, classMissing},
	{unavailableTexts, ClassStorageUnavailable},
	{unsupportedTexts, ClassUnsupported},
}

func (r Reason) textClass() ErrorClass {
	m := strings.ToLower(r.Message)
	if strings.Contains(m, "checksum") && hasAny(m, []string{"do not match", "does not match", "mismatch", "differ"}) &&
		!hasAny(m, queueTexts) {
		return ClassChecksumMismatch
	}
	for _, t := range textOrder {
		if hasAny(m, t.texts) {
			if c := r.resolve(t.class); c != "" {
				return c
			}
		}
	}
	return ClassUnknown
}

func hasAny(s string, needles []string) bool {
	for _, n := range needles {
		if strings.Contains(s, n) {
			return true
		}
	}
	return false
}

// ftsFatalErrno is FTS's own rule (url-copy heuristics) for errnos that are
// never recoverable on their scope, applied to unknown failures when the
// server did not send its recoverable flag.
func ftsFatalErrno(scope string, errno int) bool {
	var fatal []int
	switch scope {
	case ScopeSource:
		fatal = []int{enoent, eperm, eacces, eisdir, enametoolong, e2big, enotdir, eprotonosupport}
	case ScopeDestination:
		fatal = []int{eperm, eacces, eisdir, enametoolong, e2big, eprotonosupport, eexist, erofs}
	case ScopeTransfer, ScopeGeneral:
		fatal = []int{enospc, eperm, eacces, eexist, efbig, erofs, enametoolong, eprotonosupport}
	}
	if errno == ecanceled {
		return true
	}
	for _, n := range fatal {
		if n == errno {
			return true
		}
	}
	return false
}
