package cmd_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdLink is a Markdown link to a relative target: a file, a file and an
// anchor, or an anchor of the same page.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// anchorsOf returns the anchors of the headings of a Markdown page, as
// GitHub makes them (lower case, punctuation dropped, spaces as -), out of
// its code blocks.
func anchorsOf(text string) map[string]bool {
	out := map[string]bool{}
	fence := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "```") {
			fence = !fence
			continue
		}
		if fence || !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(l, "#")))
		h = regexp.MustCompile(`[^\w\- ]`).ReplaceAllString(h, "")
		out[strings.ReplaceAll(h, " ", "-")] = true
	}
	return out
}

// TestDocs_LinksResolve: every relative link of the README and of docs/
// names a file that exists and, with an anchor, a heading of that file,
// so that a section that moves does not leave links to nowhere behind.
func TestDocs_LinksResolve(t *testing.T) {
	pages, _ := filepath.Glob("../docs/*.md")
	pages = append(pages, "../README.md", "../bench/README.md")
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
			}
			text, err := os.ReadFile(path)
			if err != nil {
				t.Errorf("%s: link %s: %v", page, target, err)
				continue
			}
			if anchor != "" && !anchorsOf(string(text))[anchor] {
				t.Errorf("%s: link %s: %s has no heading with that anchor", page, target, path)
			}
		}
	}
}

// TestREADME_Short: the README stays a page a newcomer reads in ten
// minutes; the rest lives in docs/.
func TestREADME_Short(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > 300 {
		t.Errorf("README.md is %d lines, want at most 300: move reference material into docs/", n)
	}
}
