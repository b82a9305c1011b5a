package data

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
)

// Hash aggregation of grouped datasets. A map task groups its block by the keys and turns
// each group into partial states (a row of the key columns and state columns: a count, a
// sum and its count of values, the best value, or count, mean and sum of squared
// deviations; one per column and kind, shared by the aggregations that need it:
// aggStates); merge and reduce tasks group the partials again and combine the states (Chan
// et al.'s formula for Std); the reduce task then finalizes them into Ray's output columns
// ("count()", "sum(x)", "min(x)", "max(x)", "mean(x)", "std(x)") and sorts its groups by
// the keys.

// AggregateFn is one aggregation of a grouped dataset (Ray's AggregateFn): make it with
// Count, Sum, Min, Max, Mean or Std and pass it to GroupedData.Aggregate. Nulls are ignored;
// a group with no value gets null (Std also gives NaN when the group has at most ddof
// values).
type AggregateFn struct {
	Fn   string // count, sum, min, max, mean, std
	Col  string
	Ddof int
}

// Count counts the rows of each group: column "count()".
func Count() AggregateFn { return AggregateFn{Fn: "count"} }

// Sum sums column col in each group: column "sum(col)", int64 for integer columns, float64
// for floating-point ones.
func Sum(col string) AggregateFn { return AggregateFn{Fn: "sum", Col: col} }

// Min is the smallest value of column col in each group: column "min(col)". NaN is
// skipped, unless every value of the group is NaN: then it is NaN (as Arrow's
// hash_min_max, which Ray uses); a group with only nulls gets null.
func Min(col string) AggregateFn { return AggregateFn{Fn: "min", Col: col} }

// Max is the largest value of column col in each group: column "max(col)"; NaN as in Min.
func Max(col string) AggregateFn { return AggregateFn{Fn: "max", Col: col} }

// Mean is the mean of column col in each group: column "mean(col)", float64.
func Mean(col string) AggregateFn { return AggregateFn{Fn: "mean", Col: col} }

// Std is the standard deviation of column col in each group with ddof delta degrees of
// freedom (1: the sample's, 0: the population's): column "std(col)", float64.
func Std(col string, ddof int) AggregateFn { return AggregateFn{Fn: "std", Col: col, Ddof: ddof} }

// Name is the output column's name, as Ray's: "count()", "sum(x)", ...
func (a AggregateFn) Name() string {
	if a.Fn == "count" {
		return "count()"
	}
	return a.Fn + "(" + a.Col + ")"
}

func (a AggregateFn) validate() error {
	switch a.Fn {
	case "count":
		return nil
	case "sum", "min", "max", "mean", "std":
		if a.Col == "" {
			return fmt.Errorf("%s: empty column name", a.Fn)
		}
		if a.Fn == "std" && a.Ddof < 0 {
			return fmt.Errorf("std(%s): negative ddof %d", a.Col, a.Ddof)
		}
		return nil
	}
	return fmt.Errorf("unknown aggregation %q", a.Fn)
}

func isNumeric(dt arrow.DataType) bool {
	id := dt.ID()
	return arrow.IsInteger(id) || arrow.IsFloating(id) || id == arrow.NULL
}

// groupAgg is rec grouped by keys.
type groupAgg struct {
	rec     arrow.Record
	groupOf []int32
	reps    []int32
}

func newGroupAgg(rec arrow.Record, keys []string) (*groupAgg, error) {
	g, _, err := newGroupAggIn(rec, keys, 0)
	return g, err
}

// newGroupAggIn is newGroupAgg with the groups in partition order when parts > 0 (see
// groupByPartition; counts are the groups of each partition), as a map task lays out its
// output: the states computed from it need no reordering.
func newGroupAggIn(rec arrow.Record, keys []string, parts int) (*groupAgg, []int64, error) {
	cols, err := keyColumns(rec, keys, "GroupBy")
	if err != nil {
		return nil, nil, err
	}
	hashes, err := hashRows(cols, int(rec.NumRows()))
	if err != nil {
		return nil, nil, fmt.Errorf("GroupBy: %w", err)
	}
	var g, r []int32
	var counts []int64
	if parts > 0 {
		g, r, counts, err = groupByPartition(cols, hashes, parts)
	} else {
		g, r, err = groupByHash(cols, hashes)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("GroupBy: %w", err)
	}
	return &groupAgg{rec: rec, groupOf: g, reps: r}, counts, nil
}

