// Command codesize prints the code lines (not blank, not comment) of the
// module's packages that the package given (default ".", the aso binary)
// links, one package a line, with cmd's share and the total: the numbers
// issue targets are stated in. Test support packages (couchtest, ftstest,
// statetest, proctest, ...: a path element ending in "test" or named
// testsupport) are not product; if the binary links one, codesize names it
// and exits 1. It runs as `make size`.
package main

import (
	"fmt"
	"go/scanner"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	target := "."
	if len(os.Args) > 1 {
		target = os.Args[1]
	}
	pkgs, err := linked(target)
	if err != nil {
		fmt.Fprintln(os.Stderr, "codesize:", err)
		os.Exit(1)
	}
	if code := report(pkgs); code != 0 {
		os.Exit(code)
	}
}

// pkg is one linked package of the module: its import path, directory and
// non-test Go files.
type pkg struct {
	path, dir string
	files     []string
}

// linked lists the module's packages that target links, from go list.
func linked(target string) ([]pkg, error) {
	out, err := exec.Command("go", "list", "-deps",
		"-f", "{{if .Module}}{{if .Module.Main}}{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \" \"}}{{end}}{{end}}", target).Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps %s: %w", target, err)
	}
	var pkgs []pkg
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, "\t", 3)
		if len(f) != 3 {
			continue
		}
		pkgs = append(pkgs, pkg{path: f[0], dir: f[1], files: strings.Fields(f[2])})
	}
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].path < pkgs[j].path })
	return pkgs, nil
}

// report prints each package's code lines and the totals; it returns 1
// when a harness is linked.
func report(pkgs []pkg) int {
	total, harness := 0, 0
	var cmdLines int
	for _, p := range pkgs {
		n := 0
		for _, f := range p.files {
			src, err := os.ReadFile(filepath.Join(p.dir, f))
			if err != nil {
				fmt.Fprintln(os.Stderr, "codesize:", err)
				return 1
			}
			n += CodeLines(src)
		}
		if IsHarness(p.path) {
			fmt.Printf("%7d  %s  (test support, linked: it must not be)\n", n, p.path)
			harness++
			continue
		}
		fmt.Printf("%7d  %s\n", n, p.path)
		total += n
		if strings.HasSuffix(p.path, "/cmd") {
			cmdLines = n
		}
	}
	fmt.Printf("%7d  total linked (cmd %d)\n", total, cmdLines)
	if harness > 0 {
		return 1
	}
	return 0
}

// IsHarness tells whether an import path is test support: one of its
// elements ends in "test" or is "testsupport".
func IsHarness(path string) bool {
	for _, e := range strings.Split(path, "/") {
		if strings.HasSuffix(e, "test") || e == "testsupport" {
			return true
		}
	}
	return false
}

// CodeLines counts the lines of Go source that hold a token other than a
// comment: blank lines (also inside a raw string) and lines of comments
// only are not code.
func CodeLines(src []byte) int {
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	var s scanner.Scanner
	s.Init(file, src, nil, scanner.ScanComments)
	lines := map[int]bool{}
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.COMMENT || (tok == token.SEMICOLON && lit == "\n") {
			continue
		}
		start := file.Line(pos)
		// a raw string's lines are code, but for its blank ones
		for i, l := range strings.Split(lit, "\n") {
			if i == 0 || strings.TrimSpace(l) != "" {
				lines[start+i] = true
			}
		}
	}
	return len(lines)
}
