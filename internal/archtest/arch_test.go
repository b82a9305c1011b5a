package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/ray-go/ray"

type pkg struct {
	path    string          // import path
	rel     string          // path under the module ("" for the root package)
	imports map[string]bool // non-test imports
	goStmts int             // `go` statements in non-test files
	clock   []string        // calls that read the clock or arm timers, in non-test files
	env     []string        // reads of the process environment, in non-test files
}

// clockCalls read the wall clock or arm timers: a pure package takes the time as an
// argument instead.
var clockCalls = map[string]bool{"Now": true, "Since": true, "Until": true, "After": true, "AfterFunc": true,
	"NewTimer": true, "NewTicker": true, "Tick": true, "Sleep": true}

// envCalls read the process environment.
var envCalls = map[string]bool{"Getenv": true, "LookupEnv": true, "Environ": true}

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
		full, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		rel = filepath.ToSlash(rel)
		ip := module
		if rel == "." {
			rel = ""
		} else {
			ip = module + "/" + rel
		}
		pk := pkgs[ip]
		if pk == nil {
			pk = &pkg{path: ip, rel: rel, imports: map[string]bool{}}
			pkgs[ip] = pk
		}
		names := map[string]string{} // local name -> import path
		for _, im := range full.Imports {
			s, _ := strconv.Unquote(im.Path.Value)
			pk.imports[s] = true
			name := s[strings.LastIndex(s, "/")+1:]
			if im.Name != nil {
				name = im.Name.Name
			}
			names[name] = s
		}
		ast.Inspect(full, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				pk.goStmts++
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok {
					switch names[x.Name] {
					case "time":
						if clockCalls[n.Sel.Name] {
							pk.clock = append(pk.clock, fset.Position(n.Pos()).String()+" time."+n.Sel.Name)
						}
					case "os":
						if envCalls[n.Sel.Name] {
							pk.env = append(pk.env, fset.Position(n.Pos()).String()+" os."+n.Sel.Name)
						}
					}
				}
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

// ranks is the layering of the module, lowest first: a package may import only project
// packages of a lower rank (DESIGN §7). A path covers its subpackages unless one of them
// is listed itself (the longest listed prefix wins).
//
//   - base: leaves and the GCS, below every domain package (internal/base).
//   - domain: objects, lineage, tasks, actors (the top-level folders).
//   - assembly: the runtime that puts the domain together (internal/assembly), then the
//     user API (the root package) and the readers of the cluster's state (clusterstate),
//     then the web dashboard that shows it (dashboard; the CLI hands it to the head agent).
//   - users of the API: data and rl; then the programs: cli, examples, benchmarks.
var ranks = []struct {
	rank  int
	paths []string
}{
	{0, []string{"internal/base/ids", "internal/base/pb", "internal/base/netx", "internal/base/slab", "internal/base/mapx", "internal/base/handoff", "internal/base/spin", "internal/base/seqring", "internal/base/stripe", "internal/base/ask",
		"internal/base/workerenv", "internal/base/identity", "internal/base/fuzzing", "internal/base/scenario", "internal/base/eventually", "internal/base/lockdir", "objects/codec", "tasks/sched", "actors/lifecycle", "internal/archtest", "internal"}},
	{1, []string{"internal/base/gcs", "internal/base/dispatch", "actors/caller"}},
	{2, []string{"internal/base/gcs/etcdstore", "internal/base/gcs/memstore", "internal/base/gcs/gcstest", "internal/base/ship"}},
	{3, []string{"objects", "lineage", "tasks"}},
	{4, []string{"tasks/raylet", "tasks/worker", "tasks/machine"}},
	{5, []string{"actors"}},
	{6, []string{"internal/assembly/membership", "internal/assembly/core", "internal/assembly/clusterview"}},
	{7, []string{"internal/assembly/taskstate", "internal/assembly/metrics"}},
	{8, []string{"internal/assembly/node", "internal/assembly/agent"}},
	{9, []string{"internal/assembly/testcluster", "internal/assembly/clusterstate", ""}},
	{10, []string{"internal/assembly/dashboard"}},
	{11, []string{"data", "rl"}},
	{12, []string{"cli", "examples", "benchmarks"}},
}

// rankOf returns the rank of a package path under the module (rel) and the listed prefix
// that gave it (the longest that covers rel).
func rankOf(rel string) (int, string, bool) {
	best, rank, prefix := -1, 0, ""
	for _, r := range ranks {
		for _, p := range r.paths {
			if (p == "" && rel == "") || (p != "" && under(rel, p) && (!exactOnly[p] || rel == p)) {
				if len(p) > best {
					best, rank, prefix = len(p), r.rank, p
				}
			}
		}
	}
	return rank, prefix, best >= 0
}

// exactOnly are listed paths that rank the package itself, not its subpackages.
var exactOnly = map[string]bool{"internal": true}

// componentRank: from this rank up, a listed path is a component (data, rl, cli, each
// program) whose own subpackages may import each other.
const componentRank = 9

// pure packages: policies and state machines, tested with tables and scripts. They import
// no protoactor, start no goroutines and read no clock (time comes in as an argument).
var pure = []string{"tasks/sched", "lineage", "actors/lifecycle", "actors/caller"}

// envOK: the only packages that read the process environment: the CLI and the root package
// (the user API: RAY_ADDRESS, worker mode); programs (examples, benchmarks) are leaves.
var envOK = []string{"cli", "", "examples", "benchmarks"}

func TestLayers(t *testing.T) {
	pkgs := loadPackages(t)
	if len(pkgs) < 10 {
		t.Fatalf("found only %d packages; is the walk broken?", len(pkgs))
	}
	var paths []string
	for p := range pkgs {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, path := range paths {
		p := pkgs[path]
		own, ownPrefix, ok := rankOf(p.rel)
		if !ok {
			t.Errorf("package %s has no rank: add it to the ranks table of internal/archtest", p.path)
			continue
		}
		for im := range p.imports {
			if !under(im, module) {
				continue
			}
			rel := strings.TrimPrefix(strings.TrimPrefix(im, module), "/")
			r, prefix, ok := rankOf(rel)
			if !ok {
				continue // reported as its own package
			}
			if r >= componentRank && prefix == ownPrefix && prefix != "" {
				continue // within one component
			}
			if r >= own {
				t.Errorf("%s (rank %d) imports %s (rank %d): a package imports only lower ranks", p.path, own, im, r)
			}
		}
	}
}

func TestDependencyRules(t *testing.T) {
	pkgs := loadPackages(t)
	project := func(s string) bool { return under(s, module) }
	for _, p := range pkgs {
		for im := range p.imports {
			// Leaves: ids and pb import no project package.
			if (p.rel == "internal/base/ids" || p.rel == "internal/base/pb") && project(im) {
				t.Errorf("%s is a leaf but imports %s", p.path, im)
			}
			// Only the GCS etcd implementation imports etcd.
			if under(im, "go.etcd.io/etcd") && p.rel != "internal/base/gcs/etcdstore" {
				t.Errorf("%s imports %s: only internal/base/gcs/etcdstore may use etcd", p.path, im)
			}
			// data and rl use only the user API.
			if (under(p.rel, "data") || under(p.rel, "rl")) && project(im) &&
				im != module && !under(im, module+"/data") && !under(im, module+"/rl") {
				t.Errorf("%s imports %s: data and rl use only the public root API", p.path, im)
			}
		}
		// The environment is read by the CLI and the user API only.
		allowed := false
		for _, e := range envOK {
			if (e == "" && p.rel == "") || (e != "" && under(p.rel, e)) {
				allowed = true
			}
		}
		if !allowed {
			for _, at := range p.env {
				t.Errorf("%s reads the environment (%s): only cli and the root package may; take it as configuration", p.path, at)
			}
		}
	}
	// Pure packages: no protoactor, no goroutines, no clock.
	for _, rel := range pure {
		p, ok := pkgs[module+"/"+rel]
		if !ok {
			t.Errorf("pure package %s not found", rel)
			continue
		}
		for im := range p.imports {
			if under(im, "github.com/asynkron/protoactor-go") {
				t.Errorf("pure package %s imports %s", p.path, im)
			}
		}
		if p.goStmts > 0 {
			t.Errorf("pure package %s starts goroutines (%d go statements)", p.path, p.goStmts)
		}
		for _, at := range p.clock {
			t.Errorf("pure package %s reads the clock or arms a timer (%s): take the time as an argument", p.path, at)
		}
	}
}

// TestRanksCoverTheTree: the rank table names no package that does not exist (a moved or
// deleted package must leave the table too).
func TestRanksCoverTheTree(t *testing.T) {
	pkgs := loadPackages(t)
	for _, r := range ranks {
		for _, p := range r.paths {
			found := false
			for _, pk := range pkgs {
				if (p == "" && pk.rel == "") || (p != "" && under(pk.rel, p)) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("the rank table lists %q, but no package is there", p)
			}
		}
	}
}

// TestNoBuildOutputInTheTree: no file the repository tracks is a program built from it
// (an ELF binary) or larger than maxTrackedBytes. `go build ./cli/e2e/driver` in the
// module root writes ./driver, and a commit once took its 76 MB in with it; every clone
// downloads what history holds. Files are those `git ls-files` lists (the tree's files
// when the module is not a git checkout).
func TestNoBuildOutputInTheTree(t *testing.T) {
	const maxTrackedBytes = 4 << 20
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		for _, f := range strings.Split(string(out), "\x00") {
			if f != "" {
				files = append(files, f)
			}
		}
	} else {
		t.Logf("git ls-files: %v; checking every file of the tree", err)
		err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && strings.HasPrefix(d.Name(), ".") && p != root {
				return filepath.SkipDir
			}
			if !d.IsDir() {
				rel, _ := filepath.Rel(root, p)
				files = append(files, rel)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(files) == 0 {
		t.Fatal("no files found in the module")
	}
	for _, f := range files {
		p := filepath.Join(root, f)
		st, err := os.Lstat(p)
		if err != nil || !st.Mode().IsRegular() {
			continue // deleted in the work tree, or a link
		}
		if st.Size() > maxTrackedBytes {
			t.Errorf("%s is %d bytes: build output or data that belongs outside the repository (limit %d)", f, st.Size(), maxTrackedBytes)
			continue
		}
		head := make([]byte, 4)
		if fh, err := os.Open(p); err == nil {
			n, _ := fh.Read(head)
			fh.Close()
			if n == 4 && string(head) == "\x7fELF" {
				t.Errorf("%s is a compiled program: remove it (git rm --cached) and list it in .gitignore", f)
			}
		}
	}
}
