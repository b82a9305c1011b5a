package data

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
)

// Whole-dataset aggregates (Ray's Dataset.sum, min, max, mean, std, unique). Each runs the
// dataset with one more map-like stage, "Aggregate", that fuses with the maps before it and
// turns each block into a partial aggregate (a one-row record; for Unique, the block's
// distinct values); the driver combines the partials in dataset order. Nulls are ignored, as
// in Ray. Mean and Std combine per-block counts, means and sums of squared deviations with
// Chan et al.'s parallel formula.

// The partial aggregates.
const (
	aggSum    = "sum"
	aggMin    = "min"
	aggMax    = "max"
	aggMoment = "moments" // count, mean, m2: Mean and Std
	aggUnique = "unique"
)

// aggregate runs d with the partial-aggregate stage and returns the partials' rows.
func (d *Dataset) aggregate(ctx context.Context, fn, col string, opts []Option) ([]Row, error) {
	a := d.mapLike(kAggregate, fn, false, nil, func(n *lnode) error {
		if col == "" {
			return fmt.Errorf("data: %s: empty column name", aggName(fn))
		}
		n.Col = col
		return nil
	})
	rows, err := a.TakeAll(ctx, opts...)
	d.stats.Store(a.stats.Load())
	return rows, err
}

func aggName(fn string) string {
	switch fn {
	case aggMoment:
		return "Mean/Std"
	}
	return strings.ToUpper(fn[:1]) + fn[1:]
}

// partialAggregate computes partial aggregate fn of column col of rec.
func partialAggregate(rec arrow.Record, fn, col string) (arrow.Record, error) {
	idx := rec.Schema().FieldIndices(col)
	var a arrow.Array
	switch {
	case len(idx) > 0:
		a = rec.Column(idx[0])
	case rec.NumRows() == 0:
		// A block of no rows (a map's output of no input rows may have no columns).
		a = array.NewNull(0)
		defer a.Release()
	default:
		return nil, fmt.Errorf("no column %q; the columns are: %s", col, strings.Join(columnNames(rec.Schema()), ", "))
	}
	switch fn {
	case aggSum, aggMoment:
		if a.DataType().ID() != arrow.NULL && !arrow.IsInteger(a.DataType().ID()) && !arrow.IsFloating(a.DataType().ID()) {
			return nil, fmt.Errorf("column %q is of type %s, not a number", col, a.DataType())
		}
	case aggMin, aggMax:
		if a.DataType().ID() != arrow.NULL {
			if _, ok := orderable(a); !ok {
				return nil, fmt.Errorf("column %q is of type %s: Min and Max take numbers, strings, booleans, timestamps and dates", col, a.DataType())
			}
		}
	case aggUnique:
	default:
		return nil, fmt.Errorf("unknown aggregate %q", fn)
	}
	rows := []Row{{}}
	r := rows[0]
	var n int64
	switch fn {
	case aggSum:
		var si int64
		var sf float64
		isInt := arrow.IsInteger(a.DataType().ID())
		for i := 0; i < a.Len(); i++ {
			if isNull(a, i) {
				continue
			}
			n++
			if isInt {
				v, _ := toInt64(valueAt(a, i))
				si += v
			} else {
				v, _ := toFloat64(valueAt(a, i))
				sf += v
			}
		}
		// Both keys in every partial, so that every block's partial has one schema.
		// isum holds a uint64 column's sum as its bits (wrapping alike), unsigned says so.
		r["n"], r["isum"], r["fsum"] = n, nil, nil
		r["unsigned"] = a.DataType().ID() == arrow.UINT64
		if isInt {
			r["isum"] = si
		} else if n > 0 {
			r["fsum"] = sf
		}
	case aggMoment:
		var mean, m2 float64
		for i := 0; i < a.Len(); i++ {
			if isNull(a, i) {
				continue
			}
			x, _ := toFloat64(valueAt(a, i))
			n++
			delta := x - mean
			mean += delta / float64(n)
			m2 += delta * (x - mean)
		}
		r["n"], r["mean"], r["m2"] = n, mean, m2
	case aggMin, aggMax:
		var best, nan any
		for i := 0; i < a.Len(); i++ {
			if isNull(a, i) {
				continue
			}
			if isNaN(a, i) {
				nan = valueAt(a, i)
				continue
			}
			v := valueAt(a, i)
			if c, _ := compareValues(v, best); best == nil || fn == aggMin && c < 0 || fn == aggMax && c > 0 {
				best = v
			}
		}
		if best == nil {
			best = nan // every value NaN: the block's partial is NaN (skipped by the driver unless all are)
		}
		r["v"] = best
		if best == nil {
			n = 0
		} else {
			n = 1
		}
		r["n"] = n
	case aggUnique:
		vschema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: a.DataType(), Nullable: true}}, nil)
		seen := map[any]bool{}
		var vals []Row
		for i := 0; i < a.Len(); i++ {
			if isNull(a, i) {
				continue
			}
			k, ok := hashKey(valueAt(a, i))
			if !ok {
				return nil, fmt.Errorf("column %q is of type %s: Unique takes scalar columns", col, a.DataType())
			}
			if !seen[k] {
				seen[k] = true
				vals = append(vals, Row{"v": valueAt(a, i)})
			}
		}
		if len(vals) == 0 {
			b := array.NewRecordBuilder(mem, vschema)
			defer b.Release()
			return b.NewRecord(), nil
		}
		return rowsToRecord(vals, vschema)
	}
	var hint *arrow.Schema
	if fn == aggMin || fn == aggMax {
		hint = arrow.NewSchema([]arrow.Field{{Name: "v", Type: a.DataType(), Nullable: true}}, nil)
	}
	return rowsToRecord(rows, hint)
}

