package couch

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"

	"github.com/go-kivik/kivik/v4"
)

// validateJS is the validate_doc_update function of the "_design/aso"
// design document.
//
//go:embed validate.js
var validateJS string

// DesignID is the ID of the design document holding validate_doc_update.
const DesignID = "_design/aso"

// indexCreated is the Mango index of List: (type, created).
const indexCreated = "aso-created"

// indexes are the Mango indexes Init creates, by name (each in its own
// design document of the same name, so creating one never rewrites
// another).
var indexes = []struct {
	name   string
	fields []string
}{
	{indexCreated, []string{"type", "created"}},
}

// obsoleteIndexes are Mango indexes earlier versions created, which Init
// deletes: the claim and active queries read the views of ViewsID now, and
// a server would otherwise keep updating the indexes for nothing.
var obsoleteIndexes = []string{"aso-claim", "aso-active"}

// Init prepares a database for aso: it creates the database if it is
// missing, makes aso's roles (Roles) its members, creates the Mango
// indexes, the views of the agent's queries and of monitoring (StatsID),
// and the design document with the validate_doc_update function, and
// deletes the indexes of earlier versions. It is idempotent: run twice it
// writes nothing the second time; after an upgrade it replaces what
// changed. It needs a server admin.
func Init(ctx context.Context, o Options) error {
	c, t, _, err := connect(o)
	if err != nil {
		return err
	}
	defer c.Close()
	where := t.server + t.db
	err = retryHTTP(ctx, func() error {
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
	if err := ensureSecurity(ctx, db); err != nil {
		return fmt.Errorf("couch: init %s: %w", where, err)
	}
	if err := ensureIndexes(ctx, db); err != nil {
		return fmt.Errorf("couch: init %s: %w", where, err)
	}
	validation := map[string]any{"_id": DesignID, "language": "javascript", "validate_doc_update": validateJS}
	for _, doc := range []map[string]any{viewsDoc(), statsDoc(), destsDoc(), validation} {
		if err := ensureDoc(ctx, db, doc); err != nil {
			return fmt.Errorf("couch: init %s: %w", where, err)
		}
	}
	return nil
}

// ensureIndexes creates the indexes that are missing or defined otherwise.
func ensureIndexes(ctx context.Context, db *kivik.DB) error {
	var have []kivik.Index
	if err := retryHTTP(ctx, func() error {
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
	for _, ix := range have {
		if !slices.Contains(obsoleteIndexes, ix.Name) || ix.DesignDoc == "" {
			continue
		}
		if err := deleteDoc(ctx, db, ix.DesignDoc); err != nil {
			return fmt.Errorf("delete the obsolete index %s: %w", ix.Name, err)
		}
	}
	for _, ix := range indexes {
		if reflect.DeepEqual(current[ix.name], ix.fields) {
			continue
		}
		def := map[string]any{"fields": ix.fields}
		if err := retryHTTP(ctx, func() error { return db.CreateIndex(ctx, ix.name, ix.name, def) }); err != nil {
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

// deleteDoc deletes the document id (the design document of an index: the
// PouchDB test server cannot delete indexes through _index); a document
// already gone is not an error.
func deleteDoc(ctx context.Context, db *kivik.DB, id string) error {
	return retryHTTP(ctx, func() error {
		rev, err := db.GetRev(ctx, id)
		if err == nil {
			_, err = db.Delete(ctx, id, rev)
		}
		if kivik.HTTPStatus(err) == http.StatusNotFound {
			return nil
		}
		return err
	})
}

// ensureDoc writes the design document want (with its _id, without _rev)
// unless the stored one has the same fields.
func ensureDoc(ctx context.Context, db *kivik.DB, want map[string]any) error {
	id := want["_id"].(string)
	var have map[string]any
	err := retryHTTP(ctx, func() error {
		have = nil
		err := db.Get(ctx, id).ScanDoc(&have)
		if kivik.HTTPStatus(err) == http.StatusNotFound {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("read %s: %w", id, err)
	}
	if have != nil {
		if sameFields(have, want) {
			return nil
		}
		want["_rev"] = have["_rev"]
	}
	if err := retryHTTP(ctx, func() error {
		_, err := db.Put(ctx, id, want)
		return err
	}); err != nil {
		return fmt.Errorf("write %s: %w", id, err)
	}
	return nil
}

// sameFields reports whether have holds every field of want with the same
// JSON value.
func sameFields(have, want map[string]any) bool {
	for k, w := range want {
		wb, err1 := json.Marshal(w)
		hb, err2 := json.Marshal(have[k])
		if err1 != nil || err2 != nil || string(wb) != string(hb) {
			return false
		}
	}
	return true
}
