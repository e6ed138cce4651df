package state

import (
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Request is what a user asks for: one file from one site to another. It is
// the input of Enqueue and of `aso enqueue`.
type Request struct {
	User           string            `json:"user"`
	Group          string            `json:"group,omitempty"`
	Role           string            `json:"role,omitempty"`
	Source         string            `json:"source"`
	Destination    string            `json:"destination"`
	SourceLFN      string            `json:"source_lfn"`
	DestinationLFN string            `json:"destination_lfn"`
	Size           int64             `json:"size"`
	Checksums      map[string]string `json:"checksums,omitempty"`
	Priority       int               `json:"priority,omitempty"`
	DependsOn      []string          `json:"depends_on,omitempty"`
	// Activity is the transfer's network activity for its scitag,
	// 0..MaxActivity (0: the run's activity).
	Activity int `json:"activity,omitempty"`
	// Replace: the request replaces a done transfer that delivered another
	// file to its destination (otherwise Enqueue refuses it, naming that
	// transfer). Not stored in the transfer: its first history entry says so.
	Replace bool `json:"replace,omitempty"`
}

// Limits of request fields.
const (
	MaxNameLen   = 128  // user, group, role, site names
	MaxLFNLen    = 4096 // logical file names (PATH_MAX)
	MaxDependsOn = 1000
	MaxPriority  = math.MaxInt32
	MinPriority  = math.MinInt32
	MaxActivity  = 63 // the activity field of a scitag has 6 bits
)

// ID returns the transfer ID of r (see TransferID).
func (r *Request) ID() string {
	return TransferID(r.User, r.Source, r.SourceLFN, r.Destination, r.DestinationLFN)
}

// Validate checks every field of r and returns a *ValidationError naming the
// first bad field and its value, or nil.
func (r *Request) Validate() error {
	if err := CheckUser(r.User); err != nil {
		return err
	}
	if err := checkName("group", r.Group, false); err != nil {
		return err
	}
	if err := checkName("role", r.Role, false); err != nil {
		return err
	}
	if err := checkName("source", r.Source, true); err != nil {
		return err
	}
	if err := checkName("destination", r.Destination, true); err != nil {
		return err
	}
	if err := checkLFN("source_lfn", r.SourceLFN); err != nil {
		return err
	}
	if err := checkLFN("destination_lfn", r.DestinationLFN); err != nil {
		return err
	}
	if r.Source == r.Destination && r.SourceLFN == r.DestinationLFN {
		// FTS would copy the file onto itself, and the cleanup of a failed
		// attempt deletes its destination: the source.
		return &ValidationError{Field: "destination_lfn", Value: r.DestinationLFN,
			Reason: "the same file as the source (same site " + r.Source + " and LFN): a transfer onto itself, whose failed attempt would delete its source"}
	}
	if r.Size < 0 {
		return &ValidationError{Field: "size", Value: itoa(r.Size), Reason: "must be >= 0"}
	}
	seen := make(map[string]bool, len(r.Checksums))
	for alg, v := range r.Checksums {
		if seen[strings.ToLower(alg)] {
			// NewTransfer lower-cases the keys: one value would silently win
			return &ValidationError{Field: "checksums", Value: strings.ToLower(alg), Reason: "algorithm given twice (keys differ only in case)"}
		}
		seen[strings.ToLower(alg)] = true
		switch strings.ToLower(alg) {
		case "adler32":
			if len(v) != 8 || !isHex(v) {
				return &ValidationError{Field: "checksums.adler32", Value: v, Reason: "must be 8 hexadecimal digits"}
			}
		default:
			return &ValidationError{Field: "checksums", Value: alg, Reason: "unknown algorithm (only adler32 is supported)"}
		}
	}
	if r.Priority < MinPriority || r.Priority > MaxPriority {
		return &ValidationError{Field: "priority", Value: itoa(int64(r.Priority)), Reason: "out of the 32-bit range"}
	}
	if r.Activity < 0 || r.Activity > MaxActivity {
		return &ValidationError{Field: "activity", Value: itoa(int64(r.Activity)), Reason: "must be 0..63 (the scitag activity; 0: the run's)"}
	}
	if len(r.DependsOn) > MaxDependsOn {
		return &ValidationError{Field: "depends_on", Value: itoa(int64(len(r.DependsOn))) + " IDs", Reason: "too many dependencies"}
	}
	id := r.ID()
	for _, d := range r.DependsOn {
		if !ValidID(d) {
			return &ValidationError{Field: "depends_on", Value: d, Reason: "not a transfer ID (64 lowercase hexadecimal digits)"}
		}
		if d == id {
			return &ValidationError{Field: "depends_on", Value: d, Reason: "a transfer cannot depend on itself"}
		}
	}
	return nil
}

// UserRule says what a user name is: a CMS user name, as CRIC (before it,
// SiteDB, whose rule was ^[a-z0-9_]+$) gives them to CMS users: the CERN
// account name, lowercase letters and digits, and _; aso also takes -. A
// name starts with a letter or a digit, so that it is never read as a
// flag, and has no / or . : a user's name goes into file names ({user} in
// --report and --metrics-file), lock document IDs and URL paths, which a
// name such as ../victim would escape.
const UserRule = "lowercase letters, digits, _ and -, starting with a letter or a digit, at most 128 bytes (a CMS user name)"

// CheckUser checks a user name against UserRule: the one check of every
// entry of a user name (a request's user, --user, the configuration, the
// documents a fleet finds, aso serve's paths). It returns a
// *ValidationError of field user, or nil.
func CheckUser(name string) error {
	if name == "" {
		return &ValidationError{Field: "user", Value: name, Reason: "must not be empty"}
	}
	ok := len(name) <= MaxNameLen && isLowerAlnum(name[0])
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = isLowerAlnum(c) || c == '_' || c == '-'
	}
	if !ok {
		return &ValidationError{Field: "user", Value: name, Reason: "not a user name: want " + UserRule}
	}
	return nil
}

func isLowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// checkName accepts names of letters, digits and . _ - @ + = : (site names such
// as T2_US_Nebraska, user names, VOMS groups such as /cms/escms).
func checkName(field, v string, required bool) error {
	if v == "" {
		if required {
			return &ValidationError{Field: field, Value: v, Reason: "must not be empty"}
		}
		return nil
	}
	if len(v) > MaxNameLen {
		return &ValidationError{Field: field, Value: v, Reason: "longer than 128 bytes"}
	}
	for _, c := range v {
		if !(c < utf8.RuneSelf && (unicode.IsLetter(c) || unicode.IsDigit(c) || strings.ContainsRune("._-@+=:/", c))) {
			return &ValidationError{Field: field, Value: v, Reason: "may contain only ASCII letters, digits and . _ - @ + = : /"}
		}
	}
	return nil
}

func checkLFN(field, v string) error {
	switch {
	case v == "":
		return &ValidationError{Field: field, Value: v, Reason: "must not be empty"}
	case len(v) > MaxLFNLen:
		return &ValidationError{Field: field, Value: v, Reason: "longer than 4096 bytes"}
	case !utf8.ValidString(v):
		return &ValidationError{Field: field, Value: v, Reason: "is not valid UTF-8"}
	case v[0] != '/':
		return &ValidationError{Field: field, Value: v, Reason: "must be an absolute path starting with /"}
	}
	for _, c := range v {
		if unicode.IsControl(c) {
			return &ValidationError{Field: field, Value: v, Reason: "contains a control character"}
		}
	}
	for _, part := range strings.Split(v, "/") {
		if part == ".." || part == "." {
			return &ValidationError{Field: field, Value: v, Reason: "must not contain . or .. path elements"}
		}
	}
	if strings.Contains(v, "//") {
		return &ValidationError{Field: field, Value: v, Reason: "must not contain empty path elements (//)"}
	}
	if i := strings.IndexAny(v, "?#%"); i >= 0 {
		return &ValidationError{Field: field, Value: v, Reason: fmt.Sprintf("must not contain %q: in a PFN it starts a URL query, fragment or escape", v[i])}
	}
	return nil
}

// NewTransfer builds the stored document of a valid request, in state new,
// created at now by who.
func NewTransfer(r Request, now time.Time, by string) Transfer {
	at := At(now)
	ck := map[string]string(nil)
	if len(r.Checksums) > 0 {
		ck = make(map[string]string, len(r.Checksums))
		for k, v := range r.Checksums {
			ck[strings.ToLower(k)] = strings.ToLower(v)
		}
	}
	t := Transfer{
		ID: r.ID(), Type: DocType,
		User: r.User, Group: r.Group, Role: r.Role,
		Source: r.Source, Destination: r.Destination,
		SourceLFN: r.SourceLFN, DestinationLFN: r.DestinationLFN,
		Size: r.Size, Checksums: ck, Priority: r.Priority,
		DependsOn: append([]string(nil), r.DependsOn...), Activity: r.Activity,
		State: StateNew, Created: at, LastUpdate: at,
	}
	t.History = []Transition{{At: at, To: StateNew, By: by, Reason: "enqueued"}}
	return t
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// checksum is r's adler32 in lower case, or "".
func (r *Request) checksum() string {
	for k, v := range r.Checksums {
		if strings.EqualFold(k, "adler32") {
			return strings.ToLower(v)
		}
	}
	return ""
}
