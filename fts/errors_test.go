package fts_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/fts"
)

func TestErrorMessage(t *testing.T) {
	long := strings.Repeat("é", 400)
	for name, tc := range map[string]struct{ body, want string }{
		"status/message": {string(shared(t, "conflict_409.json")), "The sid provided by the user is duplicated"},
		"error entry":    {string(shared(t, "not_found.json")), `No job with the id "00000000-0000-0000-0000-000000000000" has been found`},
		"werkzeug page":  {string(shared(t, "forbidden_403.html")), "The user does not belong to any authorized vo"},
		"apache page": {string(golden(t, "error_503.html")),
			"The server is temporarily unable to service your request due to maintenance downtime or capacity problems. Please try again later."},
		"title only":    {"<html><head><title>502 Proxy Error</title></head><body></body></html>", "502 Proxy Error"},
		"entities":      {"<p>No delegation found for &quot;/C=CH/CN=A &amp; B&quot;</p>", `No delegation found for "/C=CH/CN=A & B"`},
		"json string":   {`"File does not belong to the job"`, "File does not belong to the job"},
		"plain text":    {"Internal error\nTraceback (most recent call last):\n  File x", "Internal error"},
		"empty":         {"", ""},
		"null message":  {`{"status": "500 Internal Server Error", "message": null}`, "500 Internal Server Error"},
		"long":          {`{"message": "` + long + `"}`, long[:fts.MaxMessage-4] + "..."},
		"broken json":   {`{"message": "abc`, `{"message": "abc`},
		"invalid utf-8": {"bad \xff byte", "bad ? byte"},
		"nested markup": {"<p>Not <b>allowed</b>\n here</p>", "Not allowed here"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := fts.ErrorMessage([]byte(tc.body)); got != tc.want {
				t.Errorf("ErrorMessage = %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestHTTPError(t *testing.T) {
	for code, want := range map[int]error{400: fts.ErrBadRequest, 401: fts.ErrUnauthorized, 403: fts.ErrForbidden,
		404: fts.ErrNotFound, 409: fts.ErrDuplicate, 419: fts.ErrNeedDelegation, 500: fts.ErrServer, 503: fts.ErrServer, 429: fts.ErrServer} {
		err := fmt.Errorf("fts: op: %w", &fts.HTTPError{StatusCode: code, Message: "m"})
		if !errors.Is(err, want) {
			t.Errorf("HTTP %d does not unwrap to %v", code, want)
		}
		if transient := code >= 500 || code == 429; fts.IsTransient(err) != transient {
			t.Errorf("IsTransient(HTTP %d) = %v", code, !transient)
		}
	}
	if got := (&fts.HTTPError{StatusCode: 419, Message: "No delegation found"}).Error(); got != "HTTP 419 Authentication Timeout: No delegation found" {
		t.Errorf("419 error reads %q", got)
	}
	for _, err := range []error{nil, context.Canceled, errors.New("other"), &fts.DuplicateError{}} {
		if fts.IsTransient(err) {
			t.Errorf("IsTransient(%v) = true", err)
		}
	}
	if !fts.IsTransient(fmt.Errorf("x: %w", fts.ErrTimeout)) {
		t.Error("ErrTimeout is not transient")
	}
}

func TestTerminalStates(t *testing.T) {
	for s, want := range map[string]bool{"FINISHED": true, "FAILED": true, "FINISHEDDIRTY": true, "CANCELED": true,
		"ACTIVE": false, "SUBMITTED": false, "STAGING": false, "ARCHIVING": false, "": false} {
		if got := fts.TerminalJobState(s); got != want {
			t.Errorf("TerminalJobState(%q) = %v", s, got)
		}
	}
}