func (g *groupAgg) n() int { return len(g.reps) }

func (g *groupAgg) column(name, what string) (arrow.Array, error) {
	idx := g.rec.Schema().FieldIndices(name)
	if len(idx) == 0 {
		return nil, fmt.Errorf("%s: no column %q; the columns are: %s", what, name, strings.Join(columnNames(g.rec.Schema()), ", "))
	}
	return g.rec.Column(idx[0]), nil
}

func (g *groupAgg) count() []int64 {
	out := make([]int64, g.n())
	for _, x := range g.groupOf {
		out[x]++
	}
	return out
}

// sumCol sums a numeric column per group: int64 sums for integers (isInt), float64 sums
// otherwise, and the values counted.
func (g *groupAgg) sumCol(a arrow.Array) (is []int64, fs []float64, n []int64, isInt bool) {
	n = make([]int64, g.n())
	id := a.DataType().ID()
	if id == arrow.NULL {
		return nil, nil, n, false
	}
	nulls := a.NullN() > 0
	isInt = arrow.IsInteger(id)
	if isInt {
		is = make([]int64, g.n())
		if x, ok := a.(*array.Int64); ok && !nulls {
			vals := x.Int64Values()
			for i, x := range g.groupOf {
				is[x] += vals[i]
				n[x]++
			}
			return is, nil, n, true
		}
		get := intGetter(a)
		for i, x := range g.groupOf {
			if nulls && a.IsNull(i) {
				continue
			}
			is[x] += get(i)
			n[x]++
		}
		return is, nil, n, true
	}
	fs = make([]float64, g.n())
	if f, ok := a.(*array.Float64); ok && !nulls {
		vals := f.Float64Values()
		for i, x := range g.groupOf {
			fs[x] += vals[i]
			n[x]++
		}
		return nil, fs, n, false
	}
	get := floatGetter(a)
	for i, x := range g.groupOf {
		if nulls && a.IsNull(i) {
			continue
		}
		fs[x] += get(i)
		n[x]++
	}
	return nil, fs, n, false
}

// moments are count, mean and sum of squared deviations per group (Welford).
func (g *groupAgg) moments(a arrow.Array) (n []int64, mean, m2 []float64) {
	n, mean, m2 = make([]int64, g.n()), make([]float64, g.n()), make([]float64, g.n())
	if a.DataType().ID() == arrow.NULL {
		return
	}
	nulls := a.NullN() > 0
	get := floatGetter(a)
	for i, x := range g.groupOf {
		if nulls && a.IsNull(i) {
			continue
		}
		v := get(i)
		n[x]++
		d := v - mean[x]
		mean[x] += d / float64(n[x])
		m2[x] += d * (v - mean[x])
	}
	return
}

// combineMoments combines partial (n, mean, m2) columns per group (Chan et al.).
func (g *groupAgg) combineMoments(na, meana, m2a arrow.Array) (n []int64, mean, m2 []float64) {
	n, mean, m2 = make([]int64, g.n()), make([]float64, g.n()), make([]float64, g.n())
	nv := intGetter(na)
	mv, qv := floatGetter(meana), floatGetter(m2a)
	for i, x := range g.groupOf {
		nb := nv(i)
		if nb == 0 {
			continue
		}
		tot := n[x] + nb
		d := mv(i) - mean[x]
		mean[x] += d * float64(nb) / float64(tot)
		m2[x] += qv(i) + d*d*float64(n[x])*float64(nb)/float64(tot)
		n[x] = tot
	}
	return
}

