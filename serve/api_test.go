package serve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/internal/statusview"
	"github.com/asyncstageout/aso/serve"
	"github.com/asyncstageout/aso/state"
)

var nextLink = regexp.MustCompile(`^<([^>]+)>; rel="next"$`)

// TestAPI: on both backends, the JSON behind each page has the shapes and
// numbers of the command line's: the overview's counts are aso status
// --all-users', a user's aso status --user's; the list's pages, followed
// by their next links, are aso list --json's transfers in order; a
// transfer is aso status ID --json; /api/status is aso status --json.
// Every page only reads the store.
func TestAPI(t *testing.T) {
	for _, b := range []backend{memfileBackend(t, 200), couchBackend(t, 200)} {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			u, _ := start(t, b, serve.Options{})
			sum, err := b.st.Summary(ctx, state.SummaryOptions{})
			if err != nil {
				t.Fatal(err)
			}
			reasons, err := statusview.FailureReasons(ctx, b.st, "")
			if err != nil {
				t.Fatal(err)
			}
			want := statusview.NewStatus("", sum)
			var ov serve.Overview
			getJSON(t, u+"/api/overview", &ov)
			if ov.Total != want.Total || !reflect.DeepEqual(ov.ByState, want.ByState) || !reflect.DeepEqual(ov.ByUser, want.ByUser) ||
				!reflect.DeepEqual(ov.ByLink, want.ByLink) || !reflect.DeepEqual(ov.ByErrorClass, want.ByErrorClass) || !reflect.DeepEqual(ov.FailureReasons, reasons) {
				t.Fatalf("overview %+v\nwant %+v", ov, want)
			}
			var st statusview.Status
			getJSON(t, u+"/api/status", &st)
			if st.Total != want.Total || !reflect.DeepEqual(st.ByState, want.ByState) || len(st.Locks) != len(ov.Locks) || len(st.Locks) == 0 {
				t.Fatalf("/api/status %+v", st)
			}
			checkPages(t, b, u)
			for _, path := range []string{"/", "/users/bob", "/links/T2_IT_Pisa->T2_DE_DESY", "/transfers", "/status", "/metrics"} {
				if code, body := get(t, nil, u+path); code != 200 {
					t.Fatalf("GET %s: %d %.300s", path, code, body)
				}
			}
			noWrites(t, b)
		})
	}
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	code, body := get(t, nil, u)
	if code != 200 {
		t.Fatalf("GET %s: %d %s", u, code, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}

// checkPages follows the list of bob's failed transfers page by page and
// compares it with List, then one transfer with Get.
func checkPages(t *testing.T, b backend, u string) {
	t.Helper()
	want, err := b.st.List(context.Background(), state.Filter{User: "bob", States: []state.State{state.StateFailed}})
	if err != nil {
		t.Fatal(err)
	}
	var got []state.Transfer
	next, pages := "/api/transfers?user=bob&in-state=failed&limit=7", 0
	for next != "" {
		resp, err := http.Get(u + next)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(resp.Body)
		for dec.More() {
			var tr state.Transfer
			if err := dec.Decode(&tr); err != nil {
				t.Fatal(err)
			}
			got = append(got, tr)
		}
		resp.Body.Close()
		next = ""
		if m := nextLink.FindStringSubmatch(resp.Header.Get("Link")); m != nil {
			next = m[1]
		}
		pages++
	}
	if len(want) < 20 || len(got) != len(want) || pages != (len(want)+6)/7 {
		t.Fatalf("%d pages of %d transfers, List has %d", pages, len(got), len(want))
	}
	for i := range want {
		if got[i].ID != want[i].ID || got[i].Rev != want[i].Rev {
			t.Fatalf("transfer %d of the pages: %s, List %s", i, got[i].ID, want[i].ID)
		}
	}
	var one statusview.Transfer
	getJSON(t, u+"/api/transfers/"+want[3].ID[:12], &one)
	if one.Transfer == nil || !reflect.DeepEqual(*one.Transfer, want[3]) {
		t.Fatalf("/api/transfers/ID: %+v\nwant %+v", one.Transfer, want[3])
	}
	if code, body := get(t, nil, u+"/api/transfers?in-state=bogus"); code != 400 || !strings.Contains(body, "in-state") {
		t.Fatalf("a bad filter: %d %s", code, body)
	}
}