func isNaN(a arrow.Array, i int) bool {
	switch a := a.(type) {
	case *array.Float64:
		return math.IsNaN(a.Value(i))
	case *array.Float32:
		return math.IsNaN(float64(a.Value(i)))
	}
	return false
}

// orderable reports whether Min and Max can compare a's values.
func orderable(a arrow.Array) (arrow.Type, bool) {
	id := a.DataType().ID()
	switch {
	case arrow.IsInteger(id), id == arrow.FLOAT32, id == arrow.FLOAT64, id == arrow.STRING, id == arrow.LARGE_STRING,
		id == arrow.BOOL, id == arrow.TIMESTAMP, id == arrow.DATE32, id == arrow.DATE64:
		return id, true
	}
	return id, false
}

// compareValues orders two values of one column as read by valueAt (nil is smallest).
func compareValues(a, b any) (int, bool) {
	switch {
	case a == nil && b == nil:
		return 0, true
	case a == nil:
		return -1, true
	case b == nil:
		return 1, true
	}
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return cmp.Compare(x, y), ok
	case bool:
		y, ok := b.(bool)
		switch {
		case !ok, x == y:
			return 0, ok
		case !x:
			return -1, true
		}
		return 1, true
	case time.Time:
		y, ok := b.(time.Time)
		return x.Compare(y), ok
	case uint64:
		y, ok := b.(uint64)
		return cmp.Compare(x, y), ok
	case float64, float32:
		fx, _ := toFloat64(a)
		fy, ok := toFloat64(b)
		return cmp.Compare(fx, fy), ok
	}
	ix, ok1 := toInt64(a)
	iy, ok2 := toInt64(b)
	return cmp.Compare(ix, iy), ok1 && ok2
}

// nanKey is every NaN's map key: NaN equals no value, itself included, so as a key each
// would be new (Unique gave one NaN per NaN row; GroupBy puts them in one group).
type nanKey struct{}

// hashKey is a map key for a scalar value.
func hashKey(v any) (any, bool) {
	switch x := v.(type) {
	case []byte:
		return "b:" + string(x), true
	case []any, Row:
		return nil, false
	case time.Time:
		return x.UnixNano(), true
	case float64:
		if x != x {
			return nanKey{}, true
		}
	case float32:
		if x != x {
			return nanKey{}, true
		}
	}
	return v, true
}

// Sum returns the sum of column col's non-null values (Ray's sum): an int64 for integer
// columns (a uint64 for uint64 ones), a float64 for floating-point ones. No value (an empty
// dataset, only nulls) is an error wrapping ErrEmpty, where Ray returns None. Options: those
// of consuming calls.
func (d *Dataset) Sum(ctx context.Context, col string, opts ...Option) (any, error) {
	rows, err := d.aggregate(ctx, aggSum, col, opts)
	if err != nil {
		return nil, err
	}
	var n, si int64
	var sf float64
	isInt, isFloat, unsigned := false, false, false
	for _, r := range rows {
		n += r["n"].(int64)
		if u, _ := r["unsigned"].(bool); u {
			unsigned = true
		}
		if v, ok := r["isum"].(int64); ok {
			si += v
			isInt = true
		}
		if v, ok := r["fsum"].(float64); ok {
			sf += v
			isFloat = true
		}
	}
	switch {
	case n == 0:
		return nil, fmt.Errorf("data: Sum(%q): %w", col, ErrEmpty)
	case isInt && isFloat:
		return nil, fmt.Errorf("data: Sum(%q): the column holds integers in some blocks and floats in others", col)
	case isInt && unsigned:
		return uint64(si), nil
	case isInt:
		return si, nil
	}
	return sf, nil
}

