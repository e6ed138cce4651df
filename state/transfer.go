package state

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
)

// DocType is the value of the "type" field of every transfer document; other
// documents (locks, design documents) share the database.
const DocType = "transfer"

// State is the life-cycle state of a transfer.
type State string

// The states of docs/design.md (section 3). new -> acquired -> submitted -> done|failed|killed.
const (
	StateNew       State = "new"
	StateAcquired  State = "acquired"
	StateSubmitted State = "submitted"
	StateDone      State = "done"
	StateFailed    State = "failed"
	StateKilled    State = "killed"
)

// States lists every state in life-cycle order.
var States = []State{StateNew, StateAcquired, StateSubmitted, StateDone, StateFailed, StateKilled}

// Terminal reports whether s is an end state.
func (s State) Terminal() bool {
	return s == StateDone || s == StateFailed || s == StateKilled
}

// Valid reports whether s is one of States.
func (s State) Valid() bool {
	for _, v := range States {
		if s == v {
			return true
		}
	}
	return false
}

// Progress is the transient view of a submitted transfer as FTS last reported it.
type Progress struct {
	FTSState   string  `json:"fts_state"`
	Bytes      int64   `json:"bytes,omitempty"`
	Throughput float64 `json:"throughput,omitempty"` // MiB/s, as FTS reports it
	Retries    int     `json:"retries,omitempty"`    // FTS-side retries so far
	Reason     string  `json:"reason,omitempty"`     // last FTS reason, for retries in FTS
	FileID     int64   `json:"file_id,omitempty"`    // the transfer's file in its FTS job
	Updated    Time    `json:"updated"`
}

// Transition is one entry of a transfer's history.
type Transition struct {
	At     Time   `json:"at"`
	From   State  `json:"from"`
	To     State  `json:"to"`
	By     string `json:"by"`
	Reason string `json:"reason,omitempty"`
	// Verified is set on the entry of a verification (VerifyOf): what it
	// found at the destination. A transfer has at most one such entry.
	Verified VerifyResult `json:"verified,omitempty"`
}

// MaxHistory bounds Transfer.History; the oldest entries are dropped first,
// except the first (creation), which is kept.
const MaxHistory = 32

// Transfer is one requested file transfer: the document stored by every backend.
type Transfer struct {
	ID   string `json:"_id"`
	Rev  string `json:"_rev,omitempty"`
	Type string `json:"type"`

	User  string `json:"user"`
	Group string `json:"group,omitempty"`
	Role  string `json:"role,omitempty"`

	Source         string            `json:"source"`
	Destination    string            `json:"destination"`
	SourceLFN      string            `json:"source_lfn"`
	DestinationLFN string            `json:"destination_lfn"`
	Size           int64             `json:"size"`
	Checksums      map[string]string `json:"checksums,omitempty"`
	Priority       int               `json:"priority"`
	DependsOn      []string          `json:"depends_on,omitempty"`

	State        State  `json:"state"`
	Owner        string `json:"owner,omitempty"`
	LeaseExpires Time   `json:"lease_expires,omitzero"`

	SubmitSID string `json:"submit_sid,omitempty"`
	FTSJob    string `json:"fts_job,omitempty"`
	FTSFileID int64  `json:"fts_file_id,omitempty"`
	SourcePFN string `json:"source_pfn,omitempty"`
	DestPFN   string `json:"dest_pfn,omitempty"`

	Attempts      int    `json:"attempts"`
	RetryAfter    Time   `json:"retry_after,omitzero"`
	Reason        string `json:"reason,omitempty"`
	KillRequested bool   `json:"kill_requested,omitempty"`

	Progress *Progress `json:"progress,omitempty"`

	Created    Time         `json:"created"`
	LastUpdate Time         `json:"last_update"`
	History    []Transition `json:"history,omitempty"`

	// FTSEndpoint is the FTS server the transfer's job was (or is being)
	// submitted to, written with submit_sid: monitoring, cancelling and
	// adoption go there. "" (transfers of older versions): the current one.
	FTSEndpoint string `json:"fts_endpoint,omitempty"`
	// ErrorClass classifies Reason when it is an FTS failure (one of
	// ErrorClasses); "" otherwise.
	ErrorClass string `json:"error_class,omitempty"`
	// Activity is the network activity of the transfer (1..MaxActivity),
	// marked with the experiment in the scitag of its FTS file; 0 means
	// the run's activity (aso run --scitag-activity).
	Activity int `json:"activity,omitempty"`
	// Extra holds the top-level fields of a stored document that aso does
	// not know, by name, as raw JSON: what another producer wrote next to
	// the request (a task name, a job ID, a publish flag). aso never reads
	// them; the CouchDB backend keeps them through every write. Not part of
	// the JSON form of Transfer itself.
	Extra map[string]json.RawMessage `json:"-"`

	// DestOwnedSince is when the transfer recorded that it owns its
	// destination: written in the same write as its first submission
	// record (submit_sid), before FTS ever sees it, and kept. Zero: the
	// transfer was never submitted by a version that records it, and aso
	// deletes nothing at its destination.
	DestOwnedSince Time `json:"dest_owned_since,omitzero"`
	// DestWritten is the destination PFN that an earlier attempt of the
	// transfer began writing and whose copy may still be there (a lost
	// job that had moved bytes, a deletion given up); "" once aso deleted
	// it or found it gone. See DestCopy.
	DestWritten string `json:"dest_written,omitempty"`
	// SupersededBy is the transfer whose enqueue replaced this done one,
	// or superseded this failed or killed one, as the owner of its
	// destination (SupersedeOf); its history says which. "" for none;
	// cleared by a retry.
	SupersededBy string `json:"superseded_by,omitempty"`
}

