package couch_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/go-kivik/kivik/v4"
	_ "github.com/go-kivik/kivik/v4/couchdb" // the "couch" driver
)

// rawDB opens the database at url with plain kivik, to write documents the
// store would never write.
func rawDB(t testing.TB, url string) *kivik.DB {
	t.Helper()
	i := len(url) - 1
	for url[i] != '/' {
		i--
	}
	c, err := kivik.New("couch", url[:i+1])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c.DB(url[i+1:])
}

// putRaw writes doc (JSON) and returns the HTTP status (201 on success).
func putRaw(t testing.TB, db *kivik.DB, id, doc string) int {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatalf("bad test document: %v", err)
	}
	_, err := db.Put(context.Background(), id, m)
	if err != nil {
		return kivik.HTTPStatus(err)
	}
	return http.StatusCreated
}

// getRaw reads a document as a map.
func getRaw(t testing.TB, db *kivik.DB, id string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := db.Get(context.Background(), id).ScanDoc(&m); err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return m
}
