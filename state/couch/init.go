package couch

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"

	"github.com/go-kivik/kivik/v4"
)

// validateJS is the validate_doc_update function of the "_design/aso"
// design document.
//
//go:embed validate.js
var validateJS string

// DesignID is the ID of the design document holding validate_doc_update.
const DesignID = "_design/aso"

// indexes are the Mango indexes Init creates, by name (each in its own
// design document of the same name, so creating one never rewrites
// another).
var indexes = []struct {
	name   string
	fields []string
}{
	{indexClaim, []string{"user", "claim_key"}},
	{indexActive, []string{"user", "state", "last_update"}},
	{indexCreated, []string{"type", "created"}},
}

// Init prepares a database for aso: it creates the database if it is
// missing, the Mango indexes, and the design document with the
// validate_doc_update function. It is idempotent: run twice it writes
// nothing the second time; after an upgrade it replaces what changed.
func Init(ctx context.Context, o Options) error {
	c, t, err := connect(o)
	if err != nil {
		return err
	}
	defer c.Close()
	where := t.server + t.db
	err = retry(ctx, func() error {
		err := c.CreateDB(ctx, t.db)
		if kivik.HTTPStatus(err) == http.StatusPreconditionFailed {
			return nil // exists
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("couch: init %s: create the database: %w", where, err)
	}
	db := c.DB(t.db)
	defer db.Close()
	if err := ensureIndexes(ctx, db); err != nil {
		return fmt.Errorf("couch: init %s: %w", where, err)
	}
	if err := ensureDesign(ctx, db); err != nil {
		return fmt.Errorf("couch: init %s: %w", where, err)
	}
	return nil
}

// ensureIndexes creates the indexes that are missing or defined otherwise.
func ensureIndexes(ctx context.Context, db *kivik.DB) error {
	var have []kivik.Index
	if err := retry(ctx, func() error {
		var err error
		have, err = db.GetIndexes(ctx)
		return err
	}); err != nil {
		return fmt.Errorf("list indexes: %w", err)
	}
	current := map[string][]string{}
	for _, ix := range have {
		current[ix.Name] = indexFields(ix.Definition)
	}
	for _, ix := range indexes {
		if reflect.DeepEqual(current[ix.name], ix.fields) {
			continue
		}
		def := map[string]any{"fields": ix.fields}
		if err := retry(ctx, func() error { return db.CreateIndex(ctx, ix.name, ix.name, def) }); err != nil {
			return fmt.Errorf("create index %s: %w", ix.name, err)
		}
	}
	return nil
}

// indexFields extracts the field names of an index definition
// ({"fields": [{"user": "asc"}, ...]}).
func indexFields(def any) []string {
	b, _ := json.Marshal(def)
	var d struct {
		Fields []map[string]string `json:"fields"`
	}
	if json.Unmarshal(b, &d) != nil {
		return nil
	}
	var out []string
	for _, f := range d.Fields {
		for k := range f {
			out = append(out, k)
		}
	}
	return out
}

// ensureDesign writes the validation design document unless it is current.
func ensureDesign(ctx context.Context, db *kivik.DB) error {
	want := map[string]any{"_id": DesignID, "language": "javascript", "validate_doc_update": validateJS}
	var have map[string]any
	err := retry(ctx, func() error {
		have = nil
		err := db.Get(ctx, DesignID).ScanDoc(&have)
		if kivik.HTTPStatus(err) == http.StatusNotFound {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("read %s: %w", DesignID, err)
	}
	if have != nil {
		if have["validate_doc_update"] == want["validate_doc_update"] && have["language"] == want["language"] {
			return nil
		}
		want["_rev"] = have["_rev"]
	}
	if err := retry(ctx, func() error {
		_, err := db.Put(ctx, DesignID, want)
		return err
	}); err != nil {
		return fmt.Errorf("write %s: %w", DesignID, err)
	}
	return nil
}