// Min returns the smallest non-null value of column col (Ray's min), typed as IterRows gives
// it (int64, float64, string, bool, time.Time...). NaN is skipped, unless every non-null
// value is NaN: then the result is NaN (as Arrow's min_max since GH-46063, which Ray uses,
// and NumPy's nanmin). No value (no rows, or only nulls) is an error wrapping ErrEmpty.
func (d *Dataset) Min(ctx context.Context, col string, opts ...Option) (any, error) {
	return d.extreme(ctx, aggMin, col, opts)
}

// Max returns the largest non-null value of column col (Ray's max); see Min.
func (d *Dataset) Max(ctx context.Context, col string, opts ...Option) (any, error) {
	return d.extreme(ctx, aggMax, col, opts)
}

func (d *Dataset) extreme(ctx context.Context, fn, col string, opts []Option) (any, error) {
	rows, err := d.aggregate(ctx, fn, col, opts)
	if err != nil {
		return nil, err
	}
	var best, nan any
	for _, r := range rows {
		v := r["v"]
		if v == nil {
			continue
		}
		if isNaNValue(v) {
			nan = v
			continue
		}
		c, ok := compareValues(v, best)
		if !ok {
			return nil, fmt.Errorf("data: %s(%q): values of two types, %T and %T", aggName(fn), col, v, best)
		}
		if best == nil || fn == aggMin && c < 0 || fn == aggMax && c > 0 {
			best = v
		}
	}
	if best == nil {
		best = nan
	}
	if best == nil {
		return nil, fmt.Errorf("data: %s(%q): %w", aggName(fn), col, ErrEmpty)
	}
	return best, nil
}

// isNaNValue says whether v (a value as valueAt gives it) is a floating-point NaN.
func isNaNValue(v any) bool {
	switch x := v.(type) {
	case float64:
		return math.IsNaN(x)
	case float32:
		return math.IsNaN(float64(x))
	}
	return false
}

// moments combines the per-block count, mean and sum of squared deviations.
func (d *Dataset) moments(ctx context.Context, name, col string, opts []Option) (n int64, mean, m2 float64, err error) {
	rows, err := d.aggregate(ctx, aggMoment, col, opts)
	if err != nil {
		return 0, 0, 0, err
	}
	for _, r := range rows {
		nb := r["n"].(int64)
		if nb == 0 {
			continue
		}
		mb, m2b := r["mean"].(float64), r["m2"].(float64)
		tot := n + nb
		delta := mb - mean
		mean += delta * float64(nb) / float64(tot)
		m2 += m2b + delta*delta*float64(n)*float64(nb)/float64(tot)
		n = tot
	}
	if n == 0 {
		return 0, 0, 0, fmt.Errorf("data: %s(%q): %w", name, col, ErrEmpty)
	}
	return n, mean, m2, nil
}

// Mean returns the mean of column col's non-null values (Ray's mean). No value is an error
// wrapping ErrEmpty.
func (d *Dataset) Mean(ctx context.Context, col string, opts ...Option) (float64, error) {
	_, mean, _, err := d.moments(ctx, "Mean", col, opts)
	return mean, err
}

// Std returns the standard deviation of column col's non-null values with ddof delta
// degrees of freedom (Ray's std; ddof 1 is the sample standard deviation, 0 the
// population's): sqrt(sum((x-mean)^2) / (n-ddof)), NaN when n <= ddof. No value is an error
// wrapping ErrEmpty.
func (d *Dataset) Std(ctx context.Context, col string, ddof int, opts ...Option) (float64, error) {
	if ddof < 0 {
		return 0, fmt.Errorf("data: Std(%q, %d): negative ddof", col, ddof)
	}
	n, _, m2, err := d.moments(ctx, "Std", col, opts)
	if err != nil {
		return 0, err
	}
	if n <= int64(ddof) {
		return math.NaN(), nil
	}
	return math.Sqrt(m2 / float64(n-int64(ddof))), nil
}

// Unique returns the distinct non-null values of column col (Ray's unique), in the order of
// their first appearance in the dataset, typed as IterRows gives them. Scalar columns only.
// An empty dataset gives an empty slice.
func (d *Dataset) Unique(ctx context.Context, col string, opts ...Option) ([]any, error) {
	rows, err := d.aggregate(ctx, aggUnique, col, opts)
	if err != nil {
		return nil, err
	}
	out := []any{}
	seen := map[any]bool{}
	for _, r := range rows {
		k, _ := hashKey(r["v"])
		if !seen[k] {
			seen[k] = true
			out = append(out, r["v"])
		}
	}
	return out, nil
}
