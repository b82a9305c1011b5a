package data

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"unsafe"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
)

// Sort, merge, hash and group kernels over Arrow arrays. Arrow Go v15's compute package has
// take and filter but no sort_indices, no merge of sorted runs and no hash aggregation, so
// these are written here: a comparator per key column specialised by type (nulls last,
// then NaN, in either direction), a stable sort of row indices (pdqsort with the row index
// as the last key), a k-way merge of sorted runs (a binary heap of run cursors, ties to the
// earlier run), a row hash (stable across processes, as partitions are computed in tasks)
// and a hash table that groups equal keys. Rows are moved with compute.Take.

// colCmp compares row i of one array with row j of another (or the same) array.
type colCmp func(i, j int) int

// rowCmp compares rows over several key columns, in order.
type rowCmp []colCmp

func (r rowCmp) cmp(i, j int) int {
	for _, c := range r {
		if x := c(i, j); x != 0 {
			return x
		}
	}
	return 0
}

// keyColumns returns rec's columns named keys; an unknown column is an error naming what.
func keyColumns(rec arrow.Record, keys []string, what string) ([]arrow.Array, error) {
	out := make([]arrow.Array, len(keys))
	for i, k := range keys {
		idx := rec.Schema().FieldIndices(k)
		if len(idx) == 0 {
			return nil, fmt.Errorf("%s: no column %q; the columns are: %s", what, k, strings.Join(columnNames(rec.Schema()), ", "))
		}
		out[i] = rec.Column(idx[0])
	}
	return out, nil
}

// newRowCmp compares rows of as (left) with rows of bs (right), key by key.
func newRowCmp(as, bs []arrow.Array, desc []bool) (rowCmp, error) {
	r := make(rowCmp, len(as))
	for k := range as {
		c, err := newColCmp(as[k], bs[k], k < len(desc) && desc[k])
		if err != nil {
			return nil, err
		}
		r[k] = c
	}
	return r, nil
}

// Nulls, then NaN before them, sort last in both directions, as Arrow's sort_indices with
// null_placement at_end.

func nullable(a arrow.Array) bool { return a.DataType().ID() == arrow.NULL || a.NullN() > 0 }

// nullCheck returns the comparison of two rows when one of them is null (done true).
func nullCheck(a, b arrow.Array, an, bn bool) func(i, j int) (int, bool) {
	aAll, bAll := a.DataType().ID() == arrow.NULL, b.DataType().ID() == arrow.NULL
	return func(i, j int) (int, bool) {
		x := aAll || an && a.IsNull(i)
		y := bAll || bn && b.IsNull(j)
		switch {
		case x && y:
			return 0, true
		case x:
			return 1, true
		case y:
			return -1, true
		}
		return 0, false
	}
}

func orderedCmp[T cmp.Ordered](av, bv []T, a, b arrow.Array, desc bool) colCmp {
	sign := 1
	if desc {
		sign = -1
	}
	if !nullable(a) && !nullable(b) {
		return func(i, j int) int { return sign * cmp.Compare(av[i], bv[j]) }
	}
	nc := nullCheck(a, b, nullable(a), nullable(b))
	return func(i, j int) int {
		if c, done := nc(i, j); done {
			return c
		}
		return sign * cmp.Compare(av[i], bv[j])
	}
}

func floatCmp[T float32 | float64](av, bv []T, a, b arrow.Array, desc bool) colCmp {
	sign := 1
	if desc {
		sign = -1
	}
	an, bn := nullable(a), nullable(b)
	nc := nullCheck(a, b, an, bn)
	return func(i, j int) int {
		if an || bn {
			if c, done := nc(i, j); done {
				return c
			}
		}
		x, y := av[i], bv[j]
		xn, yn := x != x, y != y
		if xn || yn {
			switch {
			case xn && yn:
				return 0
			case xn:
				return 1
			}
			return -1
		}
		return sign * cmp.Compare(x, y)
	}
}

func bytesCmp(av, bv func(int) []byte, a, b arrow.Array, desc bool) colCmp {
	sign := 1
	if desc {
		sign = -1
	}
	if !nullable(a) && !nullable(b) {
		return func(i, j int) int { return sign * bytes.Compare(av(i), bv(j)) }
	}
	nc := nullCheck(a, b, nullable(a), nullable(b))
	return func(i, j int) int {
		if c, done := nc(i, j); done {
			return c
		}
		return sign * bytes.Compare(av(i), bv(j))
	}
}

