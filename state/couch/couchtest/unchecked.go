package couchtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// PutUnchecked writes docs (JSON, by ID) into the database at u (with an
// admin's credentials) as a store written before its validate_doc_update
// holds them: the design document _design/aso is set aside while they are
// written, and put back as it was. The views stay, and index them.
func PutUnchecked(t testing.TB, u string, docs map[string][]byte) {
	t.Helper()
	u = strings.TrimSuffix(u, "/")
	code, design := do(t, http.MethodGet, u+"/_design/aso", nil)
	var d map[string]any
	if code != http.StatusOK || json.Unmarshal(design, &d) != nil {
		t.Fatalf("couchtest: read _design/aso: HTTP %d %s", code, design)
	}
	if code, body := do(t, http.MethodDelete, fmt.Sprintf("%s/_design/aso?rev=%v", u, d["_rev"]), nil); code != http.StatusOK {
		t.Fatalf("couchtest: set _design/aso aside: HTTP %d %s", code, body)
	}
	for id, doc := range docs {
		if code, body := do(t, http.MethodPut, u+"/"+id, doc); code != http.StatusCreated {
			t.Fatalf("couchtest: write %s: HTTP %d %s", id, code, body)
		}
	}
	delete(d, "_rev")
	back, _ := json.Marshal(d)
	if code, body := do(t, http.MethodPut, u+"/_design/aso", back); code != http.StatusCreated {
		t.Fatalf("couchtest: put _design/aso back: HTTP %d %s", code, body)
	}
}

// do makes one request with the credentials in u's user information.
func do(t testing.TB, method, u string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("couchtest: %s: %v", method, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
