package serve

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"time"

	"github.com/asyncstageout/aso/internal/statusview"
	"github.com/asyncstageout/aso/state"
)

//go:embed templates/*.html
var templateFiles embed.FS

// pages are the HTML templates, parsed once.
type pages struct{ t *template.Template }

// errorPage is what the error template reads.
type errorPage struct {
	Code           int
	Title, Message string
	Viewer         *viewer
}

func newPages() (*pages, error) {
	t, err := template.New("").Funcs(template.FuncMap{
		"listURL":     listURL,
		"userURL":     func(u string) string { return "/users/" + url.PathEscape(u) },
		"linkURL":     func(l string) string { return "/links/" + url.PathEscape(l) },
		"transferURL": func(id string) string { return "/transfers/" + id },
		"short":       func(id string) string { return id[:min(16, len(id))] },
		"when":        when,
		"stamp":       stamp,
		"pct":         func(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) },
		"f1":          func(f float64) string { return fmt.Sprintf("%.1f", f) },
		"sub":         func(a, b int) int { return a - b },
		"plus":        func(a, b int) int { return a + b },
		"half":        func(a int) int { return a / 2 },
		"hint":        func(c string) string { return classHints[c] },
		"exitText":    exitMeaning,
		"failure":     state.FailureClass,
		"deref":       func(f *float64) float64 { return *f },
		"stateOf":     reasonState,
		"classOf":     func(c string) string { return c },
	}).ParseFS(templateFiles, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("serve: templates: %w", err)
	}
	return &pages{t: t}, nil
}

// render writes template name of data with status code; the page is
// rendered in full first, so that a template error is a 500, not half a
// page.
func (p *pages) render(w http.ResponseWriter, code int, name string, data any) {
	var buf bytes.Buffer
	if err := p.t.ExecuteTemplate(&buf, name, data); err != nil {
		http.Error(w, "serve: render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// listURL is the list of the transfers that kv (filter name, value, ...)
// select; empty values are left out.
func listURL(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			v.Set(kv[i], kv[i+1])
		}
	}
	if len(v) == 0 {
		return "/transfers"
	}
	return "/transfers?" + v.Encode()
}

// stamp formats t for a table: UTC to the second, "-" for none.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// reasonState is the state whose list holds the transfers of a failure
// reason count: failed, or new for those waiting to retry.
func reasonState(s string) string {
	if s == statusview.ReasonFailed {
		return string(state.StateFailed)
	}
	return string(state.StateNew)
}