// best takes the smallest (or largest) non-null, non-NaN value of a per group; NaN where a
// group's values are all NaN (as Arrow's min_max and hash_min_max since GH-46063, and
// NumPy's nanmin: NaN is skipped while there is another value); null where a group has no
// value. Merges and reduces run it again on the partial states, so a NaN partial counts
// only when every partial of the group is NaN.
func (g *groupAgg) best(a arrow.Array, isMin bool) (arrow.Array, error) {
	if a.DataType().ID() == arrow.NULL {
		return array.NewNull(g.n()), nil
	}
	c, err := newColCmp(a, a, false)
	if err != nil {
		return nil, err
	}
	bestAt := make([]int32, g.n())
	for i := range bestAt {
		bestAt[i] = -1
	}
	var nanAt []int32 // a NaN row of each group, for the groups that have no other value
	for i, x := range g.groupOf {
		if isNull(a, i) {
			continue
		}
		if isNaN(a, i) {
			if nanAt == nil {
				nanAt = make([]int32, g.n())
				for k := range nanAt {
					nanAt[k] = -1
				}
			}
			if nanAt[x] < 0 {
				nanAt[x] = int32(i)
			}
			continue
		}
		b := bestAt[x]
		if b < 0 {
			bestAt[x] = int32(i)
			continue
		}
		r := c(i, int(b))
		if isMin && r < 0 || !isMin && r > 0 {
			bestAt[x] = int32(i)
		}
	}
	for x, i := range nanAt {
		if bestAt[x] < 0 {
			bestAt[x] = i
		}
	}
	return takeIdx(a, bestAt)
}

func intGetter(a arrow.Array) func(int) int64 {
	switch x := a.(type) {
	case *array.Int64:
		v := x.Int64Values()
		return func(i int) int64 { return v[i] }
	case *array.Int32:
		return func(i int) int64 { return int64(x.Value(i)) }
	case *array.Int16:
		return func(i int) int64 { return int64(x.Value(i)) }
	case *array.Int8:
		return func(i int) int64 { return int64(x.Value(i)) }
	case *array.Uint64:
		return func(i int) int64 { return int64(x.Value(i)) }
	case *array.Uint32:
		return func(i int) int64 { return int64(x.Value(i)) }
	case *array.Uint16:
		return func(i int) int64 { return int64(x.Value(i)) }
	case *array.Uint8:
		return func(i int) int64 { return int64(x.Value(i)) }
	}
	return func(int) int64 { return 0 }
}

func floatGetter(a arrow.Array) func(int) float64 {
	switch x := a.(type) {
	case *array.Float64:
		v := x.Float64Values()
		return func(i int) float64 { return v[i] }
	case *array.Float32:
		return func(i int) float64 { return float64(x.Value(i)) }
	case *array.Uint64: // not through int64, which would turn values from 2^63 negative
		return func(i int) float64 { return float64(x.Value(i)) }
	}
	if arrow.IsInteger(a.DataType().ID()) {
		get := intGetter(a)
		return func(i int) float64 { return float64(get(i)) }
	}
	return func(int) float64 { return 0 }
}

func newInt64s(v []int64, valid []bool) arrow.Array {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.AppendValues(v, valid)
	return b.NewArray()
}

// newSums is an integer sum column: uint64 when the summed column is uint64 (the sums,
// added as int64, have the same bits as uint64 sums), else int64.
func newSums(v []int64, valid []bool, unsigned bool) arrow.Array {
	if !unsigned {
		return newInt64s(v, valid)
	}
	b := array.NewUint64Builder(mem)
	defer b.Release()
	b.Reserve(len(v))
	for i, x := range v {
		if valid != nil && !valid[i] {
			b.AppendNull()
		} else {
			b.Append(uint64(x))
		}
	}
	return b.NewArray()
}

func newFloat64s(v []float64, valid []bool) arrow.Array {
	b := array.NewFloat64Builder(mem)
	defer b.Release()
	b.AppendValues(v, valid)
	return b.NewArray()
}

func positive(n []int64) []bool {
	out := make([]bool, len(n))
	for i, x := range n {
		out[i] = x > 0
	}
	return out
}