// nullOnly compares a null-typed column with a typed one: it only places the nulls.
func nullOnly(a, b arrow.Array) colCmp {
	nc := nullCheck(a, b, true, true)
	return func(i, j int) int {
		c, _ := nc(i, j)
		return c
	}
}

// byteGetter returns the bytes of row i of a string or binary array (no copy).
func byteGetter(a arrow.Array) (func(int) []byte, bool) {
	switch a := a.(type) {
	case *array.String:
		return func(i int) []byte { return unsafeBytes(a.Value(i)) }, true
	case *array.LargeString:
		return func(i int) []byte { return unsafeBytes(a.Value(i)) }, true
	case *array.Binary:
		return a.Value, true
	case *array.LargeBinary:
		return a.Value, true
	case *array.FixedSizeBinary:
		return a.Value, true
	}
	return nil, false
}

func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// newColCmp compares a's rows with b's; a and b have the same type, or one is null-typed.
func newColCmp(a, b arrow.Array, desc bool) (colCmp, error) {
	if a.DataType().ID() == arrow.NULL || b.DataType().ID() == arrow.NULL {
		return nullOnly(a, b), nil
	}
	if !arrow.TypeEqual(a.DataType(), b.DataType()) {
		return nil, fmt.Errorf("key of type %s against %s", a.DataType(), b.DataType())
	}
	switch x := a.(type) {
	case *array.Int64:
		return orderedCmp(x.Int64Values(), b.(*array.Int64).Int64Values(), a, b, desc), nil
	case *array.Int32:
		return orderedCmp(x.Int32Values(), b.(*array.Int32).Int32Values(), a, b, desc), nil
	case *array.Int16:
		return orderedCmp(x.Int16Values(), b.(*array.Int16).Int16Values(), a, b, desc), nil
	case *array.Int8:
		return orderedCmp(x.Int8Values(), b.(*array.Int8).Int8Values(), a, b, desc), nil
	case *array.Uint64:
		return orderedCmp(x.Uint64Values(), b.(*array.Uint64).Uint64Values(), a, b, desc), nil
	case *array.Uint32:
		return orderedCmp(x.Uint32Values(), b.(*array.Uint32).Uint32Values(), a, b, desc), nil
	case *array.Uint16:
		return orderedCmp(x.Uint16Values(), b.(*array.Uint16).Uint16Values(), a, b, desc), nil
	case *array.Uint8:
		return orderedCmp(x.Uint8Values(), b.(*array.Uint8).Uint8Values(), a, b, desc), nil
	case *array.Float64:
		return floatCmp(x.Float64Values(), b.(*array.Float64).Float64Values(), a, b, desc), nil
	case *array.Float32:
		return floatCmp(x.Float32Values(), b.(*array.Float32).Float32Values(), a, b, desc), nil
	case *array.Timestamp:
		return orderedCmp(x.TimestampValues(), b.(*array.Timestamp).TimestampValues(), a, b, desc), nil
	case *array.Date32:
		return orderedCmp(x.Date32Values(), b.(*array.Date32).Date32Values(), a, b, desc), nil
	case *array.Date64:
		return orderedCmp(x.Date64Values(), b.(*array.Date64).Date64Values(), a, b, desc), nil
	case *array.Boolean:
		y := b.(*array.Boolean)
		return orderedCmp2(func(i int) int8 { return b2i(x.Value(i)) }, func(j int) int8 { return b2i(y.Value(j)) }, a, b, desc), nil
	}
	if av, ok := byteGetter(a); ok {
		bv, _ := byteGetter(b)
		return bytesCmp(av, bv, a, b, desc), nil
	}
	return nil, fmt.Errorf("keys of type %s cannot be compared (numbers, strings, binary, booleans, timestamps and dates can)", a.DataType())
}

func b2i(v bool) int8 {
	if v {
		return 1
	}
	return 0
}

func orderedCmp2[T cmp.Ordered](av, bv func(int) T, a, b arrow.Array, desc bool) colCmp {
	sign := 1
	if desc {
		sign = -1
	}
	nc := nullCheck(a, b, nullable(a), nullable(b))
	return func(i, j int) int {
		if c, done := nc(i, j); done {
			return c
		}
		return sign * cmp.Compare(av(i), bv(j))
	}
}

