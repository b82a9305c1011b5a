package data

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/ray-go/ray"
)

// All-to-all operators (RandomShuffle, Repartition, Sort, GroupBy's Aggregate and
// MapGroups) run as a map-reduce over the object store; see exchange.md for the design.
// This file has the plan's description of an exchange and what its tasks run; the
// executor's side is in exchange_exec.go.

// Exchange kinds.
const (
	xShuffle     = "RandomShuffle"
	xRepartition = "Repartition"
	xSort        = "Sort"
	xAggregate   = "Aggregate"
	xMapGroups   = "MapGroups"
)

// exchange describes an all-to-all operator. Its fields are exported so that a plan encodes.
type exchange struct {
	Kind    string
	N       int // output partitions; 0: as many as the input has blocks
	Seed    int64
	Seeded  bool
	Shuffle bool // Repartition
	Keys    []string
	Desc    []bool
	Aggs    []AggregateFn
	Fn      string // MapGroups: a BatchFn
}

// mergeFactor is how many consecutive map outputs a merge task combines (0: no merges).
// Merges run while later maps still run (push-based shuffle): for GroupBy they combine
// partial aggregates, which shrinks the data; for Sort and RandomShuffle they bound the
// pieces each reduce task reads (a merge copies the data once more, so it pays only with
// many small blocks); MapGroups has no merge.
func (x *exchange) mergeFactor() int {
	switch x.Kind {
	case xAggregate:
		return 4
	case xSort, xShuffle:
		return 16
	case xRepartition:
		if x.Shuffle {
			return 16
		}
	}
	return 0
}

// streams says whether maps may start before every input block exists (they need the
// number of partitions; Sort needs the samples of every block first, Repartition without
// shuffle the row count of every block).
func (x *exchange) streams() bool {
	return x.Kind != xSort && !(x.Kind == xRepartition && !x.Shuffle)
}

func descName(x *exchange, i int) string {
	if i < len(x.Desc) && x.Desc[i] {
		return x.Keys[i] + " desc"
	}
	return x.Keys[i]
}

// name is the operator's name in plans and statistics.
func (x *exchange) name() string {
	switch x.Kind {
	case xShuffle:
		if x.Seeded {
			return fmt.Sprintf("RandomShuffle[seed=%d]", x.Seed)
		}
		return "RandomShuffle"
	case xRepartition:
		return fmt.Sprintf("Repartition[%d, shuffle=%v]", x.N, x.Shuffle)
	case xSort:
		keys := make([]string, len(x.Keys))
		for i := range keys {
			keys[i] = descName(x, i)
		}
		return "Sort[" + strings.Join(keys, ", ") + "]"
	case xAggregate:
		names := make([]string, len(x.Aggs))
		for i, a := range x.Aggs {
			names[i] = a.Name()
		}
		return fmt.Sprintf("Aggregate[keys=%s: %s]", strings.Join(x.Keys, ", "), strings.Join(names, ", "))
	case xMapGroups:
		return fmt.Sprintf("MapGroups[keys=%s: %s]", strings.Join(x.Keys, ", "), x.Fn)
	}
	return x.Kind
}

// stagesDesc says what the exchange's tasks do, for Explain; fused: its map runs in the
// tasks of the operator before it.
func (x *exchange) stagesDesc(fused bool) string {
	var s []string
	switch x.Kind {
	case xShuffle:
		s = []string{"map(random partition)", "merge(concat)", "reduce(permute pieces as they come, may start before the last map ends)"}
	case xRepartition:
		if x.Shuffle {
			s = []string{"map(random partition)", "merge(concat)", "reduce(permute pieces as they come, may start before the last map ends)"}
		} else {
			s = []string{"reduce(split/concat in order)"}
		}
	case xSort:
		s = []string{"sample(keys)", "map(sort, range partition)", "merge(sorted runs)", "reduce(merge sorted runs)"}
	case xAggregate:
		s = []string{"map(partial aggregate, hash partition)", "merge(combine)", "reduce(combine, finalize, sort by keys)"}
	case xMapGroups:
		s = []string{"map(hash partition)", "reduce(sort by keys, fn per group)"}
	}
	if fused && len(s) > 0 {
		s[0] += "[fused into the operator before]"
	}
	return "all-to-all: " + strings.Join(s, " -> ")
}

