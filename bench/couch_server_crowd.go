package main

import (
	"context"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/asyncstageout/aso/state"
)

// crowdBatch is the number of documents of one _bulk_docs of the
// population.
const crowdBatch = 2000

// crowdMarker is the local document that says a database holds a whole
// crowd, and which: a kept database (-keep) is used again by a later run
// that asks for the same crowd.
const crowdMarker = "_local/aso-bench-crowd"

// crowdDB returns the name of the database of crowd c on server s,
// populated and set up by `aso init`, with its views built: made once,
// then used again, by this run's series and by later runs if kept.
// fresh reports whether it was built now, and took how long to write and
// to index.
func (s *couchServer) crowdDB(ctx context.Context, aso string, c crowd) (db string, built bool, write, index float64, err error) {
	db = fmt.Sprintf("aso_bench_crowd_%d_%d", c.docs, c.users)
	want := fmt.Sprintf(`{"docs":%d,"users":%d,"v":1}`, c.docs, c.users)
	if b, err := s.do(ctx, http.MethodGet, db+"/"+crowdMarker, nil); err == nil {
		var m struct{ Crowd json.RawMessage }
		if json.Unmarshal(b, &m) == nil && string(m.Crowd) == want {
			return db, false, 0, 0, nil
		}
	}
	s.dropDB(db)
	if _, err := s.do(ctx, http.MethodPut, db, nil); err != nil {
		return db, false, 0, 0, err
	}
	t0 := time.Now()
	if err := s.populate(ctx, db, c); err != nil {
		return db, false, 0, 0, fmt.Errorf("populate the crowd: %w", err)
	}
	write = time.Since(t0).Seconds()
	if out, err := asoCommand(ctx, aso, s.dbURL(db), "init", "--log-level", "warn").CombinedOutput(); err != nil {
		return db, false, 0, 0, fmt.Errorf("aso init: %v: %s", err, tail(out))
	}
	t0 = time.Now()
	if err := s.buildViews(ctx, db); err != nil {
		return db, false, 0, 0, fmt.Errorf("index the crowd: %w", err)
	}
	index = time.Since(t0).Seconds()
	mk, _ := json.Marshal(map[string]json.RawMessage{"crowd": json.RawMessage(want)})
	if _, err := s.do(ctx, http.MethodPut, db+"/"+crowdMarker, mk); err != nil {
		return db, false, 0, 0, err
	}
	return db, true, write, index, nil
}

// populate writes the crowd's documents into db, crowdBatch a request,
// one request at a time while the next batch is encoded (the test server
// is single-threaded: a request waiting behind another may time out
// there before its body is read), each at a
// revision of its own (new_edits=false, as a replication writes them,
// which the test server stores faster than new documents). The
// database has no design documents yet (aso init comes after), so no
// validation function runs on them: they are made by the state rules.
func (s *couchServer) populate(ctx context.Context, db string, c crowd) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(1)
	for lo := 0; lo < c.docs; lo += crowdBatch {
		hi := min(c.docs, lo+crowdBatch)
		docs := make([]state.Transfer, 0, hi-lo)
		for k := lo; k < hi; k++ {
			t, err := c.doc(k)
			if err != nil {
				return fmt.Errorf("document %d: %w", k, err)
			}
			t.Rev = crowdRev(k)
			docs = append(docs, t)
		}
		body, err := json.Marshal(map[string]any{"docs": docs, "new_edits": false})
		if err != nil {
			return err
		}
		g.Go(func() error {
			rb, err := s.do(gctx, http.MethodPost, db+"/_bulk_docs", body)
			if err != nil {
				return err
			}
			var res []struct{ ID, Error, Reason string }
			if err := json.Unmarshal(rb, &res); err != nil {
				return err
			}
			// new_edits=false answers only the documents it refused
			for _, r := range res {
				if r.Error != "" {
					return fmt.Errorf("%s: %s: %s", r.ID, r.Error, r.Reason)
				}
			}
			return nil
		})
		if gctx.Err() != nil {
			break
		}
	}
	return g.Wait()
}

// buildViews queries every view of every design document of db once, so
// that the server builds their indexes before anything is timed: a
// production database's indexes are built as its documents arrive.
func (s *couchServer) buildViews(ctx context.Context, db string) error {
	b, err := s.do(ctx, http.MethodGet, db+`/_all_docs?include_docs=true&startkey="_design/"&endkey="_design0"`, nil)
	if err != nil {
		return err
	}
	var all struct {
		Rows []struct {
			ID  string
			Doc struct {
				Language string
				Views    map[string]json.RawMessage
			}
		}
	}
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	for _, r := range all.Rows {
		name := strings.TrimPrefix(r.ID, "_design/")
		if r.Doc.Language == "query" { // a Mango index: built by a query that uses it
			q, _ := json.Marshal(map[string]any{"selector": map[string]any{"type": "transfer"}, "use_index": name, "limit": 1})
			if err := s.untilAnswered(ctx, http.MethodPost, db+"/_find", q); err != nil {
				return err
			}
			continue
		}
		for v := range r.Doc.Views {
			if err := s.untilAnswered(ctx, http.MethodGet, fmt.Sprintf("%s/_design/%s/_view/%s?limit=1", db, name, v), nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// buildTries is how many times untilAnswered asks: a query that
// builds an index over a large crowd can outlast the client's timeout.
const buildTries = 6

// untilAnswered makes a request that builds an index, again while the
// client times out: the server goes on building after the client gives
// up, and the next query waits for that build, then brings the index up to
// date from where it stopped.
func (s *couchServer) untilAnswered(ctx context.Context, method, path string, body []byte) error {
	var err error
	for range buildTries {
		var ne net.Error
		if _, err = s.do(ctx, method, path, body); err == nil || !errors.As(err, &ne) || !ne.Timeout() || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// crowdRev is the revision of the crowd's document k.
func crowdRev(k int) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(k))
	h := sha1.Sum(b[:])
	return "1-" + hex.EncodeToString(h[:16])
}
