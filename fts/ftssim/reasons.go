package ftssim

import (
	"regexp"
	"strconv"
	"strings"
)

// Errno values FTS's retry heuristics look at (Linux numbering, as FTS
// reports them whatever the platform the simulator runs on).
const (
	errEPERM           = 1
	errEIO             = 5
	errENOENT          = 2
	errE2BIG           = 7
	errEFAULT          = 14
	errEACCES          = 13
	errEEXIST          = 17
	errENOTDIR         = 20
	errEISDIR          = 21
	errEINVAL          = 22
	errEFBIG           = 27
	errENOSPC          = 28
	errEROFS           = 30
	errENAMETOOLONG    = 36
	errEPROTONOSUPPORT = 93
	errETIMEDOUT       = 110
	errECANCELED       = 125
)

var reasonRE = regexp.MustCompile(`^(SOURCE|DESTINATION|TRANSFER|GENERAL_FAILURE) \[(\d+)\] (.*)$`)

// parseReason splits an FTS reason "<SCOPE> [<errno>] <message>".
func parseReason(reason string) (scope string, errno int, msg string) {
	m := reasonRE.FindStringSubmatch(reason)
	if m == nil {
		return "", 0, reason
	}
	n, _ := strconv.Atoi(m[2])
	return m[1], n, m[3]
}

func errnoOf(reason string) int {
	_, n, _ := parseReason(reason)
	return n
}

var (
	impliesRetry = []string{
		"performance marker", "Name or service not known", "Connection timed out",
		"end-of-file was reached", "end of file occurred", "SRM_INTERNAL_ERROR",
		"was forcefully killed", "operation timeout",
	}
	impliesNoRetry = []string{
		"proxy expired", "with an error 550 File not found", "File exists and overwrite",
		"No such file or directory", "SRM_INVALID_PATH", "The certificate has expired",
		"The available CRL has expired", "SRM Authentication failed", "SRM_DUPLICATION_ERROR",
		"SRM_AUTHENTICATION_FAILURE", "SRM_NO_FREE_SPACE", "digest too big for rsa key",
		"Can not determine address of local host", "Permission denied",
		"System error in write into HDFS", "File exists", "checksum do not match", "CHECKSUM MISMATCH",
		"The source file is not ONLINE",
	}
	noRetryErrno = map[string][]int{
		"SOURCE":      {errENOENT, errEPERM, errEACCES, errEISDIR, errENAMETOOLONG, errE2BIG, errENOTDIR, errEPROTONOSUPPORT},
		"DESTINATION": {errEPERM, errEACCES, errEISDIR, errE2BIG, errEROFS, errEFAULT, errENAMETOOLONG, errEPROTONOSUPPORT, errEEXIST},
		"TRANSFER":    {errENOSPC, errEPERM, errEACCES, errEEXIST, errEFBIG, errEROFS, errENAMETOOLONG, errEPROTONOSUPPORT},
	}
)

// Recoverable reports whether FTS retries a failed attempt with this
// reason when the job has retries left: retryTransfer of FTS 3.12 and
// later, which url-copy applies to every failed attempt and the simulator
// to the reasons it draws. Messages that imply a retry, then ETIMEDOUT,
// say yes; ECANCELED and messages that forbid a retry say no; otherwise
// the errno decides, by scope (GENERAL_FAILURE and reasons without a scope
// fall under TRANSFER). Servers before 3.12 retried EEXIST, EROFS and
// EFAULT at the DESTINATION.
func Recoverable(reason string) bool {
	scope, errno, msg := parseReason(reason)
	if containsAny(msg, impliesRetry) || errno == errETIMEDOUT {
		return true
	}
	if errno == errECANCELED || containsAny(msg, impliesNoRetry) {
		return false
	}
	if scope != "SOURCE" && scope != "DESTINATION" {
		scope = "TRANSFER"
	}
	for _, n := range noRetryErrno[scope] {
		if n == errno {
			return false
		}
	}
	return true
}

func containsAny(s string, needles []string) bool {
	for _, n := range needles {
		if strings.Contains(s, n) {
			return true
		}
	}
	return false
}