// aggColumns holds the state (or output) columns being built.
type aggColumns struct {
	fields []arrow.Field
	cols   []arrow.Array
}

func (c *aggColumns) add(name string, a arrow.Array) {
	c.fields = append(c.fields, arrow.Field{Name: name, Type: a.DataType(), Nullable: true})
	c.cols = append(c.cols, a)
}

func (c *aggColumns) release() { releaseAll(c.cols) }

// record is the groups' keys (taken at reps) followed by the columns.
func (g *groupAgg) record(keys []string, c *aggColumns) (arrow.Record, error) {
	kcols, err := keyColumns(g.rec, keys, "GroupBy")
	if err != nil {
		return nil, err
	}
	var kf []arrow.Field
	for _, k := range keys {
		kf = append(kf, g.rec.Schema().Field(g.rec.Schema().FieldIndices(k)[0]))
	}
	krec := array.NewRecord(arrow.NewSchema(kf, nil), kcols, g.rec.NumRows())
	defer krec.Release()
	kt, err := takeRows(krec, g.reps)
	if err != nil {
		return nil, err
	}
	defer kt.Release()
	fields := append(kf, c.fields...)
	cols := append(append([]arrow.Array(nil), kt.Columns()...), c.cols...)
	return array.NewRecord(arrow.NewSchema(fields, nil), cols, int64(g.n())), nil
}

// aggState is one partial state of the aggregations (a few columns of the partial
// records), shared by every aggregation that needs it: Sum(x) and Mean(x) both read the
// sum of x and its count of values, and two Std(x) of different ddof the same moments.
type aggState struct {
	kind string // count, sum (sum and count of values), min, max, moments (n, mean, m2)
	col  string
	name string // the state's column, or its columns' prefix
	by   string // the first aggregation that needs it (for errors)
}

// aggStates are the states aggs need, each once, in the order they are first needed.
func aggStates(aggs []AggregateFn) []aggState {
	var out []aggState
	for _, a := range aggs {
		s := aggState{kind: a.Fn, col: a.Col, by: a.Name()}
		switch a.Fn {
		case "count":
			s.name = "count()"
		case "sum", "mean":
			s.kind, s.name = "sum", "sum("+a.Col+")"
		case "min", "max":
			s.name = a.Name()
		case "std":
			s.kind, s.name = "moments", "std("+a.Col+")"
		}
		if !slices.ContainsFunc(out, func(o aggState) bool { return o.name == s.name }) {
			out = append(out, s)
		}
	}
	return out
}

// aggPartial groups rec by keys and computes the aggregations' partial states.
func aggPartial(g *groupAgg, keys []string, aggs []AggregateFn) (arrow.Record, error) {
	var c aggColumns
	defer c.release()
	for _, s := range aggStates(aggs) {
		if s.kind == "count" {
			c.add(s.name, newInt64s(g.count(), nil))
			continue
		}
		col, err := g.column(s.col, s.by)
		if err != nil {
			return nil, err
		}
		switch s.kind {
		case "sum":
			if !isNumeric(col.DataType()) {
				return nil, fmt.Errorf("%s: column %q is of type %s, not a number", s.by, s.col, col.DataType())
			}
			is, fs, n, isInt := g.sumCol(col)
			switch {
			case isInt:
				c.add(s.name, newSums(is, nil, col.DataType().ID() == arrow.UINT64))
			case fs != nil:
				c.add(s.name, newFloat64s(fs, nil))
			default:
				c.add(s.name, array.NewNull(g.n()))
			}
			c.add(s.name+".n", newInt64s(n, nil))
		case "min", "max":
			b, err := g.best(col, s.kind == "min")
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.by, err)
			}
			c.add(s.name, b)
		case "moments":
			if !isNumeric(col.DataType()) {
				return nil, fmt.Errorf("%s: column %q is of type %s, not a number", s.by, s.col, col.DataType())
			}
			n, mean, m2 := g.moments(col)
			c.add(s.name+".n", newInt64s(n, nil))
			c.add(s.name+".mean", newFloat64s(mean, nil))
			c.add(s.name+".m2", newFloat64s(m2, nil))
		}
	}
	return g.record(keys, &c)
}

