// Package habits checks the size rules of the module's code: no non-test
// Go file over MaxFileLines lines and no function over MaxFuncLines. It
// runs with `go test ./...` and `make lint`.
package habits

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The size rules.
const (
	MaxFileLines = 500
	MaxFuncLines = 80
)

// offenders lists every non-test Go file of the module under root that
// breaks a size rule, one line each: "path: N lines (max M)" or
// "path:line: function F is N lines (max M)". Directories Go skips
// (testdata, names starting with . or _) and node_modules are not read.
func offenders(root string) ([]string, error) {
	var out []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if n := strings.Count(string(src), "\n"); n > MaxFileLines {
			out = append(out, fmt.Sprintf("%s: %d lines (max %d)", rel, n, MaxFileLines))
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			start, end := fset.Position(fn.Pos()), fset.Position(fn.End())
			if n := end.Line - start.Line + 1; n > MaxFuncLines {
				out = append(out, fmt.Sprintf("%s:%d: function %s is %d lines (max %d)", rel, start.Line, funcName(fn), n, MaxFuncLines))
			}
		}
		return nil
	})
	return out, err
}

// funcName is fn's name, with its receiver's type for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if g, ok := t.(*ast.IndexExpr); ok {
		t = g.X
	}
	if g, ok := t.(*ast.IndexListExpr); ok {
		t = g.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}

// TestSizes fails naming each file and function of the module over its
// size limit.
func TestSizes(t *testing.T) {
	bad, err := offenders(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// TestOffenders: the check finds a file and a function over the limits,
// and skips test files and testdata.
func TestOffenders(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	long := "package p\n\nfunc (s *T) Long() {\n" + strings.Repeat("\t_ = 1\n", MaxFuncLines-1) + "}\n"
	short := "package p\n\nfunc Short() {\n" + strings.Repeat("\t_ = 1\n", MaxFuncLines-2) + "}\n"
	big := "package p\n" + strings.Repeat("// x\n", MaxFileLines)
	write("a/long.go", long)
	write("a/short.go", short)
	write("a/big.go", big)
	write("a/long_test.go", long+big)
	write("a/testdata/long.go", long)
	got, err := offenders(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		fmt.Sprintf("a/big.go: %d lines (max %d)", MaxFileLines+1, MaxFileLines),
		fmt.Sprintf("a/long.go:3: function T.Long is %d lines (max %d)", MaxFuncLines+1, MaxFuncLines),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("offenders:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