// xTask is what one task of an exchange runs.
type xTask struct {
	Phase   string // "sample", "map", "merge", "reduce"
	X       exchange
	Index   int          // map: the input block's index (its random stream); reduce: the partition
	N       int          // partitions of the exchange
	Samples int          // sample: rows to take
	Bounds  []byte       // sort map: the N-1 range boundaries (Arrow IPC)
	Parts   [][]zipPiece // merge, reduce: the pieces of each partition handled, in order
	First   int          // merge, reduce: the partition of Parts[0]
	// Copy: copy out the pieces of a block read only in part and release the block before
	// the next fetch (fetchPieces); set when the object store spills (a spilled block is
	// restored whole into memory of its own) or the exchange's data is large for it.
	Copy bool
}

func shuffleRand(seed int64, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), stream))
}

// runExchange runs one task of an exchange; parts are the rows of each partition of a map
// or merge output (its rows grouped by partition, in order).
func runExchange(ctx context.Context, t *xTask, in arrow.Record) (arrow.Record, []int64, error) {
	x := &t.X
	switch t.Phase {
	case "sample":
		defer in.Release()
		return sampleKeys(in, x, t.Samples)
	case "map":
		defer in.Release()
		return mapPartition(in, t)
	case "merge", "reduce":
		return mergeReduce(ctx, t)
	}
	return nil, nil, fmt.Errorf("unknown exchange phase %q", t.Phase)
}

// sampleKeys takes n evenly spaced rows of in's key columns.
func sampleKeys(in arrow.Record, x *exchange, n int) (arrow.Record, []int64, error) {
	cols, err := keyColumns(in, x.Keys, "Sort")
	if err != nil {
		return nil, nil, err
	}
	rows := int(in.NumRows())
	n = min(max(n, 1), rows)
	idx := make([]int32, n)
	for i := range idx {
		idx[i] = int32((2*i + 1) * rows / (2 * n))
	}
	var fields []arrow.Field
	for _, k := range x.Keys {
		fields = append(fields, in.Schema().Field(in.Schema().FieldIndices(k)[0]))
	}
	keys := array.NewRecord(arrow.NewSchema(fields, nil), cols, in.NumRows())
	defer keys.Release()
	out, err := takeRows(keys, idx)
	return out, nil, err
}

func mapPartition(in arrow.Record, t *xTask) (arrow.Record, []int64, error) {
	x := &t.X
	n := max(t.N, 1)
	rows := int(in.NumRows())
	switch x.Kind {
	case xShuffle, xRepartition:
		rng := shuffleRand(x.Seed, uint64(t.Index)<<1)
		part := make([]int32, rows)
		for i := range part {
			part[i] = int32(rng.IntN(n))
		}
		out, counts, err := partitionRows(in, part, n)
		if err != nil {
			return nil, nil, err
		}
		return withParts(out, counts), counts, nil
	case xSort:
		sorted, err := sortRecord(in, x.Keys, x.Desc)
		if err != nil {
			return nil, nil, err
		}
		counts := make([]int64, n)
		if n == 1 || len(t.Bounds) == 0 {
			counts[0] = sorted.NumRows()
			return sorted, counts, nil
		}
		bounds, err := decodeRecord(t.Bounds)
		if err != nil {
			sorted.Release()
			return nil, nil, err
		}
		defer bounds.Release()
		offs, err := rangeOffsets(sorted, bounds, x)
		if err != nil {
			sorted.Release()
			return nil, nil, err
		}
		for p := range counts {
			counts[p] = offs[p+1] - offs[p]
		}
		return sorted, counts, nil
	case xAggregate:
		g, counts, err := newGroupAggIn(in, x.Keys, n)
		if err != nil {
			return nil, nil, err
		}
		partial, err := aggPartial(g, x.Keys, x.Aggs)
		if err != nil {
			return nil, nil, err
		}
		return partial, counts, nil
	case xMapGroups:
		cols, err := keyColumns(in, x.Keys, "GroupBy")
		if err != nil {
			return nil, nil, err
		}
		h, err := hashRows(cols, rows)
		if err != nil {
			return nil, nil, fmt.Errorf("GroupBy: %w", err)
		}
		part := make([]int32, rows)
		for i, v := range h {
			part[i] = int32(v % uint64(n))
		}
		return partitionRows(in, part, n)
	}
	return nil, nil, fmt.Errorf("unknown exchange %q", x.Kind)
}

