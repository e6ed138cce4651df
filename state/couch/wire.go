package couch

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/asyncstageout/aso/state"
)

// wireDoc is a transfer as stored: the state document plus the derived
// fields the backend maintains on every write.
type wireDoc struct {
	state.Transfer
	// ClaimKey orders the candidates of NewTransfers (see the package
	// documentation); present only while the transfer is new or acquired.
	ClaimKey string `json:"claim_key,omitempty"`
}

// claimKey is the ascending sort key of claim order: inverted priority, then
// last_update, then ID. Empty for transfers that cannot be claimed.
func claimKey(t *state.Transfer) string {
	if t.State != state.StateNew && t.State != state.StateAcquired {
		return ""
	}
	inv := int64(math.MaxInt32) - int64(t.Priority)
	return fmt.Sprintf("%010d|%s|%s", inv, t.LastUpdate.String(), t.ID)
}

// encode returns the stored form of t.
func encode(t *state.Transfer) (json.RawMessage, error) {
	t.Type = state.DocType
	b, err := json.Marshal(wireDoc{Transfer: *t, ClaimKey: claimKey(t)})
	if err != nil {
		return nil, fmt.Errorf("couch: encode transfer %s: %w", t.ID, err)
	}
	return b, nil
}

// decode parses and validates a stored transfer document. The error says
// why the document cannot be trusted; it wraps state.ErrInvalid.
func decode(raw json.RawMessage) (state.Transfer, error) {
	var t state.Transfer
	if err := json.Unmarshal(raw, &t); err != nil {
		return t, fmt.Errorf("%s: %w", strings.TrimPrefix(err.Error(), "json: "), state.ErrInvalid)
	}
	if err := t.Validate(); err != nil {
		return t, err
	}
	return t, nil
}

// docKind tells what a stored document is.
type docKind int

const (
	kindOther    docKind = iota // design, local, lock or another application's document
	kindTransfer                // claims to be a transfer
	kindUnknown                 // has no usable type: reported as invalid
)

// envelope reads the fields every document kind shares.
type envelope struct {
	ID   string          `json:"_id"`
	Type json.RawMessage `json:"type"`
}

func classify(raw json.RawMessage) (envelope, docKind) {
	var e envelope
	if err := json.Unmarshal(raw, &e); err != nil {
		return e, kindUnknown
	}
	if strings.HasPrefix(e.ID, "_design/") || strings.HasPrefix(e.ID, "_local/") || state.IsLockID(e.ID) {
		return e, kindOther
	}
	var typ string
	if err := json.Unmarshal(e.Type, &typ); err != nil || len(e.Type) == 0 {
		return e, kindUnknown
	}
	if typ == state.DocType {
		return e, kindTransfer
	}
	return e, kindOther
}

// invalidDoc describes a document that does not decode as a transfer.
func invalidDoc(raw json.RawMessage, err error) state.InvalidDoc {
	e, kind := classify(raw)
	reason := "not a transfer document: no string \"type\" field"
	if kind == kindTransfer && err != nil {
		reason = err.Error()
	}
	return state.InvalidDoc{ID: e.ID, Reason: reason}
}

// sameContent reports whether two documents are equal apart from _rev: a
// write whose response was lost and that the server nonetheless applied.
func sameContent(a, b json.RawMessage) bool {
	var ma, mb map[string]any
	if json.Unmarshal(a, &ma) != nil || json.Unmarshal(b, &mb) != nil {
		return false
	}
	delete(ma, "_rev")
	delete(mb, "_rev")
	return reflect.DeepEqual(ma, mb)
}
