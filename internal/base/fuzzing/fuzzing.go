// Package fuzzing holds what the fuzz targets of ray-go share (DESIGN §9: every decoder of
// bytes from the network or disk has one): a bound on heap allocation, and seed corpora
// generated from code.
//
// Allocation: a decoder must allocate in proportion to what it already knows (the input's
// length, a known object size, a configured maximum), never to a length it read. A target
// asserts that with CheckAlloc. The measure is runtime.MemStats.TotalAlloc around the call,
// so allocations by other goroutines at the same time count too: the bounds are meant to
// catch a decoder that allocates gigabytes because of a length field, not to be exact.
// Reading the statistics stops the world briefly (tens of microseconds), which a fuzz
// target can afford.
//
// Seeds: a target's seed corpus is testdata/fuzz/<target>/ in its package, which `go test`
// runs as ordinary test cases and `go test -fuzz` starts from. The seeds are valid
// encodings made by the package's own encoders plus edge cases, listed in code; Corpus
// checks that the files match the list, and rewrites them with -update-corpus (a flag of
// the test binaries of the packages that have fuzz targets):
//
//	go test -run Corpus ./objects/shard -update-corpus
//
// It imports only the standard library and is used only by tests.
package fuzzing

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// AllocBytes returns how many bytes fn allocated on the heap (and whatever other
// goroutines allocated meanwhile).
func AllocBytes(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// CheckAlloc runs fn and fails t if it allocated more than limit bytes. The count is the
// process's, so another goroutine (a test before this one still winding down, the
// runtime) can add to it: over the limit, fn runs again, up to three times in all, and
// the check fails only if every run was over. fn must be repeatable (a decoder of the
// same bytes); for one that is not, use CheckAllocOnce.
func CheckAlloc(t testing.TB, limit uint64, what string, fn func()) {
	t.Helper()
	var n uint64
	for range 3 {
		if n = AllocBytes(fn); n <= limit {
			return
		}
	}
	t.Fatalf("%s allocated %d bytes (the least of three runs), more than its bound of %d", what, n, limit)
}

// CheckAllocOnce runs fn once and fails t if it allocated more than limit bytes.
func CheckAllocOnce(t testing.TB, limit uint64, what string, fn func()) {
	t.Helper()
	if n := AllocBytes(fn); n > limit {
		t.Fatalf("%s allocated %d bytes, more than its bound of %d", what, n, limit)
	}
}

// update makes Corpus write the seed files instead of checking them.
var update = flag.Bool("update-corpus", false, "rewrite the fuzz targets' seed corpora (testdata/fuzz/<target>/seed-NN) from code")

// Corpus checks that testdata/fuzz/<target>/seed-NN (in the test's working directory, its
// package) hold exactly seeds, each the argument list of one call of the fuzz function
// (values of the types it takes: []byte, string, bool, the integer types). With
// -update-corpus it writes them instead, removing stale seed files. Files that
// `go test -fuzz` added (named by hash, not seed-NN) are left alone.
func Corpus(t testing.TB, target string, seeds [][]any) {
	t.Helper()
	dir := filepath.Join("testdata", "fuzz", target)
	want := map[string][]byte{}
	for i, s := range seeds {
		want[fmt.Sprintf("seed-%02d", i)] = marshal(t, s)
	}
	old, _ := filepath.Glob(filepath.Join(dir, "seed-*"))
	for _, p := range old {
		if _, ok := want[filepath.Base(p)]; !ok {
			if !*update {
				t.Errorf("%s is not a seed of %s any more; regenerate with go test -run Corpus -update-corpus", p, target)
			} else if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, b := range want {
		p := filepath.Join(dir, name)
		if *update {
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(p)
		switch {
		case err != nil:
			t.Errorf("seed %s of %s is missing (%v); regenerate with go test -run Corpus -update-corpus", p, target, err)
		case !bytes.Equal(got, b):
			t.Errorf("seed %s of %s is stale (its generator changed, or is not deterministic); regenerate with go test -run Corpus -update-corpus", p, target)
		}
	}
}

// marshal encodes one corpus entry in the format of `go test fuzz v1` files.
func marshal(t testing.TB, vals []any) []byte {
	b := bytes.NewBufferString("go test fuzz v1\n")
	for _, v := range vals {
		switch v := v.(type) {
		case []byte:
			fmt.Fprintf(b, "[]byte(%q)\n", v)
		case string:
			fmt.Fprintf(b, "string(%q)\n", v)
		case int, int8, int16, int64, uint, uint16, uint32, uint64, bool:
			fmt.Fprintf(b, "%T(%v)\n", v, v)
		default:
			t.Fatalf("fuzzing: seed value of type %T is not supported", v)
		}
	}
	return b.Bytes()
}

// OnlyFuzzing reports whether this test binary was started only to fuzz (a `go test -fuzz`
// worker, or its coordinator with -run '^$' as .ci/run starts it), so that a TestMain can
// skip set-up that only the package's other tests need (building a helper binary takes
// longer than a short fuzz run). It parses the flags: call it from TestMain.
func OnlyFuzzing() bool {
	if !flag.Parsed() {
		flag.Parse()
	}
	value := func(name string) string {
		if f := flag.Lookup(name); f != nil {
			return f.Value.String()
		}
		return ""
	}
	return value("test.fuzzworker") == "true" || (value("test.fuzz") != "" && value("test.run") == "^$")
}