// rangeOffsets returns where each partition of sorted (by x's keys) starts: partition p
// holds the rows r with bounds[p-1] <= r < bounds[p]; offs has N+1 entries.
func rangeOffsets(sorted, bounds arrow.Record, x *exchange) ([]int64, error) {
	sc, err := keyColumns(sorted, x.Keys, "Sort")
	if err != nil {
		return nil, err
	}
	bc, err := keyColumns(bounds, x.Keys, "Sort")
	if err != nil {
		return nil, err
	}
	c, err := newRowCmp(sc, bc, x.Desc)
	if err != nil {
		return nil, fmt.Errorf("Sort: %w", err)
	}
	nb := int(bounds.NumRows())
	rows := int(sorted.NumRows())
	offs := make([]int64, nb+2)
	lo := 0
	for b := 0; b < nb; b++ {
		// The first row >= bounds[b], at or after the previous partition's start.
		i, j := lo, rows
		for i < j {
			m := int(uint(i+j) >> 1)
			if c.cmp(m, b) < 0 {
				i = m + 1
			} else {
				j = m
			}
		}
		offs[b+1] = int64(i)
		lo = i
	}
	offs[nb+1] = int64(rows)
	return offs, nil
}

// mergeReduce fetches the pieces of each partition the task handles and combines them: a
// merge returns the partitions one after the other (parts gives their rows), a reduce
// returns its one partition finished.
func mergeReduce(ctx context.Context, t *xTask) (arrow.Record, []int64, error) {
	x := &t.X
	if t.Phase == "reduce" && x.permutes() {
		return shuffleReduce(ctx, t)
	}
	pieces, err := fetchPieces(ctx, t)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		for _, ps := range pieces {
			releaseRecords(ps)
		}
	}()
	var outs []arrow.Record
	defer func() {
		for _, o := range outs {
			o.Release()
		}
	}()
	parts := make([]int64, len(t.Parts))
	for i, ps := range t.Parts {
		if len(ps) == 0 {
			continue
		}
		mine := pieces[i]
		pieces[i] = nil
		out, err := combine(ctx, x, t.Phase == "reduce", t.First+i, mine)
		if err != nil {
			return nil, nil, err
		}
		parts[i] = out.NumRows()
		outs = append(outs, out)
	}
	if t.Phase == "reduce" {
		if len(outs) != 1 {
			return nil, nil, fmt.Errorf("internal error: a reduce task with %d partitions", len(outs))
		}
		out := outs[0]
		outs = nil
		return out, nil, nil
	}
	// A merge's outputs: only the non-empty ones (an empty one may lack the schema).
	var keep []arrow.Record
	for _, o := range outs {
		if o.NumRows() > 0 {
			keep = append(keep, o)
		}
	}
	out, err := concatRecords(keep)
	if err != nil {
		return nil, nil, err
	}
	return out, parts, nil
}

