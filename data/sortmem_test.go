package data

import (
	"context"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"

	"github.com/ray-go/ray"
)

// sortRecs turns a Range batch into sort records: a key with many ties (about 500 rows
// per value), the id, and a 100-byte payload that depends only on the id.
var sortRecs = BatchFunc("test.sortRecs", func(_ context.Context, b arrow.Record) (arrow.Record, error) {
	ids := b.Column(0).(*array.Int64)
	kb := array.NewInt64Builder(mem)
	defer kb.Release()
	pb := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	defer pb.Release()
	for i := 0; i < ids.Len(); i++ {
		id := ids.Value(i)
		kb.Append(sortKeyOf(id))
		pb.Append(payloadOf(id))
	}
	k, p := kb.NewArray(), pb.NewArray()
	defer k.Release()
	defer p.Release()
	ids.Retain()
	defer ids.Release()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "key", Type: arrow.PrimitiveTypes.Int64},
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "payload", Type: arrow.BinaryTypes.Binary},
	}, nil)
	return array.NewRecord(schema, []arrow.Array{k, ids, p}, int64(ids.Len())), nil
})

func sortKeyOf(id int64) int64 { return int64(mix64(uint64(id)) % 1000) }

func payloadOf(id int64) []byte {
	b := make([]byte, 100)
	h := mix64(uint64(id) + 1)
	for i := range b {
		b[i] = byte(h >> (8 * (i % 8)))
		if i%8 == 7 {
			h = mix64(h)
		}
	}
	return b
}

// TestSortManyBlocksSmallStore sorts 48 blocks of 1 MiB (48 MiB, 1.5x the tests' 32 MiB
// store, so map outputs spill) and checks the output like valsort: keys in order, ties in
// input (id) order (the sort is stable), every id once, and the checksum of the payloads
// the input's. Each reduce reads a slice of each of the 48 map outputs and copies it out
// (fetchPieces); TestSort's 100 small blocks run the merges, which read their inputs whole.
func TestSortManyBlocksSmallStore(t *testing.T) {
	ctx, cancel := context.WithTimeout(shared, 5*time.Minute) // spills: slow under -race
	defer cancel()
	const blocks, perBlock = 48, 8000
	const n = blocks * perBlock
	var want uint64
	for id := int64(0); id < n; id++ {
		want += uint64(crc32.ChecksumIEEE(payloadOf(id)))
	}
	d := Range(n, Parallelism(blocks)).MapBatches(sortRecs).Sort([]string{"key"})
	seen := make([]bool, n)
	var got uint64
	var rows int64
	lastKey, lastID := int64(-1), int64(-1)
	for b, err := range d.IterBatches(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		keys := b.Column(b.Schema().FieldIndices("key")[0]).(*array.Int64)
		ids := b.Column(b.Schema().FieldIndices("id")[0]).(*array.Int64)
		pays := b.Column(b.Schema().FieldIndices("payload")[0]).(*array.Binary)
		for i := 0; i < int(b.NumRows()); i++ {
			k, id := keys.Value(i), ids.Value(i)
			if k < lastKey || k == lastKey && id <= lastID {
				t.Fatalf("row %d: (key %d, id %d) after (key %d, id %d): not sorted stably", rows, k, id, lastKey, lastID)
			}
			if id < 0 || id >= n || seen[id] {
				t.Fatalf("row %d: id %d out of range or seen twice", rows, id)
			}
			if sortKeyOf(id) != k {
				t.Fatalf("row %d: id %d with key %d, want %d", rows, id, k, sortKeyOf(id))
			}
			seen[id] = true
			got += uint64(crc32.ChecksumIEEE(pays.Value(i)))
			lastKey, lastID = k, id
			rows++
		}
	}
	if rows != n || got != want {
		t.Fatalf("%d rows, payload checksum %d; want %d rows, checksum %d", rows, got, n, want)
	}
	if st := d.Stats(); !strings.Contains(st, "- reduce: 48 tasks") {
		t.Errorf("stats without 48 reduces:\n%s", st)
	}
}

// TestFetchPiecesCopiesPartialBlocks: with Copy (the store is tight), a task that reads
// part of a block gets its piece in buffers of its own (the block can be freed while the
// task runs); a task that reads a block whole, or any task without Copy, gets views of it.
func TestFetchPiecesCopiesPartialBlocks(t *testing.T) {
	ctx := timeout(t)
	b := array.NewInt64Builder(mem)
	for i := int64(0); i < 1000; i++ {
		b.Append(i)
	}
	col := b.NewArray()
	b.Release()
	rec := array.NewRecord(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, 1000)
	col.Release()
	defer rec.Release()
	ref, err := ray.Put[arrow.Record](ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Release()
	base, err := ray.Get(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	defer base.Release()
	within := func(r arrow.Record) bool {
		buf := base.Column(0).Data().Buffers()[1].Bytes()
		p := r.Column(0).Data().Buffers()[1].Bytes()
		lo, hi := uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&buf[0]))+uintptr(len(buf))
		at := uintptr(unsafe.Pointer(&p[0]))
		return at >= lo && at < hi
	}
	for _, tc := range []struct {
		parts    [][]zipPiece
		tight    bool // xTask.Copy
		wantCopy bool
	}{
		{[][]zipPiece{{{Ref: ref, Off: 100, N: 300}}}, true, true},                                // one partition of a block
		{[][]zipPiece{{{Ref: ref, Off: 0, N: 400}}, {{Ref: ref, Off: 400, N: 600}}}, true, false}, // a merge: all of it
		{[][]zipPiece{{{Ref: ref, Off: 0, N: 400}}, {{Ref: ref, Off: 500, N: 300}}}, true, true},  // two partitions, not all
		{[][]zipPiece{{{Ref: ref, Off: 100, N: 300}}}, false, false},                              // the store has room: views
	} {
		name := fmt.Sprint(tc.parts, tc.tight)
		pieces, err := fetchPieces(ctx, &xTask{Phase: "merge", Parts: tc.parts, Copy: tc.tight})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i, ps := range pieces {
			p, want := ps[0], tc.parts[i][0]
			ids := p.Column(0).(*array.Int64)
			if int64(ids.Len()) != want.N || ids.Value(0) != want.Off || ids.Value(ids.Len()-1) != want.Off+want.N-1 {
				t.Errorf("%s: piece %d holds %d rows from %d, want %d from %d", name, i, ids.Len(), ids.Value(0), want.N, want.Off)
			}
			if within(p) == tc.wantCopy {
				t.Errorf("%s: piece %d in the block's buffer: %v, want %v", name, i, within(p), !tc.wantCopy)
			}
			p.Release()
		}
	}
}
