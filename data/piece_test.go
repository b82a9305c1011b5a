package data

import (
	"runtime"
	"testing"
)

// TestPieceOfManyPartitions: a reduce that started before its map output existed finds
// its partition in the block's schema metadata (partsKey). It held one count per
// partition, and splitting them into N strings for each of its N map outputs made an
// N-block shuffle's reduces allocate N³ strings. Reading one partition must allocate a
// bounded number of objects whatever N is, and find the right rows.
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

// TestPartsAreSparse: a map output's partitions travel and stay as the ones with rows. A
// block of a 3000-block shuffle has rows for a few partitions; its metadata named all
// 3000, and the driver kept two dense counts per partition for every map output (16 bytes
// × N², 144 MB at 3000 blocks).
func TestPartsAreSparse(t *testing.T) {
	const parts = 3000
	counts := make([]int64, parts)
	counts[7], counts[1500], counts[parts-1] = 2, 1, 3
	rec := withParts(int64Record("id", 6, func(i int) int64 { return int64(i) }), counts)
	defer rec.Release()
	v, _ := rec.Schema().Metadata().GetValue(partsKey)
	if len(v) > 64 {
		t.Errorf("the metadata of 3 partitions with rows of %d is %d bytes: %.80q...", parts, len(v), v)
	}
	for _, c := range []struct {
		p       int
		off, n  int64
		wantErr bool
	}{{0, 0, 0, false}, {7, 0, 2, false}, {8, 2, 0, false}, {1500, 2, 1, false}, {2998, 3, 0, false}, {parts - 1, 3, 3, false}, {parts, 0, 0, true}, {-1, 0, 0, true}} {
		off, n, err := partAt(v, c.p)
		if (err != nil) != c.wantErr || err == nil && (off != c.off || n != c.n) {
			t.Errorf("partition %d: off %d n %d err %v, want off %d n %d error %v", c.p, off, n, err, c.off, c.n, c.wantErr)
		}
	}
	for _, bad := range []string{"", "3", "x;", "0;", "3;1", "3;1:0", "3;0:1,0:1", "3;3:1", "3;a:1"} {
		if _, _, err := partAt(bad, 1); err == nil {
			t.Errorf("partAt(%q) gave no error", bad)
		}
	}

	xs := xParts(counts)
	if len(xs) != 3 || xs[0] != (xPart{p: 7, off: 0, n: 2}) || xs[1] != (xPart{p: 1500, off: 2, n: 1}) || xs[2] != (xPart{p: parts - 1, off: 3, n: 3}) {
		t.Fatalf("xParts kept %v, want the 3 partitions with rows", xs)
	}
	s := &xSrc{parts: xs}
	cur := make(xCursor, 1)
	var got []xPart
	for p := 0; p < parts; p++ {
		if x := cur.at(s, 0, p); x.n > 0 {
			got = append(got, x)
		}
	}
	if len(got) != 3 || got[0] != xs[0] || got[1] != xs[1] || got[2] != xs[2] {
		t.Errorf("walking the partitions found %v, want %v", got, xs)
	}
}