// sortIndices returns the row order of rec sorted by keys (stable: equal keys keep their
// order).
func sortIndices(rec arrow.Record, keys []string, desc []bool) ([]int32, error) {
	cols, err := keyColumns(rec, keys, "Sort")
	if err != nil {
		return nil, err
	}
	c, err := newRowCmp(cols, cols, desc)
	if err != nil {
		return nil, fmt.Errorf("Sort: %w", err)
	}
	idx := make([]int32, rec.NumRows())
	for i := range idx {
		idx[i] = int32(i)
	}
	sorted := true
	for i := 1; i < len(idx) && sorted; i++ {
		sorted = c.cmp(i-1, i) <= 0
	}
	if sorted {
		return idx, nil
	}
	if len(c) == 1 {
		f := c[0]
		slices.SortFunc(idx, func(x, y int32) int {
			if r := f(int(x), int(y)); r != 0 {
				return r
			}
			return cmp.Compare(x, y)
		})
		return idx, nil
	}
	slices.SortFunc(idx, func(x, y int32) int {
		if r := c.cmp(int(x), int(y)); r != 0 {
			return r
		}
		return cmp.Compare(x, y)
	})
	return idx, nil
}

// isIdentity says whether idx is 0, 1, ..., n-1.
func isIdentity(idx []int32) bool {
	for i, x := range idx {
		if int(x) != i {
			return false
		}
	}
	return true
}

// takeRows returns rec's rows idx, in that order (a negative index gives a null row).
func takeRows(rec arrow.Record, idx []int32) (arrow.Record, error) {
	if int64(len(idx)) == rec.NumRows() && isIdentity(idx) {
		rec.Retain()
		return rec, nil
	}
	cols := make([]arrow.Array, rec.NumCols())
	for c := range cols {
		var err error
		if cols[c], err = takeIdx(rec.Column(c), idx); err != nil {
			releaseAll(cols[:c])
			return nil, err
		}
	}
	out := array.NewRecord(rec.Schema(), cols, int64(len(idx)))
	releaseAll(cols)
	return out, nil
}

// sortRecord returns rec sorted by keys (stable).
func sortRecord(rec arrow.Record, keys []string, desc []bool) (arrow.Record, error) {
	idx, err := sortIndices(rec, keys, desc)
	if err != nil {
		return nil, err
	}
	return takeRows(rec, idx)
}

// mergeRuns merges records each sorted by keys into one sorted record; among equal keys
// rows of an earlier run come first (so the merge of stable sorts is stable).
func mergeRuns(runs []arrow.Record, keys []string, desc []bool) (arrow.Record, error) {
	return mergeRunsOf(runs, keys, desc, false)
}

