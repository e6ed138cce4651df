// Package habits checks the code-shape rules of the module's non-test Go
// files: no function over MaxFuncLines lines; a type's methods in the
// type's own files (the file that declares it, or files named after it);
// in the packages of MethodCapped, no type with more than MaxMethods
// methods. A type that grows is split into types that own their state,
// not spread over more files. It runs with `go test ./...` and `make lint`.
package habits

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode"
)

// The shape rules.
const (
	MaxFuncLines = 80
	MaxMethods   = 25
)

// MethodCapped are the directories (relative to the module root, with
// their subdirectories) where no type may have more than MaxMethods
// methods: the agent, whose stages are types of their own, the commands,
// and the fleet, whose parts are types of their own.
var MethodCapped = []string{"agent", "cmd", "fleet"}

// method is one method declaration: where it is and whose it is.
type method struct {
	file, name string
	line       int
}

// pkgShape is what the rules need of one package (a directory and a
// package name): the files declaring each type and each type's methods.
type pkgShape struct {
	dir     string
	decls   map[string][]string // type -> files declaring it
	declPos map[string]int      // type -> line of its declaration
	methods map[string][]method // type -> its methods, in file order
}

// offenders lists every break of a shape rule by the non-test Go files of
// the module under root, one line each, sorted. Directories Go skips
// (testdata, names starting with . or _) and node_modules are not read.
func offenders(root string) ([]string, error) {
	fset := token.NewFileSet()
	pkgs := map[string]*pkgShape{}
	var out []string
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
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		out = append(out, longFuncs(fset, rel, f)...)
		key := filepath.ToSlash(filepath.Dir(rel)) + " " + f.Name.Name
		if pkgs[key] == nil {
			pkgs[key] = &pkgShape{dir: filepath.ToSlash(filepath.Dir(rel)), decls: map[string][]string{}, declPos: map[string]int{}, methods: map[string][]method{}}
		}
		pkgs[key].add(fset, name, f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, p := range pkgs {
		out = append(out, p.strayMethods()...)
		if capped(p.dir) {
			out = append(out, p.bigTypes()...)
		}
	}
	sort.Strings(out)
	return out, nil
}

// longFuncs names each function of f longer than MaxFuncLines.
func longFuncs(fset *token.FileSet, rel string, f *ast.File) []string {
	var out []string
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		start, end := fset.Position(fn.Pos()), fset.Position(fn.End())
		if n := end.Line - start.Line + 1; n > MaxFuncLines {
			name := fn.Name.Name
			if recv := receiver(fn); recv != "" {
				name = recv + "." + name
			}
			out = append(out, fmt.Sprintf("%s:%d: function %s is %d lines (max %d)", rel, start.Line, name, n, MaxFuncLines))
		}
	}
	return out
}

// add records the types file (its base name) declares and the methods it
// holds.
func (p *pkgShape) add(fset *token.FileSet, file string, f *ast.File) {
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.GenDecl:
			for _, s := range d.Specs {
				if ts, ok := s.(*ast.TypeSpec); ok {
					p.decls[ts.Name.Name] = append(p.decls[ts.Name.Name], file)
					p.declPos[ts.Name.Name] = fset.Position(ts.Pos()).Line
				}
			}
		case *ast.FuncDecl:
			if recv := receiver(d); recv != "" {
				p.methods[recv] = append(p.methods[recv], method{file: file, name: d.Name.Name, line: fset.Position(d.Pos()).Line})
			}
		}
	}
}

// strayMethods names each method that is not in one of its type's files.
func (p *pkgShape) strayMethods() []string {
	var out []string
	for typ, ms := range p.methods {
		for _, m := range ms {
			if !ownFile(typ, m.file, p.decls[typ]) {
				out = append(out, fmt.Sprintf("%s/%s:%d: method %s.%s is outside %s's files (%s)",
					p.dir, m.file, m.line, typ, m.name, typ, strings.Join(ownFiles(typ, p.decls[typ]), ", ")))
			}
		}
	}
	return out
}

