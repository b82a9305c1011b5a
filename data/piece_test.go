package data

import (
	"runtime"
	"testing"
)

// TestPieceOfManyPartitions: a reduce that started before its map output existed finds
// its partition in the block's schema metadata (partsKey, one count per partition). With
// N partitions it read N counts for each of its N map outputs; splitting them into N strings
// each made an N-block shuffle's reduces allocate N³ strings. Reading one partition must
// allocate a bounded number of objects whatever N is, and find the right rows.
func TestPieceOfManyPartitions(t *testing.T) {
	const parts = 3000
	counts := make([]int64, parts)
	var rows int64
	for p := range counts {
		counts[p] = int64(p % 3) // 0, 1, 2 rows per partition
		rows += counts[p]
	}
	rec := withParts(int64Record("id", rows, func(i int) int64 { return int64(i) }), counts)
	defer rec.Release()
	var off int64
	for p, k := range counts {
		sl, err := pieceOf(rec, zipPiece{N: -1}, p)
		if err != nil {
			t.Fatal(err)
		}
		if sl.NumRows() != k || k > 0 && rowsOf(sl)[0]["id"] != off {
			t.Fatalf("partition %d: %d rows from %v, want %d from %d", p, sl.NumRows(), rowsOf(sl), k, off)
		}
		if sl.Schema().HasMetadata() {
			t.Fatalf("partition %d kept the block's metadata", p)
		}
		sl.Release()
		off += k
	}
	if _, err := pieceOf(rec, zipPiece{N: -1}, parts); err == nil {
		t.Fatalf("partition %d of %d: no error", parts, parts)
	}
	// Bytes, not allocations: strings.Split made one slice of N strings (16 bytes each).
	const runs = 200
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for range runs {
		sl, err := pieceOf(rec, zipPiece{N: -1}, parts-1)
		if err != nil {
			t.Fatal(err)
		}
		sl.Release()
	}
	runtime.ReadMemStats(&m1)
	per := (m1.TotalAlloc - m0.TotalAlloc) / runs
	// Reading one piece allocates a slice, a schema and a record (about 1 KiB); one string
	// header per partition would be 48 KiB here. The bound leaves room for the test
	// process's other goroutines.
	if per > 8<<10 {
		t.Fatalf("reading the last of %d partitions allocated %d bytes per piece, want a bound independent of the partitions", parts, per)
	}
	t.Logf("%d bytes per piece", per)
}
