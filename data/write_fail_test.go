package data

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteErrorNamesPathOnce: a file write that fails says "data: writing <file>" once,
// not once per layer (it used to repeat the path: the write task wrapped an error that
// already named it).
func TestWriteErrorNamesPathOnce(t *testing.T) {
	ctx := timeout(t)
	dir := filepath.Join(t.TempDir(), "out")
	_, err := Range(100, Parallelism(2)).WriteParquet(ctx, dir, Compression("bogus"))
	if err == nil {
		t.Fatal("a write with an unknown compression did not fail")
	}
	msg := err.Error()
	if !strings.Contains(msg, "unknown Parquet compression") {
		t.Fatalf("error %q: want the unknown compression", msg)
	}
	if n := strings.Count(msg, "data: writing "+dir); n != 1 {
		t.Errorf("error %q says %q %d times, want once", msg, "data: writing "+dir, n)
	}
}