// fetchPieces fetches the pieces of a merge or reduce task: pieces[i][k] is piece k of
// partition t.First+i. The blocks are fetched one at a time, in the order the pieces first
// name them. With t.Copy, a block the task reads only part of (a reduce reads one
// partition of each map output) is copied out piece by piece and released before the next
// fetch, so the task holds the bytes it needs plus one whole block at most: a block may be
// restored whole from a spill file into memory of its own, outside the store's, and
// before this every reduce held every map output it read a slice of (the 2 GiB sort
// through a 512 MiB store peaked at 3.7 GiB resident). Other pieces are zero-copy views
// of their block (in local mode, of the stored bytes: copying them would only add a pass
// and garbage; the 1 GiB in-memory sort peaked 16% higher with copies).
func fetchPieces(ctx context.Context, t *xTask) (pieces [][]arrow.Record, err error) {
	type use struct{ i, k int }
	uses := map[string][]use{}
	var order []ray.ObjectRef[arrow.Record]
	pieces = make([][]arrow.Record, len(t.Parts))
	for i, ps := range t.Parts {
		pieces[i] = make([]arrow.Record, len(ps))
		for k, p := range ps {
			id := p.Ref.ID()
			if _, ok := uses[id]; !ok {
				order = append(order, p.Ref)
			}
			uses[id] = append(uses[id], use{i, k})
		}
	}
	defer func() {
		if err != nil {
			for _, ps := range pieces {
				for _, p := range ps {
					if p != nil {
						p.Release()
					}
				}
			}
			pieces = nil
		}
	}()
	for _, ref := range order {
		rec, err := ray.Get(ctx, ref)
		if err != nil {
			return nil, fmt.Errorf("fetching the map outputs: %w", err)
		}
		var need int64
		for _, u := range uses[ref.ID()] {
			if p := t.Parts[u.i][u.k]; p.N >= 0 {
				need += p.N
			} else {
				need = rec.NumRows() // a shuffle map's partition: its size is in the block
			}
		}
		whole := !t.Copy || need >= rec.NumRows()
		for _, u := range uses[ref.ID()] {
			sl, err := pieceOf(rec, t.Parts[u.i][u.k], t.First+u.i)
			if err == nil && !whole {
				var c arrow.Record
				c, err = copyRecord(sl)
				sl.Release()
				sl = c
			}
			if err != nil {
				rec.Release()
				return nil, err
			}
			pieces[u.i][u.k] = sl
		}
		rec.Release()
	}
	return pieces, nil
}

// copyRecord is a copy of rec's rows in buffers of their own (a slice of a record holds
// the whole record's buffers).
func copyRecord(rec arrow.Record) (arrow.Record, error) {
	cols := make([]arrow.Array, rec.NumCols())
	for c := range cols {
		a, err := array.Concatenate([]arrow.Array{rec.Column(c)}, mem)
		if err != nil {
			releaseAll(cols[:c])
			return nil, fmt.Errorf("data: copying column %q: %w", rec.Schema().Field(c).Name, err)
		}
		cols[c] = a
	}
	out := array.NewRecord(rec.Schema(), cols, rec.NumRows())
	releaseAll(cols)
	return out, nil
}

// permutes says whether the reduces permute their rows (RandomShuffle, Repartition with
// shuffle): those reduces stream (see shuffleReduce).
func (x *exchange) permutes() bool {
	return x.Kind == xShuffle || x.Kind == xRepartition && x.Shuffle
}

// partsKey is the schema metadata key of a shuffle map output's rows per partition, so
// that a reduce started before the map ended finds its partition in the block. Its value
// is sparse, "N;p:n,p:n,..." (the partitions, then each partition with rows and its rows,
// in order): a dense count per partition made every map output of an N-block shuffle
// carry N numbers, which every reduce that fetched it decoded again with the schema.
const partsKey = "ray.data.parts"

