package couch

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-kivik/kivik/v4"
	"golang.org/x/sync/errgroup"

	"github.com/asyncstageout/aso/internal/retry"
	"github.com/asyncstageout/aso/state"
)

// The retry loops: waits from 50 ms, growing to at most 2 s, bounded by
// tries and by the caller's context.
var (
	// httpRetries: transient HTTP failures of one request (see transient)
	httpRetries = retry.Policy{Attempts: 5, Initial: 50 * time.Millisecond, Max: 2 * time.Second}
	// conflictRetries: re-read and re-apply rounds after conflicts
	conflictRetries = retry.Policy{Attempts: 6, Initial: 50 * time.Millisecond, Max: 2 * time.Second}
)

// Bounds of one request: a call with more documents makes several, so that
// a request body (and the buffers that encode it) stays a few MiB.
const (
	maxBulkDocs   = 2000 // documents of one _bulk_docs
	partsInFlight = 2    // requests of one call under way at once (see eachPart)
	maxReadKeys   = 5000 // IDs of one _all_docs?keys=
)

// transient reports whether a failed request may succeed when repeated:
// network errors, 5xx and 429.
func transient(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return false
	}
	var certErr *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	if errors.As(err, &certErr) || errors.As(err, &unknownCA) || errors.As(err, &hostErr) {
		return false // a TLS configuration problem does not heal
	}
	st := kivik.HTTPStatus(err)
	return st == 0 || st >= 500 || st == http.StatusTooManyRequests
}

// retryHTTP runs op, which makes one request, until it succeeds, fails
// permanently (not transient), or httpRetries ends.
func retryHTTP(ctx context.Context, op func() error) error {
	return httpRetries.Do(ctx, func() error {
		err := op()
		if err != nil && !transient(ctx, err) {
			return retry.Permanent(err)
		}
		return err
	})
}

