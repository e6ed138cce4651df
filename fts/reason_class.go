package fts

import (
	"strings"

	"github.com/asyncstageout/aso/state"
)

// classRetries says which classes another attempt can help; unknown is
// not among them: Classify follows FTS's judgement of its failures.
var classRetries = map[state.ErrorClass]bool{
	state.ClassTimeout: true, state.ClassStorageUnavailable: true, state.ClassQueueExpired: true, state.ClassCredentials: true,
	state.ClassDestinationBusy: true, state.ClassTLS: true,
}

// Failure is the classification of one failed file.
type Failure struct {
	Reason    Reason
	Class     state.ErrorClass
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
	case f.Class != state.ClassUnknown:
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
func (r Reason) class() state.ErrorClass {
	if tlsCurlCodes[r.CurlCode] {
		return state.ClassTLS
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
func (r Reason) errnoClass() state.ErrorClass {
	switch r.Errno {
	case enoent:
		if r.Scope == ScopeSource {
			return state.ClassSourceMissing
		}
	case eperm, eacces:
		if r.credentialCode() {
			return state.ClassCredentials
		}
		return r.permission()
	case erofs:
		if r.Scope != ScopeSource {
			return state.ClassDestinationPermission
		}
	case eexist:
		return r.resolve(classExisting)
	case enospc, edquot, efbig:
		return state.ClassNoSpace
	case etimedout, etime:
		return state.ClassTimeout
	case ecanceled:
		return state.ClassCanceled
	case ekeyexpired, ekeyrejected:
		return state.ClassCredentials
	case econnrefused, econnreset, econnaborted, ehostunreach, enetunreach, enetdown, ehostdown,
		enotconn, epipe, eagain, ebusy, ecomm, eremoteio:
		return state.ClassStorageUnavailable
	case eprotonosupport, eopnotsupp, enosys, eisdir, enotdir, enametoolong, e2big:
		return state.ClassUnsupported
	}
	return ""
}

// permission is the class of a refusal: credentials when the message says
// the credential itself expired or failed to authenticate (the errno and
// codes of a refusal do not tell that apart), else the permission class of
// the failing side; a third-party copy (TRANSFER scope) is run by the
// destination.
func (r Reason) permission() state.ErrorClass {
	msg := strings.ToLower(r.Message)
	if hasAny(msg, credentialTexts) {
		return state.ClassCredentials
	}
	if hasAny(msg, tlsTexts) {
		return state.ClassTLS
	}
	if r.Scope == ScopeSource {
		return state.ClassSourcePermission
	}
	return state.ClassDestinationPermission
}

// credentialCode: a code that says the credentials were refused rather
// than the path (HTTP 401, SRM authentication failure, FTP 530).
func (r Reason) credentialCode() bool {
	return r.HTTPStatus == 401 || r.SRMStatus == "SRM_AUTHENTICATION_FAILURE" || r.FTPCode == 530
}

// codeClass classifies by the codes of the message; "" when none tells.
func (r Reason) codeClass() state.ErrorClass {
	if r.credentialCode() {
		return state.ClassCredentials
	}
	for _, c := range [...]state.ErrorClass{
		r.resolve(categoryClasses[r.Category]), r.resolve(srmClasses[r.SRMStatus]), r.resolve(xrootdClasses[r.XRootDCode]),
		r.httpClass(), curlClasses[r.CurlCode], ftpClasses[r.FTPCode],
	} {
		if c != "" {
			return c
		}
	}
	return ""
}

func (r Reason) httpClass() state.ErrorClass {
	switch s := r.HTTPStatus; {
	case s == 403:
		return r.permission()
	case s == 404 || s == 410:
		if r.Scope == ScopeSource {
			return state.ClassSourceMissing
		}
	case s == 409:
		return r.resolve(classExisting)
	case s == 408:
		return state.ClassTimeout
	case s == 507:
		return state.ClassNoSpace
	case s == 501:
		return state.ClassUnsupported
	case s >= 500 && s <= 599:
		return state.ClassStorageUnavailable
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
	classMissing  state.ErrorClass = "(missing)"
	classExisting state.ErrorClass = "(existing)"
	classRefused  state.ErrorClass = "(refused)"
)

// resolve turns a table's class into the reason's class.
func (r Reason) resolve(c state.ErrorClass) state.ErrorClass {
	switch c {
	case classMissing:
		if r.Scope == ScopeSource {
			return state.ClassSourceMissing
		}
		return ""
	case classExisting:
		if r.Scope == ScopeSource {
			return ""
		}
		return state.ClassDestinationExists
	case classRefused:
		return r.permission()
	}
	return c
}

// curlClasses reads libcurl's error numbers (Davix).
var curlClasses = map[int]state.ErrorClass{
	28: state.ClassTimeout, 1: state.ClassUnsupported, 3: state.ClassUnsupported,
	5: state.ClassStorageUnavailable, 6: state.ClassStorageUnavailable, 7: state.ClassStorageUnavailable, 35: state.ClassStorageUnavailable,
	52: state.ClassStorageUnavailable, 55: state.ClassStorageUnavailable, 56: state.ClassStorageUnavailable,
}

// tlsCurlCodes are libcurl's errors of a TLS handshake that failed on a
// certificate: 51 and 60 the peer's certificate (or its CA), 58 the
// client's, 77 and 82 the CA and CRL files, 83 the issuer, 90 a pinned
// key, 91 the certificate's status. 35, a handshake that failed (a reset
// as well as a certificate), stays storage_unavailable.
var tlsCurlCodes = map[int]bool{51: true, 58: true, 60: true, 77: true, 82: true, 83: true, 90: true, 91: true}

// xrootdClasses reads the XRootD server's kXR error codes.
var xrootdClasses = map[int]state.ErrorClass{
	3011: classMissing,                                 // kXR_NotFound
	3010: classRefused,                                 // kXR_NotAuthorized
	3009: state.ClassNoSpace, 3021: state.ClassNoSpace, // kXR_NoSpace, kXR_overQuota
	3018: classExisting,                                        // kXR_ItExists
	3019: state.ClassChecksumMismatch,                          // kXR_ChkSumErr
	3012: state.ClassStorageUnavailable,                        // kXR_ServerError
	3014: state.ClassStorageUnavailable,                        // kXR_noserver
	3024: state.ClassStorageUnavailable,                        // kXR_Overloaded
	3013: state.ClassUnsupported, 3016: state.ClassUnsupported, // kXR_Unsupported, kXR_isDirectory
	3017: state.ClassCanceled, // kXR_Cancelled
}

// srmClasses reads the SRM v2.2 status codes.
var srmClasses = map[string]state.ErrorClass{
	"SRM_INVALID_PATH": classMissing, "SRM_AUTHORIZATION_FAILURE": classRefused,
	"SRM_NO_FREE_SPACE": state.ClassNoSpace, "SRM_EXCEED_ALLOCATION": state.ClassNoSpace, "SRM_NO_USER_SPACE": state.ClassNoSpace,
	"SRM_DUPLICATION_ERROR": classExisting, "SRM_REQUEST_TIMED_OUT": state.ClassTimeout,
	"SRM_ABORTED": state.ClassCanceled, "SRM_NOT_SUPPORTED": state.ClassUnsupported,
	"SRM_INTERNAL_ERROR": state.ClassStorageUnavailable, "SRM_FILE_UNAVAILABLE": state.ClassStorageUnavailable,
	"SRM_FILE_BUSY": state.ClassStorageUnavailable, "SRM_TOO_MANY_REQUESTS": state.ClassStorageUnavailable,
}

// ftpClasses reads GridFTP's FTP reply codes; 550 says nothing by itself
// (a missing file and a refused permission share it).
var ftpClasses = map[int]state.ErrorClass{
	452: state.ClassNoSpace, 421: state.ClassStorageUnavailable, 425: state.ClassStorageUnavailable, 426: state.ClassStorageUnavailable,
}

// categoryClasses reads the category of the older reason format.
var categoryClasses = map[string]state.ErrorClass{
	"INVALID_PATH": classMissing, "PERMISSION": classRefused,
	"FILE_EXIST": classExisting, "FILE_EXISTS": classExisting,
	"NO_SPACE_LEFT": state.ClassNoSpace, "SECURITY_ERROR": state.ClassCredentials, "CHECKSUM_MISMATCH": state.ClassChecksumMismatch,
	"TRANSFER_TIMEOUT": state.ClassTimeout, "REQUEST_TIMEOUT": state.ClassTimeout, "OPERATION_TIMEOUT": state.ClassTimeout,
	"CONNECTION": state.ClassStorageUnavailable, "CONNECTION_ERROR": state.ClassStorageUnavailable,
	"COMMUNICATION_ERROR": state.ClassStorageUnavailable, "STORAGE_INTERNAL_ERROR": state.ClassStorageUnavailable,
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
	class state.ErrorClass
}{
	{queueTexts, state.ClassQueueExpired},
	{timeoutTexts, state.ClassTimeout},
	{canceledTexts, state.ClassCanceled},
	{credentialTexts, state.ClassCredentials},
	{tlsTexts, state.ClassTLS},
	{existsTexts, classExisting},
	{noSpaceTexts, state.ClassNoSpace},
	{permissionTexts, classRefused},
	{missingTexts, classMissing},
	{unavailableTexts, state.ClassStorageUnavailable},
	{unsupportedTexts, state.ClassUnsupported},
}

func (r Reason) textClass() state.ErrorClass {
	m := strings.ToLower(r.Message)
	if strings.Contains(m, "checksum") && hasAny(m, []string{"do not match", "does not match", "mismatch", "differ"}) &&
		!hasAny(m, queueTexts) {
		return state.ClassChecksumMismatch
	}
	for _, t := range textOrder {
		if hasAny(m, t.texts) {
			if c := r.resolve(t.class); c != "" {
				return c
			}
		}
	}
	return state.ClassUnknown
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
