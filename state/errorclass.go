package state

// ErrorClass names the cause of a failed transfer in a small, stable
// vocabulary that operators can alert on and users can read: a field of
// the transfer document (Transfer.ErrorClass), which the FTS client's
// classification (fts.Classify) fills. The class
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
