package data

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/decimal128"
)

// gatedMap holds back the map of the batch that ends with gateID until the exchange has started
// its reduces early (earlyReducesHook), so that the reduces certainly run while a map
// still does; the wait is bounded (the test then fails on the Stats check, not by hanging).
var (
	gateMu       sync.Mutex
	gateOpen     chan struct{}
	gateID       int64 = -1
	gateTimedOut atomic.Bool
	gatedMap     = BatchFunc("test.gatedMap", func(ctx context.Context, b arrow.Record) (arrow.Record, error) {
		gateMu.Lock()
		ch, id := gateOpen, gateID
		gateMu.Unlock()
		ids := b.Column(0).(*array.Int64)
		if ch != nil && ids.Len() > 0 && ids.Value(ids.Len()-1) == id {
			select {
			case <-ch:
			case <-time.After(20 * time.Second):
				gateTimedOut.Store(true)
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		b.Retain()
		return b, nil
	})
)

// armGate makes gatedMap wait at id until a shuffle starts its reduces early.
func armGate(t *testing.T, id int64) {
	ch := make(chan struct{})
	var once sync.Once
	gateMu.Lock()
	gateOpen, gateID = ch, id
	gateMu.Unlock()
	earlyReducesHook = func() { once.Do(func() { close(ch) }) }
	t.Cleanup(func() {
		earlyReducesHook = nil
		once.Do(func() { close(ch) })
		gateMu.Lock()
		gateOpen, gateID = nil, -1
		gateMu.Unlock()
	})
}

// TestShuffleReducesStream: with one map held back, the reduces of a RandomShuffle start
// before it ends (Stats says so), and the result is the one the same seed gives when every
// map ends first: a permutation, row for row the same.
func TestShuffleReducesStream(t *testing.T) {
	ctx := timeout(t)
	const n = 8000
	for _, tc := range []struct {
		name string
		ds   func() *Dataset
	}{
		{"fused map", func() *Dataset { return Range(n, Parallelism(4)).MapBatches(gatedMap).RandomShuffle(Seed(9)) }},
		{"repartition", func() *Dataset { return Range(n, Parallelism(4)).MapBatches(gatedMap).Repartition(3, true, Seed(9)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plain, err := tc.ds().TakeAll(ctx) // the gate is not armed: no wait
			if err != nil {
				t.Fatal(err)
			}
			armGate(t, n-1) // the last block's map waits
			ds := tc.ds()
			got, err := ds.TakeAll(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st := ds.Stats(); !strings.Contains(st, "reduce (started before the last map ended)") {
				t.Fatalf("the reduces did not start before the held-back map ended:\n%s", st)
			}
			if !slices.Equal(sortedCopy(ids(t, got)), seq(0, n)) {
				t.Fatalf("not a permutation of 0..%d: %d rows", n, len(got))
			}
			if !reflect.DeepEqual(ids(t, got), ids(t, plain)) {
				t.Fatalf("the same seed gave another order when the reduces streamed")
			}
		})
	}
}

// TestLostEarlyReduceOutputsRecreated: lineage after reduces that started before the last
// map ended (their pieces of that map were "partition i of this block", read from the
// block's metadata): corrupted spilled blocks come back right.
func TestLostEarlyReduceOutputsRecreated(t *testing.T) {
	const n = 24 * (256 << 10) // as lostBlocksRecreated
	armGate(t, n-1)
	lostBlocksRecreated(t, func(ds *Dataset) *Dataset {
		return ds.MapBatches(gatedMap).RandomShuffle(Seed(7))
	})
	if gateTimedOut.Load() {
		t.Fatal("the held-back map waited 20 s: the reduces did not start early")
	}
}

// TestPieceShuffler: the reduce's shuffle of pieces fed one by one keeps every row whole
// (columns of 8, 4, 2, 1 and 16 bytes move together), is a permutation that depends on the
// pieces and the seed alone (slices and empty pieces included), and a piece that forces
// the general path (nulls) continues the same sequence.
func TestPieceShuffler(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32},
		{Name: "u16", Type: arrow.PrimitiveTypes.Uint16},
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8},
		{Name: "d", Type: &arrow.Decimal128Type{Precision: 20, Scale: 0}},
	}, nil)
	piece := func(from, n int) arrow.Record {
		b := array.NewRecordBuilder(mem, schema)
		defer b.Release()
		for i := from; i < from+n; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			b.Field(1).(*array.Float64Builder).Append(float64(i) / 2)
			b.Field(2).(*array.Int32Builder).Append(int32(-i))
			b.Field(3).(*array.Uint16Builder).Append(uint16(i))
			b.Field(4).(*array.Int8Builder).Append(int8(i))
			b.Field(5).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i) * 3))
		}
		return b.NewRecord()
	}
	var pieces []arrow.Record
	at := 0
	for _, n := range []int{300, 0, 1, 1000} {
		pieces = append(pieces, piece(at, n))
		at += n
	}
	full := piece(0, 2000)
	pieces = append(pieces, full.NewSlice(1301, 2000)) // a slice: offset 1301
	full.Release()
	defer releaseRecords(pieces)

	shuffle := func(seed uint64, ps []arrow.Record) []int64 {
		sh := newPieceShuffler(rand.New(rand.NewPCG(seed, 1)))
		for _, p := range ps {
			sh.add(p)
		}
		out, err := sh.finish()
		if err != nil {
			t.Fatal(err)
		}
		defer out.Release()
		ids := make([]int64, out.NumRows())
		for r := range ids {
			if out.Column(0).IsNull(r) {
				ids[r] = -1
				continue
			}
			id := out.Column(0).(*array.Int64).Value(r)
			i := int(id)
			ids[r] = id
			if out.Column(1).(*array.Float64).Value(r) != float64(i)/2 || out.Column(2).(*array.Int32).Value(r) != int32(-i) ||
				out.Column(3).(*array.Uint16).Value(r) != uint16(i) || out.Column(4).(*array.Int8).Value(r) != int8(i) ||
				out.Column(5).(*array.Decimal128).Value(r) != decimal128.FromI64(int64(i)*3) {
				t.Fatalf("row %d (id %d) was torn apart", r, id)
			}
		}
		return ids
	}
	a, again, other := shuffle(7, pieces), shuffle(7, pieces), shuffle(8, pieces)
	if !slices.Equal(sortedCopy(a), seq(0, 2000)) {
		t.Fatalf("not a permutation of 0..1999")
	}
	if !slices.Equal(a, again) || slices.Equal(a, other) || slices.IsSorted(a) {
		t.Fatal("the shuffle does not depend on its seed alone")
	}
	// The same sequence on the general path: the whole as one piece with a null row
	// appended (nulls force it) puts the rows where the fast path put them, the null row
	// last in the sequence.
	withNull := func(recs []arrow.Record) []arrow.Record {
		b := array.NewRecordBuilder(mem, schema)
		defer b.Release()
		for _, f := range b.Fields() {
			f.AppendNull()
		}
		return append(slices.Clone(recs), b.NewRecord())
	}
	fast := shuffle(11, pieces)
	ps := withNull(pieces)
	defer ps[len(ps)-1].Release()
	slow := shuffle(11, ps) // fast until the null piece, then general
	// Inside out, the last row goes to a random place j and the row at j moves to the end:
	// so slow is fast with one row moved to the end and the null row in its place.
	var moved []int64
	for i, id := range slow[:len(fast)] {
		if id != fast[i] {
			moved = append(moved, fast[i], id)
		}
	}
	if len(moved) > 2 || len(moved) == 2 && (moved[1] != -1 || slow[len(slow)-1] != moved[0]) || len(moved) == 0 && slow[len(slow)-1] != -1 {
		t.Fatalf("the general path diverged from the fixed-width one: %v", moved)
	}
	if empty, err := newPieceShuffler(rand.New(rand.NewPCG(1, 1))).finish(); empty != nil || err != nil {
		t.Fatalf("no pieces: %v %v", empty, err)
	}
}