// combined is one state combined over the groups.
type combined struct {
	is, n    []int64
	fs       []float64
	isInt    bool
	unsigned bool // a sum of a uint64 column (is holds its bits)
	best     arrow.Array
	mean, m2 []float64
}

// aggCombine groups partial states by keys and combines them; finalize turns them into the
// output columns instead.
func aggCombine(g *groupAgg, keys []string, aggs []AggregateFn, finalize bool) (arrow.Record, error) {
	var c aggColumns
	defer c.release()
	col := func(name string) arrow.Array {
		a, _ := g.column(name, "")
		return a
	}
	states := aggStates(aggs)
	byName := make(map[string]*combined, len(states))
	defer func() {
		for _, st := range byName {
			if st.best != nil {
				st.best.Release()
			}
		}
	}()
	for _, s := range states {
		st := &combined{}
		byName[s.name] = st
		switch s.kind {
		case "count":
			st.is, _, _, _ = g.sumCol(col(s.name))
		case "sum":
			st.n, _, _, _ = g.sumCol(col(s.name + ".n"))
			st.is, st.fs, _, st.isInt = g.sumCol(col(s.name))
			st.unsigned = col(s.name).DataType().ID() == arrow.UINT64
		case "min", "max":
			b, err := g.best(col(s.name), s.kind == "min")
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.by, err)
			}
			st.best = b
		case "moments":
			st.n, st.mean, st.m2 = g.combineMoments(col(s.name+".n"), col(s.name+".mean"), col(s.name+".m2"))
		}
		if finalize {
			continue
		}
		switch s.kind {
		case "count":
			c.add(s.name, newInt64s(st.is, nil))
		case "sum":
			switch {
			case st.isInt:
				c.add(s.name, newSums(st.is, nil, st.unsigned))
			case st.fs != nil:
				c.add(s.name, newFloat64s(st.fs, nil))
			default:
				c.add(s.name, array.NewNull(g.n()))
			}
			c.add(s.name+".n", newInt64s(st.n, nil))
		case "min", "max":
			st.best.Retain()
			c.add(s.name, st.best)
		case "moments":
			c.add(s.name+".n", newInt64s(st.n, nil))
			c.add(s.name+".mean", newFloat64s(st.mean, nil))
			c.add(s.name+".m2", newFloat64s(st.m2, nil))
		}
	}
	if !finalize {
		return g.record(keys, &c)
	}
	for _, a := range aggs {
		name := a.Name()
		switch a.Fn {
		case "count":
			c.add(name, newInt64s(byName["count()"].is, nil))
		case "sum":
			st := byName["sum("+a.Col+")"]
			switch {
			case st.isInt:
				c.add(name, newSums(st.is, positive(st.n), st.unsigned))
			case st.fs != nil:
				c.add(name, newFloat64s(st.fs, positive(st.n)))
			default:
				c.add(name, array.NewNull(g.n()))
			}
		case "mean":
			st := byName["sum("+a.Col+")"]
			out := make([]float64, len(st.n))
			for i, n := range st.n {
				if n == 0 {
					continue
				}
				switch {
				case st.unsigned:
					out[i] = float64(uint64(st.is[i])) / float64(n)
				case st.isInt:
					out[i] = float64(st.is[i]) / float64(n)
				case st.fs != nil:
					out[i] = st.fs[i] / float64(n)
				}
			}
			c.add(name, newFloat64s(out, positive(st.n)))
		case "min", "max":
			b := byName[name].best
			b.Retain()
			c.add(name, b)
		case "std":
			st := byName["std("+a.Col+")"]
			out := make([]float64, len(st.n))
			for i := range out {
				if st.n[i] <= int64(a.Ddof) {
					out[i] = math.NaN()
				} else {
					out[i] = math.Sqrt(st.m2[i] / float64(st.n[i]-int64(a.Ddof)))
				}
			}
			c.add(name, newFloat64s(out, positive(st.n)))
		}
	}
	return g.record(keys, &c)
}