// Dest returns the destination of t: the key of its ownership (DestRef).
func (t *Transfer) Dest() Destination {
	return Destination{Site: t.Destination, LFN: t.DestinationLFN}
}

// Link names the (source, destination) pair of t, "SRC->DST".
func (t *Transfer) Link() string { return t.Source + "->" + t.Destination }

// Checksum returns the adler32 checksum of t in lower case, or "". The key
// is matched in any case: a producer's document may say "ADLER32", which
// the database's validation accepts.
func (t *Transfer) Checksum() string {
	if v, ok := t.Checksums["adler32"]; ok {
		return strings.ToLower(v)
	}
	for k, v := range t.Checksums {
		if strings.EqualFold(k, "adler32") {
			return strings.ToLower(v)
		}
	}
	return ""
}

// Transition moves t to state to at now, recording by and reason in History,
// LastUpdate and (for failures) Reason. It does not check legality: the
// rules (rules.go) decide which moves a backend makes.
func (t *Transfer) Transition(to State, now time.Time, by, reason string) {
	at := At(now)
	t.History = appendHistory(t.History, Transition{At: at, From: t.State, To: to, By: by, Reason: reason})
	t.State = to
	t.LastUpdate = at
	if reason != "" {
		t.Reason, t.ErrorClass = reason, "" // a new reason: ApplyTerminal sets its class after
	}
}

// Note records in t's history, at now, what by did to t without moving
// it to another state (a kill request, a purge). It leaves Reason and
// LastUpdate alone.
func (t *Transfer) Note(now time.Time, by, what string) {
	t.History = appendHistory(t.History, Transition{At: At(now), From: t.State, To: t.State, By: by, Reason: what})
}

func appendHistory(h []Transition, tr Transition) []Transition {
	h = append(h, tr)
	if len(h) > MaxHistory {
		// keep the first entry (creation) and the newest MaxHistory-1
		h = append(h[:1], h[len(h)-MaxHistory+1:]...)
	}
	return h
}

// TransferID is the deterministic ID of a request: the hex SHA-256 of its
// user, source, source LFN, destination and destination LFN. Enqueueing the
// same request twice is therefore idempotent.
func TransferID(user, source, sourceLFN, destination, destinationLFN string) string {
	h := sha256.New()
	for _, s := range []string{user, source, sourceLFN, destination, destinationLFN} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ValidID reports whether id has the form of a TransferID.
func ValidID(id string) bool {
	if len(id) != 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// LockID is the ID of the run-lock document of user.
func LockID(user string) string { return "lock:" + user }

// IsLockID reports whether a document ID names a run lock.
func IsLockID(id string) bool { return strings.HasPrefix(id, "lock:") }

// LockDocType is the "type" of run-lock documents.
const LockDocType = "lock"

// LockDoc is the stored run lock of one user, document LockID(user):
// {holder, expire, since, last_run}. A released lock has no expire.
type LockDoc struct {
	ID     string `json:"_id"`
	Rev    string `json:"_rev,omitempty"`
	Type   string `json:"type"`
	User   string `json:"user"`
	Holder string `json:"holder"`
	Expire Time   `json:"expire,omitzero"`

	// Since is when Holder took the lock (kept through renewals).
	Since Time `json:"since,omitzero"`
	// LastRun is the last run that released the lock (see AgentStore.ReleaseLock).
	LastRun *RunRecord `json:"last_run,omitempty"`
}

// Validate checks a stored transfer document: its request fields, its state,
// and the fields its state requires. Backends use it to quarantine documents
// they cannot trust.
func (t *Transfer) Validate() error {
	if t.Type != DocType {
		return &ValidationError{Field: "type", Value: t.Type, Reason: `must be "transfer"`}
	}
	r := t.Request()
	if err := r.Validate(); err != nil {
		return err
	}
	if t.ID != r.ID() {
		return &ValidationError{Field: "_id", Value: t.ID, Reason: "does not match the hash of user, source, source_lfn, destination, destination_lfn"}
	}
	if !t.State.Valid() {
		return &ValidationError{Field: "state", Value: string(t.State), Reason: "unknown state"}
	}
	if t.Created.IsZero() {
		return &ValidationError{Field: "created", Value: "", Reason: "is required (an RFC 3339 timestamp)"}
	}
	if t.LastUpdate.IsZero() {
		return &ValidationError{Field: "last_update", Value: "", Reason: "is required (an RFC 3339 timestamp)"}
	}
	if t.Attempts < 0 {
		return &ValidationError{Field: "attempts", Value: itoa(int64(t.Attempts)), Reason: "must be >= 0"}
	}
	switch t.State {
	case StateAcquired:
		if t.Owner == "" || t.LeaseExpires.IsZero() {
			return &ValidationError{Field: "owner", Value: t.Owner, Reason: "an acquired transfer needs owner and lease_expires"}
		}
	case StateSubmitted:
		if t.FTSJob == "" {
			return &ValidationError{Field: "fts_job", Value: "", Reason: "a submitted transfer needs fts_job"}
		}
	}
	return nil
}

// Request returns the request fields of t.
func (t *Transfer) Request() Request {
	return Request{
		User: t.User, Group: t.Group, Role: t.Role,
		Source: t.Source, Destination: t.Destination,
		SourceLFN: t.SourceLFN, DestinationLFN: t.DestinationLFN,
		Size: t.Size, Checksums: t.Checksums, Priority: t.Priority, DependsOn: t.DependsOn,
		Activity: t.Activity,
	}
}
