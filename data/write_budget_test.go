package data

import (
	"path/filepath"
	"testing"
)

// TestWriteUnderSmallBudget: a write whose execution budget is smaller than one block ends
// and writes every row, in order. The writer used to release a block only when it had as
// many writes in flight as tasks may run, while waiting for the next block; the executor,
// over its budget with nothing running, waited for those releases: neither moved.
func TestWriteUnderSmallBudget(t *testing.T) {
	ctx := timeout(t)
	dir := filepath.Join(t.TempDir(), "out")
	const n = 20000
	files, err := Range(n, Parallelism(8)).Sort([]string{"id"}, Descending()).
		WriteParquet(ctx, dir, ObjectStoreBudget(1), MaxTasksInFlight(4))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no files written")
	}
	rows, err := ReadParquet(files).TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != n {
		t.Fatalf("%d rows written, want %d", len(rows), n)
	}
	for i, r := range rows {
		if got := r["id"].(int64); got != int64(n-1-i) {
			t.Fatalf("row %d has id %d, want %d (sorted descending)", i, got, n-1-i)
		}
	}
}
