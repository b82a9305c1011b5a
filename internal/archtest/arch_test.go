package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/ray-go/ray"

type pkg struct {
	path    string          // import path
	imports map[string]bool // non-test imports
	goStmts int             // `go` statements in non-test files
}

func loadPackages(t *testing.T) map[string]*pkg {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s: %v", root, err)
	}
	pkgs := map[string]*pkg{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		ip := module
		if rel != "." {
			ip = module + "/" + filepath.ToSlash(rel)
		}
		pk := pkgs[ip]
		if pk == nil {
			pk = &pkg{path: ip, imports: map[string]bool{}}
			pkgs[ip] = pk
		}
		for _, im := range f.Imports {
			s, _ := strconv.Unquote(im.Path.Value)
			pk.imports[s] = true
		}
		full, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(full, func(n ast.Node) bool {
			if _, ok := n.(*ast.GoStmt); ok {
				pk.goStmts++
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

func under(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

func TestDependencyRules(t *testing.T) {
	pkgs := loadPackages(t)
	if len(pkgs) < 10 {
		t.Fatalf("found only %d packages; is the walk broken?", len(pkgs))
	}
	project := func(s string) bool { return under(s, module) }
	for _, p := range pkgs {
		for im := range p.imports {
			// Leaves: ids and pb import no project package.
			if (p.path == module+"/internal/ids" || p.path == module+"/internal/pb") && project(im) {
				t.Errorf("%s is a leaf but imports %s", p.path, im)
			}
			// Only the GCS etcd implementation imports etcd.
			if under(im, "go.etcd.io/etcd") && p.path != module+"/internal/gcs/etcdstore" {
				t.Errorf("%s imports %s: only internal/gcs/etcdstore may use etcd", p.path, im)
			}
			// cli, examples and benchmarks are leaves: nothing imports them.
			for _, leaf := range []string{"/cli", "/examples", "/benchmarks"} {
				if under(im, module+leaf) && !under(p.path, module+leaf) {
					t.Errorf("%s imports %s, but %s packages are leaves", p.path, im, leaf)
				}
			}
			// The runtime never imports the user API; data and rl use only the user API.
			if im == module && (under(p.path, module+"/internal") || under(p.path, module+"/tasks") ||
				under(p.path, module+"/objects") || under(p.path, module+"/lineage") || under(p.path, module+"/actors")) {
				t.Errorf("%s imports the root package: dependencies point from the API to the runtime", p.path)
			}
			if (under(p.path, module+"/data") || under(p.path, module+"/rl")) && project(im) &&
				im != module && !under(im, module+"/data") && !under(im, module+"/rl") {
				t.Errorf("%s imports %s: data and rl use only the public root API", p.path, im)
			}
		}
	}
	// Pure packages: no protoactor, no goroutines.
	for _, path := range []string{module + "/tasks/sched", module + "/lineage", module + "/actors/lifecycle"} {
		p, ok := pkgs[path]
		if !ok {
			t.Errorf("pure package %s not found", path)
			continue
		}
		for im := range p.imports {
			if under(im, "github.com/asynkron/protoactor-go") {
				t.Errorf("pure package %s imports %s", path, im)
			}
		}
		if p.goStmts > 0 {
			t.Errorf("pure package %s starts goroutines (%d go statements)", path, p.goStmts)
		}
	}
}