// TestExchangeStatsStages: Explain shows a fused map and each exchange's stages; Stats
// has a line per all-to-all stage (sample, map, merge, reduce) with its tasks, rows, bytes
// and time, the rows adding up.
func TestExchangeStatsStages(t *testing.T) {
	ctx := timeout(t)
	const n = 3000
	shuffled := Range(n, Parallelism(4)).RandomShuffle(Seed(1))
	ex := shuffled.Explain()
	for _, s := range []string{"ReadRange->RandomShuffle[seed=1].map -> RandomShuffle[seed=1](all-to-all: map(random partition)[fused into the operator before]"} {
		if !strings.Contains(ex, s) {
			t.Errorf("Explain lacks %q:\n%s", s, ex)
		}
	}
	sorted := Range(n, Parallelism(4)).Limit(n).Sort([]string{"id"}, Descending()) // Limit: no fusion
	if ex := sorted.Explain(); strings.Contains(ex, ".map") || !strings.Contains(ex, "sample(keys)") {
		t.Errorf("Explain of a sort after a Limit:\n%s", ex)
	}
	for _, tc := range []struct {
		ds     *Dataset
		stages []string // stage line prefixes, each with 4 tasks unless reduce
	}{
		{shuffled, []string{"map (fused: run by ReadRange->RandomShuffle[seed=1].map's tasks): 4 tasks, 3000 rows"}},
		{sorted, []string{"sample: 4 tasks", "map: 4 tasks, 3000 rows"}},
	} {
		if _, err := tc.ds.TakeAll(ctx); err != nil {
			t.Fatal(err)
		}
		st := tc.ds.Stats()
		for _, s := range tc.stages {
			if !strings.Contains(st, "  - "+s) {
				t.Errorf("Stats lacks %q:\n%s", s, st)
			}
		}
		// The reduce line: its tasks, the rows of the whole dataset, bytes and time.
		var line string
		for _, l := range strings.Split(st, "\n") {
			if strings.HasPrefix(l, "  - reduce") {
				line = l
			}
		}
		var tasks, rows, bytes int64
		i := strings.Index(line, ": ")
		if i < 0 {
			t.Fatalf("no reduce line in:\n%s", st)
		}
		if k, err := fmt.Sscanf(line[i+2:], "%d tasks, %d rows and %d bytes out", &tasks, &rows, &bytes); k != 3 || err != nil {
			t.Fatalf("reduce line %q: %v", line, err)
		}
		if tasks < 1 || tasks > 4 || rows != n || bytes < n*8 || !strings.Contains(line, "remote wall") {
			t.Fatalf("reduce line %q", line)
		}
	}
}
