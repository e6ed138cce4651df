package couch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-kivik/kivik/v4"
	"golang.org/x/sync/errgroup"

	"github.com/asyncstageout/aso/state"
)

// The retry policy of every request and of the conflict rounds (see
// retries): tries, each after a wait from 50 ms growing by half to at most
// 2 s, drawn within ±50% of that, and the caller's context.
const (
	// httpTries: of one request that fails transiently (see transient);
	// on a cluster each try after a failure goes to the next node (see
	// failover)
	httpTries = 5
	// conflictTries: re-read and re-apply rounds after conflicts
	conflictTries = 6
)

// retries runs op until it succeeds, returns an error marked
// backoff.Permanent (returned unmarked), has run tries times (its last
// error is returned) or ctx ends (ctx's error is returned).
func retries(ctx context.Context, tries uint64, op func() error) error {
	b := backoff.NewExponentialBackOff(backoff.WithInitialInterval(50*time.Millisecond), backoff.WithMaxInterval(2*time.Second), backoff.WithMaxElapsedTime(0))
	return backoff.Retry(op, backoff.WithContext(backoff.WithMaxRetries(b, tries-1), ctx))
}

// Bounds of one request: a call with more documents makes several, so that
// a request body (and the buffers that encode it) stays a few MiB.
const (
	maxBulkDocs   = 2000 // documents of one _bulk_docs
	partsInFlight = 2    // requests of one call under way at once (see eachPart)
	maxReadKeys   = 5000 // IDs of one _all_docs?keys=
)

// db is the database as HTTP requests see it: kivik's client and
// database, the one bulk helper beside them (bulkHTTP), and the retry of
// every request. It knows documents, views and revisions, not transfers.
type db struct {
	client *kivik.Client
	kdb    *kivik.DB
	bulk   *bulkHTTP // _bulk_docs and _all_docs?keys=
	url    string    // redacted, for errors
	// readQuorum is the r of the database's cluster (0: not a cluster,
	// or the server does not say)
	readQuorum int
}

// ErrNoDatabase is wrapped by the error of opening a database that does
// not exist: only `aso init` creates one.
var ErrNoDatabase = errors.New("the database does not exist")

// openDB connects to the existing database of o in one request: the
// database's information (404: it does not exist), with the cluster's
// read quorum when it is a cluster; in none when o.Checked says that.
func openDB(ctx context.Context, o Options) (*db, error) {
	c, t, hc, err := connect(o)
	if err != nil {
		return nil, err
	}
	d := &db{client: c, kdb: c.DB(t.db), bulk: newBulkHTTP(hc, t), url: t.server + t.db}
	if o.Checked != nil {
		d.readQuorum = o.Checked.ReadQuorum
		return d, nil
	}
	var st *kivik.DBStats
	missing := false
	err = retryHTTP(ctx, func() error {
		var err error
		st, err = d.kdb.Stats(ctx)
		if missing = kivik.HTTPStatus(err) == http.StatusNotFound; missing {
			return nil
		}
		return err
	})
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("couch: open %s: %w", d.url, err)
	}
	if missing {
		_ = c.Close()
		return nil, fmt.Errorf("couch: open %s: %w; create it with `aso init --state URL`", d.url, ErrNoDatabase)
	}
	if st != nil && st.Cluster != nil && st.Cluster.Replicas > 1 {
		d.readQuorum = st.Cluster.ReadQuorum
	}
	return d, nil
}

// close releases the client's connections.
func (d *db) close() error {
	if err := d.kdb.Close(); err != nil {
		return fmt.Errorf("couch: close: %w", err)
	}
	if err := d.client.Close(); err != nil {
		return fmt.Errorf("couch: close: %w", err)
	}
	return nil
}

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
// permanently (not transient), or httpTries have failed.
func retryHTTP(ctx context.Context, op func() error) error {
	return retries(ctx, httpTries, func() error {
		err := op()
		if err != nil && !transient(ctx, err) {
			return backoff.Permanent(err)
		}
		return err
	})
}

// find runs a Mango query and returns the raw documents.
func (d *db) find(ctx context.Context, query map[string]any) ([]json.RawMessage, error) {
	var docs []json.RawMessage
	err := retryHTTP(ctx, func() error {
		docs = docs[:0]
		rs := d.kdb.Find(ctx, query)
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
		return nil, fmt.Errorf("couch: query %s: %w", d.url, err)
	}
	return docs, nil
}

// findAll pages through a Mango query with limit and skip (bookmarks are
// not portable) and returns every matching raw document.
func (d *db) findAll(ctx context.Context, query map[string]any, max int) ([]json.RawMessage, error) {
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
		docs, err := d.find(ctx, q)
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
func (d *db) bulkDocs(ctx context.Context, ids []string, docs []any) ([]docResult, []bool, error) {
	out := make([]docResult, 0, len(docs))
	acc := make([]bool, 0, len(docs))
	for lo := 0; lo < len(docs); lo += maxBulkDocs {
		hi := min(lo+maxBulkDocs, len(docs))
		res, accepted, err := d.bulkDocsOnce(ctx, ids[lo:hi], docs[lo:hi])
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
func (d *db) bulkDocsOnce(ctx context.Context, ids []string, docs []any) ([]docResult, bool, error) {
	var res []docResult
	var status int
	err := retryHTTP(ctx, func() error {
		if err := state.CheckFence(ctx); err != nil {
			return backoff.Permanent(err)
		}
		var err error
		res, status, err = d.bulk.bulkDocs(ctx, docs)
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("couch: bulk write to %s: %w", d.url, err)
	}
	if len(res) != len(docs) {
		return nil, false, fmt.Errorf("couch: bulk write to %s: %d results for %d documents", d.url, len(res), len(docs))
	}
	at := make(map[string][]int, len(ids))
	for i, id := range ids {
		at[id] = append(at[id], i)
	}
	out := make([]docResult, len(docs))
	for _, r := range res {
		q := at[r.ID]
		if len(q) == 0 {
			return nil, false, fmt.Errorf("couch: bulk write to %s: unexpected result for document %q", d.url, r.ID)
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
