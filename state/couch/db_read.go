package couch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"

	"github.com/go-kivik/kivik/v4"
)

// readKeys reads documents by ID with one request (POST _all_docs with
// keys) per maxReadKeys IDs, two at a time (eachPart). Missing and deleted
// documents are absent from the maps. The documents are read with their
// conflicts (a CouchDB cluster reads each from a quorum of its replicas):
// those with conflicts are apart, in conflicted, as read (the resolver
// decides what becomes of them).
func (d *db) readKeys(ctx context.Context, ids []string) (docs, conflicted map[string]json.RawMessage, err error) {
	type part struct{ docs, conflicted map[string]json.RawMessage }
	parts := make([]part, numParts(len(ids), maxReadKeys))
	err = eachPart(len(ids), maxReadKeys, func(k, lo, hi int) error {
		var err error
		parts[k].docs, parts[k].conflicted, err = d.readKeysOnce(ctx, ids[lo:hi])
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	docs = make(map[string]json.RawMessage, len(ids))
	conflicted = map[string]json.RawMessage{}
	for _, p := range parts {
		maps.Copy(docs, p.docs)
		maps.Copy(conflicted, p.conflicted)
	}
	return docs, conflicted, nil
}

// hasConflicts reports whether the document raw, read with its
// conflicts, has any.
func hasConflicts(raw json.RawMessage) bool {
	return bytes.Contains(raw, []byte(`"_conflicts"`)) && len(conflictsOf(raw)) > 0
}

// readKeysAsStored is readKeys with the conflicted documents among the
// others, each as its winning revision as read. A reader that must not
// write (a summary) uses it.
func (d *db) readKeysAsStored(ctx context.Context, ids []string) (map[string]json.RawMessage, error) {
	docs, conflicted, err := d.readKeys(ctx, ids)
	if err != nil {
		return nil, err
	}
	maps.Copy(docs, conflicted)
	return docs, nil
}

// readKeysOnce is readKeys of at most maxReadKeys IDs, in one request.
func (d *db) readKeysOnce(ctx context.Context, ids []string) (docs, conflicted map[string]json.RawMessage, err error) {
	err = retryHTTP(ctx, func() error {
		// what a failed attempt read does not count: a document deleted
		// since must not stay behind
		docs, conflicted = make(map[string]json.RawMessage, len(ids)), map[string]json.RawMessage{}
		rows, err := d.bulk.allDocs(ctx, ids, true)
		if err != nil {
			return err
		}
		for _, r := range rows {
			raw := r.Doc
			if r.ID == "" || raw == nil {
				continue // missing or deleted
			}
			if hasConflicts(raw) {
				conflicted[r.ID] = raw
				continue
			}
			docs[r.ID] = raw
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("couch: read %d documents from %s: %w", len(ids), d.url, err)
	}
	return docs, conflicted, nil
}

// revisions returns the current (winning) revision of each of ids that
// exists and is not deleted: one _all_docs request without documents per
// maxReadKeys IDs.
func (d *db) revisions(ctx context.Context, ids []string) (map[string]string, error) {
	parts := make([]map[string]string, numParts(len(ids), maxReadKeys))
	err := eachPart(len(ids), maxReadKeys, func(k, lo, hi int) error {
		return retryHTTP(ctx, func() error {
			rows, err := d.bulk.allDocs(ctx, ids[lo:hi], false)
			if err != nil {
				return err
			}
			part := make(map[string]string, hi-lo) // a failed attempt's reads do not count
			for _, r := range rows {
				var v struct {
					Rev     string `json:"rev"`
					Deleted bool   `json:"deleted"`
				}
				if r.ID == "" || json.Unmarshal(r.Value, &v) != nil || v.Deleted {
					continue // missing or deleted
				}
				part[r.ID] = v.Rev
			}
			parts[k] = part
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(ids))
	for _, part := range parts {
		maps.Copy(out, part)
	}
	return out, nil
}

// readRevs reads given revisions of documents with one _bulk_get; the map
// is keyed by ID + "\x00" + rev.
func (d *db) readRevs(ctx context.Context, refs []kivik.BulkGetReference) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(refs))
	if len(refs) == 0 {
		return out, nil
	}
	err := retryHTTP(ctx, func() error {
		rs := d.kdb.BulkGet(ctx, refs)
		defer rs.Close()
		for rs.Next() {
			var raw json.RawMessage
			if err := rs.ScanDoc(&raw); err != nil || len(raw) == 0 {
				continue
			}
			var e struct {
				ID      string `json:"_id"`
				Rev     string `json:"_rev"`
				Deleted bool   `json:"_deleted"`
			}
			if json.Unmarshal(raw, &e) != nil || e.Deleted {
				continue
			}
			out[e.ID+"\x00"+e.Rev] = raw
		}
		if err := rs.Err(); err != nil && kivik.HTTPStatus(err) != http.StatusNotFound {
			return err
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("couch: read %d conflicting revisions from %s: %w", len(refs), d.url, err)
	}
	return out, nil
}

// readConflicted reads the document id with its _conflicts, from a quorum
// of replicas (r) where the server says how many make one; found is false
// if there is none.
func (d *db) readConflicted(ctx context.Context, id string) (raw json.RawMessage, found bool, err error) {
	params := map[string]any{"conflicts": true}
	if d.readQuorum > 0 {
		params["r"] = d.readQuorum
	}
	err = retryHTTP(ctx, func() error {
		return d.kdb.Get(ctx, id, kivik.Params(params)).ScanDoc(&raw)
	})
	if kivik.HTTPStatus(err) == http.StatusNotFound {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return raw, true, nil
}

// readRange returns the documents whose IDs are from start to end, in one
// read of that range of _all_docs.
func (d *db) readRange(ctx context.Context, start, end string) ([]json.RawMessage, error) {
	var out []json.RawMessage
	err := retryHTTP(ctx, func() error {
		out = out[:0]
		rs := d.kdb.AllDocs(ctx, kivik.Params(map[string]any{"include_docs": true, "startkey": start, "endkey": end}))
		defer rs.Close()
		for rs.Next() {
			var raw json.RawMessage
			if err := rs.ScanDoc(&raw); err != nil {
				return err
			}
			out = append(out, raw)
		}
		return rs.Err()
	})
	return out, err
}

// scanPage is the number of documents of a page of scanAll.
const scanPage = 2000

// scanAll pages through every document of the database, with conflicts.
func (d *db) scanAll(ctx context.Context, f func(json.RawMessage)) error {
	const page = scanPage
	start := ""
	for {
		var docs []json.RawMessage
		last := ""
		err := retryHTTP(ctx, func() error {
			docs, last = docs[:0], ""
			p := map[string]any{"include_docs": true, "limit": page, "conflicts": true}
			if start != "" {
				p["startkey"], p["skip"] = start, 1
			}
			rs := d.kdb.AllDocs(ctx, kivik.Params(p))
			defer rs.Close()
			for rs.Next() {
				id, _ := rs.ID()
				var raw json.RawMessage
				if err := rs.ScanDoc(&raw); err != nil {
					return err
				}
				docs, last = append(docs, raw), id
			}
			return rs.Err()
		})
		if err != nil {
			return fmt.Errorf("read %s: %w", d.url, err)
		}
		for _, raw := range docs {
			f(raw)
		}
		if len(docs) < page {
			return nil
		}
		start = last
	}
}

// queryView reads the rows of view of the design document ddoc (without
// its "_design/"), retried as every request is.
func (d *db) queryView(ctx context.Context, ddoc, view string, params map[string]any) ([]viewRow, error) {
	var rows []viewRow
	err := retryHTTP(ctx, func() error {
		var err error
		rows, err = rowsOf(d.kdb.Query(ctx, ddoc, view, kivik.Params(params)), params["include_docs"] == true)
		return err
	})
	return rows, err
}

// session asks the server who the credentials are (GET /_session).
func (d *db) session(ctx context.Context) (Identity, error) {
	return whoAmI(ctx, d.client, d.url)
}