// find runs a Mango query and returns the raw documents.
func (s *Store) find(ctx context.Context, query map[string]any) ([]json.RawMessage, error) {
	var docs []json.RawMessage
	err := retryHTTP(ctx, func() error {
		docs = docs[:0]
		rs := s.db.Find(ctx, query)
		defer rs.Close()
		for rs.Next() {
			var raw json.RawMessage
			if err := rs.ScanDoc(&raw); err != nil {
				return err
			}
			docs = append(docs, raw)
		}
		return rs.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("couch: query %s: %w", s.url, err)
	}
	return docs, nil
}

// findAll pages through a Mango query with limit and skip (bookmarks are
// not portable) and returns every matching raw document.
func (s *Store) findAll(ctx context.Context, query map[string]any, max int) ([]json.RawMessage, error) {
	const page = 20000
	var all []json.RawMessage
	for {
		n := page
		if max > 0 && max-len(all) < n {
			n = max - len(all)
		}
		q := make(map[string]any, len(query)+2)
		for k, v := range query {
			q[k] = v
		}
		q["limit"], q["skip"] = n, len(all)
		docs, err := s.find(ctx, q)
		if err != nil {
			return nil, err
		}
		all = append(all, docs...)
		if len(docs) < n || (max > 0 && len(all) >= max) {
			return all, nil
		}
	}
}

// bulkDocs writes docs (whose IDs are ids) with one _bulk_docs per
// maxBulkDocs documents and returns the per-document results in the order
// of docs, and for each whether its request was answered 202 Accepted: the
// server stored every document reported ok, but some on fewer replicas
// than the write quorum, so a write reported ok may yet lose a conflict.
func (s *Store) bulkDocs(ctx context.Context, ids []string, docs []any) ([]docResult, []bool, error) {
	out := make([]docResult, 0, len(docs))
	acc := make([]bool, 0, len(docs))
	for lo := 0; lo < len(docs); lo += maxBulkDocs {
		hi := min(lo+maxBulkDocs, len(docs))
		res, accepted, err := s.bulkDocsOnce(ctx, ids[lo:hi], docs[lo:hi])
		if err != nil {
			return nil, nil, err
		}
		out = append(out, res...)
		for range res {
			acc = append(acc, accepted)
		}
	}
	return out, acc, nil
}

// bulkDocsOnce is bulkDocs in one request. Results are matched by ID: the
// PouchDB server answers refused documents first.
func (s *Store) bulkDocsOnce(ctx context.Context, ids []string, docs []any) ([]docResult, bool, error) {
	var res []docResult
	var status int
	err := retryHTTP(ctx, func() error {
		if err := state.CheckFence(ctx); err != nil {
			return retry.Permanent(err)
		}
		var err error
		res, status, err = s.bulk.bulkDocs(ctx, docs)
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("couch: bulk write to %s: %w", s.url, err)
	}
	if len(res) != len(docs) {
		return nil, false, fmt.Errorf("couch: bulk write to %s: %d results for %d documents", s.url, len(res), len(docs))
	}
	at := make(map[string][]int, len(ids))
	for i, id := range ids {
		at[id] = append(at[id], i)
	}
	out := make([]docResult, len(docs))
	for _, r := range res {
		q := at[r.ID]
		if len(q) == 0 {
			return nil, false, fmt.Errorf("couch: bulk write to %s: unexpected result for document %q", s.url, r.ID)
		}
		out[q[0]], at[r.ID] = r, q[1:]
	}
	return out, status == http.StatusAccepted, nil
}

// numParts is how many parts of at most size n items make.
func numParts(n, size int) int { return (n + size - 1) / size }

// eachPart calls fn(k, lo, hi) for each part k, items [lo, hi), of n items
// cut in parts of at most size, up to partsInFlight parts at once: the
// server has the next request of a large call to work on while the agent
// encodes the one after it and decodes the answers. Once a part has
// failed no further part starts; those under way finish. It returns the
// first part's error.
func eachPart(n, size int, fn func(k, lo, hi int) error) error {
	var g errgroup.Group
	g.SetLimit(partsInFlight)
	var failed atomic.Bool
	for k := range numParts(n, size) {
		g.Go(func() error {
			if failed.Load() {
				return nil
			}
			lo := k * size
			err := fn(k, lo, min(lo+size, n))
			if err != nil {
				failed.Store(true)
			}
			return err
		})
	}
	return g.Wait()
}

// readKeys reads documents by ID with one request (POST _all_docs with
// keys) per maxReadKeys IDs, two at a time (eachPart). Missing and deleted
// documents are absent from the map. The documents are read with their
// conflicts (a CouchDB cluster reads each from a quorum of its replicas);
// conflicted transfers of an agent's user are resolved first
// (resolveConflicts), with one _bulk_get and one _bulk_docs for all of
// them, and left out if they cannot be.
func (s *Store) readKeys(ctx context.Context, ids []string) (map[string]json.RawMessage, error) {
	type part struct{ docs, conflicted map[string]json.RawMessage }
	parts := make([]part, numParts(len(ids), maxReadKeys))
	err := eachPart(len(ids), maxReadKeys, func(k, lo, hi int) error {
		var err error
		parts[k].docs, parts[k].conflicted, err = s.readKeysOnce(ctx, ids[lo:hi])
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]json.RawMessage, len(ids))
	conflicted := map[string]json.RawMessage{}
	for _, p := range parts {
		maps.Copy(out, p.docs)
		maps.Copy(conflicted, p.conflicted)
	}
	if len(conflicted) > 0 {
		if err := s.resolveConflicts(ctx, conflicted, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readKeysAsStored is readKeys without resolving conflicts: a conflicted
// document is its winning revision as read. A reader that must not write
// (a summary) uses it.
func (s *Store) readKeysAsStored(ctx context.Context, ids []string) (map[string]json.RawMessage, error) {
	parts := make([]map[string]json.RawMessage, numParts(len(ids), maxReadKeys))
	err := eachPart(len(ids), maxReadKeys, func(k, lo, hi int) error {
		docs, conflicted, err := s.readKeysOnce(ctx, ids[lo:hi])
		maps.Copy(docs, conflicted)
		parts[k] = docs
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]json.RawMessage, len(ids))
	for _, p := range parts {
		maps.Copy(out, p)
	}
	return out, nil
}

// readKeysOnce is readKeys of at most maxReadKeys IDs, in one request,
// before the conflicts are resolved: the documents, and apart those with
// conflicts.
func (s *Store) readKeysOnce(ctx context.Context, ids []string) (docs, conflicted map[string]json.RawMessage, err error) {
	err = retryHTTP(ctx, func() error {
		// what a failed attempt read does not count: a document deleted
		// since must not stay behind
		docs, conflicted = make(map[string]json.RawMessage, len(ids)), map[string]json.RawMessage{}
		rows, err := s.bulk.allDocs(ctx, ids, true)
		if err != nil {
			return err
		}
		for _, r := range rows {
			raw := r.Doc
			if r.ID == "" || raw == nil {
				continue // missing or deleted
			}
			if bytes.Contains(raw, []byte(`"_conflicts"`)) && len(conflictsOf(raw)) > 0 {
				conflicted[r.ID] = raw
				continue
			}
			docs[r.ID] = raw
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("couch: read %d documents from %s: %w", len(ids), s.url, err)
	}
	return docs, conflicted, nil
}