func withParts(rec arrow.Record, parts []int64) arrow.Record {
	b := make([]byte, 0, 16)
	b = strconv.AppendInt(b, int64(len(parts)), 10)
	b = append(b, ';')
	first := true
	for p, n := range parts {
		if n == 0 {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = strconv.AppendInt(b, int64(p), 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, n, 10)
	}
	md := arrow.NewMetadata([]string{partsKey}, []string{string(b)})
	out := array.NewRecord(arrow.NewSchema(rec.Schema().Fields(), &md), rec.Columns(), rec.NumRows())
	rec.Release()
	return out
}

// partAt reads partsKey's value (see there) for where partition starts and its rows (0
// when it has none). It scans the string without splitting it: a reduce reads one
// partition of every map output.
func partAt(v string, partition int) (off, n int64, err error) {
	bad := func(why string) (int64, int64, error) {
		return 0, 0, fmt.Errorf("internal error: a map output's partitions %.40q: %s", v, why)
	}
	semi := strings.IndexByte(v, ';')
	if semi < 0 {
		return bad("no partition count")
	}
	total, err := strconv.Atoi(v[:semi])
	if err != nil || total < 1 {
		return bad("a bad partition count")
	}
	if partition < 0 || partition >= total {
		return 0, 0, fmt.Errorf("internal error: a map output of %d partitions, partition %d wanted", total, partition)
	}
	last := -1
	for rest := v[semi+1:]; rest != ""; {
		entry := rest
		if c := strings.IndexByte(rest, ','); c >= 0 {
			entry, rest = rest[:c], rest[c+1:]
		} else {
			rest = ""
		}
		colon := strings.IndexByte(entry, ':')
		if colon < 0 {
			return bad("an entry without its rows")
		}
		p, err1 := strconv.Atoi(entry[:colon])
		k, err2 := strconv.ParseInt(entry[colon+1:], 10, 64)
		if err1 != nil || err2 != nil || p <= last || p >= total || k < 1 {
			return bad("a bad entry")
		}
		last = p
		if p > partition {
			break
		}
		if p == partition {
			return off, k, nil
		}
		off += k
	}
	return off, 0, nil
}

// pieceOf is piece p of rec, a map or merge output (partition's rows as the block's
// metadata says when p.N < 0), without the block's schema metadata.
func pieceOf(rec arrow.Record, p zipPiece, partition int) (arrow.Record, error) {
	off, n := p.Off, p.N
	if n < 0 {
		v, ok := rec.Schema().Metadata().GetValue(partsKey)
		if !ok {
			return nil, fmt.Errorf("internal error: a map output without its partitions")
		}
		var err error
		if off, n, err = partAt(v, partition); err != nil {
			return nil, err
		}
	}
	sl := rec.NewSlice(off, off+n)
	if !sl.Schema().HasMetadata() {
		return sl, nil
	}
	out := array.NewRecord(arrow.NewSchema(sl.Schema().Fields(), nil), sl.Columns(), sl.NumRows())
	sl.Release()
	return out, nil
}

// shuffleReduce is a RandomShuffle (or Repartition with shuffle) reduce: it fetches its
// pieces one at a time, in map order, and shuffles each in as it comes (pieceShuffler). A
// reduce may start while the last maps still run (see xEarlyReduces): a piece with N < 0
// is partition t.First of a map output that did not exist when the reduce started, and
// fetching it waits for it (the worker lends the task's CPU meanwhile).
func shuffleReduce(ctx context.Context, t *xTask) (arrow.Record, []int64, error) {
	if len(t.Parts) != 1 || len(t.Parts[0]) == 0 {
		return nil, nil, fmt.Errorf("internal error: a shuffle reduce with %d partitions", len(t.Parts))
	}
	x := &t.X
	sh := newPieceShuffler(shuffleRand(x.Seed, uint64(t.First)<<1|1))
	// Size the buffers: the rows of the pieces known, and as many per late piece as
	// the known ones have on average (plus a margin).
	var rows, known, late int64
	for _, p := range t.Parts[0] {
		if p.N >= 0 {
			rows += p.N
			known++
		} else {
			late++
		}
	}
	if known > 0 {
		rows += late * (rows/known + rows/known/8 + 1)
	}
	sh.reserve(int(rows))
	for _, p := range t.Parts[0] {
		rec, err := ray.Get(ctx, p.Ref)
		if err != nil {
			return nil, nil, fmt.Errorf("fetching the map outputs: %w", err)
		}
		sl, err := pieceOf(rec, p, t.First)
		rec.Release()
		if err != nil {
			return nil, nil, err
		}
		sh.add(sl)
		sl.Release()
	}
	out, err := sh.finish()
	return out, nil, err
}

// combine is the merge (final: the reduce) of one partition's pieces, in map order. It
// releases the pieces (a sort's as soon as they are concatenated).
func combine(ctx context.Context, x *exchange, final bool, partition int, pieces []arrow.Record) (arrow.Record, error) {
	if x.Kind == xSort {
		return mergeRunsOf(pieces, x.Keys, x.Desc, true)
	}
	defer releaseRecords(pieces)
	switch x.Kind {
	case xShuffle, xRepartition:
		if final && x.permutes() {
			sh := newPieceShuffler(shuffleRand(x.Seed, uint64(partition)<<1|1))
			for _, p := range pieces {
				sh.add(p)
			}
			return sh.finish()
		}
		return concatRecords(pieces)
	case xAggregate:
		all, err := concatRecords(pieces)
		if err != nil {
			return nil, err
		}
		defer all.Release()
		g, err := newGroupAgg(all, x.Keys)
		if err != nil {
			return nil, err
		}
		out, err := aggCombine(g, x.Keys, x.Aggs, final)
		if err != nil || !final {
			return out, err
		}
		defer out.Release()
		return sortRecord(out, x.Keys, nil)
	case xMapGroups:
		all, err := concatRecords(pieces)
		if err != nil {
			return nil, err
		}
		defer all.Release()
		if !final {
			all.Retain()
			return all, nil
		}
		return mapGroups(ctx, all, x)
	}
	return nil, fmt.Errorf("unknown exchange %q", x.Kind)
}

// mapGroups sorts rec by the keys and calls x.Fn on each group's rows.
func mapGroups(ctx context.Context, rec arrow.Record, x *exchange) (arrow.Record, error) {
	f, err := lookup[*BatchFn](x.Fn)
	if err != nil {
		return nil, err
	}
	call := f.fn
	if call == nil {
		if call, err = f.setup(ctx); err != nil {
			return nil, fmt.Errorf("MapGroups(%s): setup: %w", x.Fn, err)
		}
	}
	sorted, err := sortRecord(rec, x.Keys, nil)
	if err != nil {
		return nil, err
	}
	defer sorted.Release()
	cols, err := keyColumns(sorted, x.Keys, "GroupBy")
	if err != nil {
		return nil, err
	}
	c, err := newRowCmp(cols, cols, nil)
	if err != nil {
		return nil, err
	}
	var outs []arrow.Record
	defer func() {
		for _, o := range outs {
			o.Release()
		}
	}()
	n := int(sorted.NumRows())
	for lo := 0; lo < n; {
		hi := lo + 1
		for hi < n && c.cmp(lo, hi) == 0 {
			hi++
		}
		g := sorted.NewSlice(int64(lo), int64(hi))
		out, err := call(ctx, g)
		g.Release()
		if err != nil {
			return nil, fmt.Errorf("MapGroups(%s): %w", x.Fn, err)
		}
		if out == nil {
			return nil, fmt.Errorf("MapGroups(%s): the function returned a nil record", x.Fn)
		}
		outs = append(outs, out)
		lo = hi
	}
	var keep []arrow.Record
	for _, o := range outs {
		if o.NumRows() > 0 {
			keep = append(keep, o)
		}
	}
	if len(keep) == 0 && len(outs) > 0 {
		keep = outs[:1]
	}
	return concatRecords(keep)
}