// mergeRunsOf is mergeRuns; consume: it releases runs, as soon as they are concatenated
// (the merge then holds its input once, not twice).
func mergeRunsOf(runs []arrow.Record, keys []string, desc []bool, consume bool) (arrow.Record, error) {
	release := func() {
		if consume {
			releaseRecords(runs)
			consume = false
		}
	}
	defer release()
	var nonEmpty []arrow.Record
	var lens []int
	for _, r := range runs {
		if r.NumRows() > 0 {
			nonEmpty = append(nonEmpty, r)
			lens = append(lens, int(r.NumRows()))
		}
	}
	if len(nonEmpty) == 0 {
		nonEmpty = runs[:min(len(runs), 1)]
	}
	all, err := concatRecords(nonEmpty)
	release()
	if err != nil {
		return nil, err
	}
	if len(nonEmpty) <= 1 {
		return all, nil
	}
	defer all.Release()
	cols, err := keyColumns(all, keys, "Sort")
	if err != nil {
		return nil, err
	}
	c, err := newRowCmp(cols, cols, desc)
	if err != nil {
		return nil, fmt.Errorf("Sort: %w", err)
	}
	// Cursors into the runs, as a binary heap ordered by (row, run).
	type cur struct{ pos, end, run int }
	h := make([]cur, 0, len(nonEmpty))
	off := 0
	for i, n := range lens {
		h = append(h, cur{off, off + n, i})
		off += n
	}
	less := func(x, y cur) bool {
		if r := c.cmp(x.pos, y.pos); r != 0 {
			return r < 0
		}
		return x.run < y.run
	}
	down := func(i int) {
		for {
			l := 2*i + 1
			if l >= len(h) {
				return
			}
			m := l
			if r := l + 1; r < len(h) && less(h[r], h[l]) {
				m = r
			}
			if !less(h[m], h[i]) {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		down(i)
	}
	idx := make([]int32, 0, off)
	for len(h) > 0 {
		top := &h[0]
		idx = append(idx, int32(top.pos))
		top.pos++
		if top.pos == top.end {
			h[0] = h[len(h)-1]
			h = h[:len(h)-1]
		}
		if len(h) > 0 {
			down(0)
		}
	}
	return takeRows(all, idx)
}

// ---- hashing and grouping ----

const hashSeed = 0x9e3779b97f4a7c15

func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func fnv64(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

const nullHash = 0x5bd1e9955bd1e995

// hashRows hashes each row's keys. The hash depends on values only (not on the process or
// the array's type width: an int32 5 and an int64 5 hash alike), so that every task puts a
// key in the same partition.
func hashRows(cols []arrow.Array, n int) ([]uint64, error) {
	h := make([]uint64, n)
	for i := range h {
		h[i] = hashSeed
	}
	for _, a := range cols {
		if err := hashColumn(a, h); err != nil {
			return nil, err
		}
	}
	for i := range h {
		h[i] = mix64(h[i])
	}
	return h, nil
}

func hashInts[T integer](vals []T, a arrow.Array, h []uint64) {
	nulls := a.NullN() > 0
	for i := range h {
		v := uint64(nullHash)
		if !nulls || a.IsValid(i) {
			v = mix64(uint64(int64(vals[i])))
		}
		h[i] = h[i]*31 + v
	}
}

func hashFloats[T float32 | float64](vals []T, a arrow.Array, h []uint64) {
	nulls := a.NullN() > 0
	for i := range h {
		v := uint64(nullHash)
		if !nulls || a.IsValid(i) {
			f := float64(vals[i])
			switch {
			case f == 0:
				f = 0 // -0 and 0 are one key
			case f != f:
				f = math.NaN()
			}
			v = mix64(math.Float64bits(f))
		}
		h[i] = h[i]*31 + v
	}
}

func hashColumn(a arrow.Array, h []uint64) error {
	switch x := a.(type) {
	case *array.Null:
		for i := range h {
			h[i] = h[i]*31 + nullHash
		}
	case *array.Int64:
		hashInts(x.Int64Values(), a, h)
	case *array.Int32:
		hashInts(x.Int32Values(), a, h)
	case *array.Int16:
		hashInts(x.Int16Values(), a, h)
	case *array.Int8:
		hashInts(x.Int8Values(), a, h)
	case *array.Uint64:
		hashInts(x.Uint64Values(), a, h)
	case *array.Uint32:
		hashInts(x.Uint32Values(), a, h)
	case *array.Uint16:
		hashInts(x.Uint16Values(), a, h)
	case *array.Uint8:
		hashInts(x.Uint8Values(), a, h)
	case *array.Float64:
		hashFloats(x.Float64Values(), a, h)
	case *array.Float32:
		hashFloats(x.Float32Values(), a, h)
	case *array.Timestamp:
		hashInts(x.TimestampValues(), a, h)
	case *array.Date32:
		hashInts(x.Date32Values(), a, h)
	case *array.Date64:
		hashInts(x.Date64Values(), a, h)
	case *array.Boolean:
		for i := range h {
			v := uint64(nullHash)
			if a.IsValid(i) {
				v = mix64(uint64(b2i(x.Value(i))))
			}
			h[i] = h[i]*31 + v
		}
	default:
		get, ok := byteGetter(a)
		if !ok {
			return fmt.Errorf("keys of type %s cannot be grouped (numbers, strings, binary, booleans, timestamps and dates can)", a.DataType())
		}
		nulls := a.NullN() > 0
		for i := range h {
			v := uint64(nullHash)
			if !nulls || a.IsValid(i) {
				v = mix64(fnv64(get(i)))
			}
			h[i] = h[i]*31 + v
		}
	}
	return nil
}

// partitionRows reorders rec so that its rows are grouped by partition (part[i] of row i,
// in [0, n)), keeping their order within a partition; counts are the rows per partition.
func partitionRows(rec arrow.Record, part []int32, n int) (arrow.Record, []int64, error) {
	counts := make([]int64, n)
	for _, p := range part {
		counts[p]++
	}
	pos := make([]int64, n)
	var off int64
	for p, c := range counts {
		pos[p] = off
		off += c
	}
	idx := make([]int32, len(part))
	for i, p := range part {
		idx[pos[p]] = int32(i)
		pos[p]++
	}
	out, err := takeRows(rec, idx)
	return out, counts, err
}
