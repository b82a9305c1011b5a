package data

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
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

// failAfterFile is the directory failLate waits on (a test sets it).
var failAfterFile atomic.Value

// failLate fails on the rows of id 900 and over, once a file of the write is in the
// directory failAfterFile names (or after 20 s), so that the write fails midway.
var failLate = RowFunc("test.failLate", func(_ context.Context, r Row) (Row, error) {
	id := r["id"].(int64)
	if id < 900 {
		return r, nil
	}
	dir, _ := failAfterFile.Load().(string)
	for i := 0; i < 400 && dir != ""; i++ {
		if m, _ := filepath.Glob(filepath.Join(dir, "*.parquet")); len(m) > 1 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil, errors.New("test: row 900 is bad")
})

// TestFailedWriteRemovesItsFiles: a write that fails midway removes the block files it had
// finished, so that a later read of the directory does not take part of the dataset for
// the whole, says so, and leaves a file that was there before alone.
func TestFailedWriteRemovesItsFiles(t *testing.T) {
	ctx := timeout(t)
	dir := t.TempDir()
	before := filepath.Join(dir, "before.parquet")
	if err := os.WriteFile(before, []byte("not ours"), 0o644); err != nil {
		t.Fatal(err)
	}
	failAfterFile.Store(dir)
	defer failAfterFile.Store("")
	_, err := Range(1000, Parallelism(10)).Map(failLate).WriteParquet(ctx, dir, MaxTasksInFlight(2))
	if err == nil || !strings.Contains(err.Error(), "row 900 is bad") {
		t.Fatalf("write: %v, want the row function's error", err)
	}
	if !regexp.MustCompile(`the [1-9]\d* files this write had finished in .* were removed`).MatchString(err.Error()) {
		t.Errorf("error %q: want it to say the finished files were removed", err)
	}
	entries, rerr := os.ReadDir(dir)
	if rerr != nil {
		t.Fatal(rerr)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 1 || names[0] != "before.parquet" {
		t.Errorf("after the failed write the directory holds %v, want only the file that was there before", names)
	}
}

// TestRemoveWrittenNamesLeftovers: a finished file that cannot be removed is named in the
// error, with what to do; those removed are gone.
func TestRemoveWrittenNamesLeftovers(t *testing.T) {
	dir := t.TempDir()
	gone := filepath.Join(dir, "a_000000.parquet")
	stuck := filepath.Join(dir, "a_000001.parquet") // a non-empty directory: Remove fails
	if err := os.WriteFile(gone, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(stuck, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := removeWritten(errors.New("boom"), dir, []string{gone, stuck})
	if !strings.HasPrefix(err.Error(), "boom") || !strings.Contains(err.Error(), stuck) || strings.Contains(err.Error(), gone) || !strings.Contains(err.Error(), "before reading") {
		t.Errorf("error %q: want the cause, the file left (%s) and what to do", err, stuck)
	}
	if _, serr := os.Stat(gone); !os.IsNotExist(serr) {
		t.Errorf("%s was not removed: %v", gone, serr)
	}
}