// bigTypes names each type with more than MaxMethods methods.
func (p *pkgShape) bigTypes() []string {
	var out []string
	for typ, ms := range p.methods {
		if len(ms) > MaxMethods {
			file := ms[0].file
			if len(p.decls[typ]) > 0 {
				file = p.decls[typ][0]
			}
			out = append(out, fmt.Sprintf("%s/%s:%d: type %s has %d methods (max %d): split it into types",
				p.dir, file, p.declPos[typ], typ, len(ms), MaxMethods))
		}
	}
	return out
}

// ownNames are the stems of typ's files: those of the files declaring
// it, then its name in snake_case.
func ownNames(typ string, decls []string) []string {
	var names []string
	for _, d := range append(slices.Clone(decls), snake(typ)+".go") {
		if n := strings.TrimSuffix(d, ".go"); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// ownFile reports whether file is one of typ's files: a file declaring
// it or named after one (decl.go, decl_*.go), or a file named after the
// type (snake_case name, then ".go" or "_*.go").
func ownFile(typ, file string, decls []string) bool {
	stem := strings.TrimSuffix(file, ".go")
	for _, n := range ownNames(typ, decls) {
		if stem == n || strings.HasPrefix(stem, n+"_") {
			return true
		}
	}
	return false
}

// ownFiles lists typ's files for a message, as patterns.
func ownFiles(typ string, decls []string) []string {
	var out []string
	for _, n := range ownNames(typ, decls) {
		out = append(out, n+".go", n+"_*.go")
	}
	return out
}

// capped reports whether dir is under one of MethodCapped.
func capped(dir string) bool {
	for _, c := range MethodCapped {
		if dir == c || strings.HasPrefix(dir, c+"/") {
			return true
		}
	}
	return false
}

// receiver is the name of fn's receiver type ("" for a function), with
// pointer and type parameters taken off.
func receiver(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return ""
	}
	t := fn.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.ParenExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// snake is a Go name in snake_case, initialisms kept whole: Client is
// client, FTSOptions fts_options, wireJob wire_job, HTTPServer http_server.
func snake(name string) string {
	r := []rune(name)
	var b strings.Builder
	for i, c := range r {
		if i > 0 && unicode.IsUpper(c) {
			prev := r[i-1]
			nextLower := i+1 < len(r) && unicode.IsLower(r[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}

// TestShape fails naming each function, method and type of the module
// that breaks a shape rule.
func TestShape(t *testing.T) {
	bad, err := offenders(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// writeModule writes files (path -> source) under a temporary directory
// and returns it.
func writeModule(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// checkOffenders runs offenders on a module of files and compares its
// lines with want.
func checkOffenders(t *testing.T, files map[string]string, want ...string) {
	t.Helper()
	got, err := offenders(writeModule(t, files))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("offenders:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestOffenders_LongFunctions: a function over MaxFuncLines is named, one
// at the limit is not, and test files and testdata are not read.
func TestOffenders_LongFunctions(t *testing.T) {
	long := "package p\n\ntype T struct{}\n\nfunc (s *T) Long() {\n" + strings.Repeat("\t_ = 1\n", MaxFuncLines-1) + "}\n"
	short := "package p\n\nfunc Short() {\n" + strings.Repeat("\t_ = 1\n", MaxFuncLines-2) + "}\n"
	checkOffenders(t, map[string]string{
		"a/t.go":             long,
		"a/short.go":         short,
		"a/long_test.go":     strings.Replace(long, "Long", "LongTest", 1),
		"a/testdata/long.go": long,
	}, fmt.Sprintf("a/t.go:5: function T.Long is %d lines (max %d)", MaxFuncLines+1, MaxFuncLines))
}

// TestOffenders_MethodFiles: a type's methods pass in the file declaring
// it, in files named after that file or after the type, and are named
// anywhere else; generic receivers count as their type; test files,
// testdata and node_modules are not read.
func TestOffenders_MethodFiles(t *testing.T) {
	checkOffenders(t, map[string]string{
		"a/t.go":              "package p\n\ntype T struct{}\n\nfunc (T) InDecl() {}\n",
		"a/t_x.go":            "package p\n\nfunc (*T) InNamed() {}\n",
		"a/other.go":          "package p\n\nfunc (t *T) Stray() {}\n",
		"a/tx.go":             "package p\n\nfunc (*T) Prefix() {}\n",
		"a/t_test.go":         "package p\n\nfunc (T) InTest() {}\n",
		"a/other_test.go":     "package p\n\nfunc (T) InOtherTest() {}\n",
		"a/fts.go":            "package p\n\ntype FTSOptions struct{}\n\ntype G[K comparable, V any] map[K]V\n\ntype wireJob struct{}\n",
		"a/fts_endpoint.go":   "package p\n\nfunc (o *FTSOptions) AfterDecl() {}\n",
		"a/fts_options.go":    "package p\n\nfunc (o *FTSOptions) Named() {}\n",
		"a/options.go":        "package p\n\nfunc (o *FTSOptions) Stray() {}\n",
		"a/g_get.go":          "package p\n\nfunc (g G[K, V]) Get(k K) V { return g[k] }\n",
		"a/gen.go":            "package p\n\nfunc (g *G[K, V]) Stray() {}\n",
		"a/wire_job.go":       "package p\n\nfunc (wireJob) Named() {}\n",
		"a/wirejob.go":        "package p\n\nfunc (wireJob) Stray() {}\n",
		"b/t.go":              "package p\n\nfunc (U) OtherPackage() {}\n",
		"b/u.go":              "package p\n\ntype U int\n",
		"c/testdata/x.go":     "package p\n\nfunc (T) InTestdata() {}\n",
		"c/node_modules/x.go": "package p\n\nfunc (T) InNodeModules() {}\n",
	},
		"a/gen.go:3: method G.Stray is outside G's files (fts.go, fts_*.go, g.go, g_*.go)",
		"a/options.go:3: method FTSOptions.Stray is outside FTSOptions's files (fts.go, fts_*.go, fts_options.go, fts_options_*.go)",
		"a/other.go:3: method T.Stray is outside T's files (t.go, t_*.go)",
		"a/tx.go:3: method T.Prefix is outside T's files (t.go, t_*.go)",
		"a/wirejob.go:3: method wireJob.Stray is outside wireJob's files (fts.go, fts_*.go, wire_job.go, wire_job_*.go)",
		"b/t.go:3: method U.OtherPackage is outside U's files (u.go, u_*.go)",
	)
}

// TestOffenders_MethodCount: in agent/ (and cmd/) and below, a type with more than
// MaxMethods methods is named, at the limit it passes; elsewhere the count
// is not limited; methods in test files do not count.
func TestOffenders_MethodCount(t *testing.T) {
	methods := func(typ string, n int) string {
		var b strings.Builder
		fmt.Fprintf(&b, "package p\n\ntype %s struct{}\n", typ)
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "\nfunc (*%s) M%d() {}\n", typ, i)
		}
		return b.String()
	}
	checkOffenders(t, map[string]string{
		"agent/big.go":      methods("Big", MaxMethods+1),
		"agent/fit.go":      methods("Fit", MaxMethods),
		"agent/fit_test.go": "package p\n\nfunc (*Fit) Extra() {}\n",
		"agent/sub/deep.go": methods("Deep", MaxMethods) + "\nfunc (Deep) Extra() {}\n",
		"agentx/big.go":     methods("Big", MaxMethods+1),
		"cmd/big.go":        methods("Big", MaxMethods+1),
		"state/big.go":      methods("Big", 2*MaxMethods),
	},
		fmt.Sprintf("agent/big.go:3: type Big has %d methods (max %d): split it into types", MaxMethods+1, MaxMethods),
		fmt.Sprintf("agent/sub/deep.go:3: type Deep has %d methods (max %d): split it into types", MaxMethods+1, MaxMethods),
		fmt.Sprintf("cmd/big.go:3: type Big has %d methods (max %d): split it into types", MaxMethods+1, MaxMethods),
	)
}

// TestSnake: file names for types, initialisms kept whole.
func TestSnake(t *testing.T) {
	for name, want := range map[string]string{
		"Client": "client", "FTSOptions": "fts_options", "wireJob": "wire_job", "HTTPServer": "http_server",
		"Simulator": "simulator", "ID": "id", "jobV2Store": "job_v2_store", "env": "env", "T": "t",
	} {
		if got := snake(name); got != want {
			t.Errorf("snake(%q) = %q, want %q", name, got, want)
		}
	}
}
