package data

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow"

	"github.com/ray-go/ray"
)

// The all-to-all operators, checked against plain in-memory computations.

// xRows makes n rows: seq (the row's index), i (int64 keys with ties and nulls; null in
// every row of the first tenth, so that a block of FromItems(Parallelism(10)) has it
// null-typed), f (float64 with ties, NaN and nulls), s (strings with nulls), k (skewed: 0 in
// 90% of the rows), v (float64 values with nulls) and n (int64 values).
func xRows(n int) []Row {
	rows := make([]Row, n)
	for j := range rows {
		r := Row{"seq": int64(j), "k": int64(0), "n": int64(j % 7), "v": float64(j%13) * 0.5}
		if j < n/10 {
			r["i"] = nil
		} else if j%7 == 0 {
			r["i"] = nil
		} else {
			r["i"] = int64((j * 37) % 23)
		}
		switch {
		case j%11 == 0:
			r["f"] = math.NaN()
		case j%13 == 0:
			r["f"] = nil
		default:
			r["f"] = float64((j*17)%19) - 9.5
		}
		if j%5 == 0 {
			r["s"] = nil
		} else {
			r["s"] = fmt.Sprintf("s%02d", (j*7)%12)
		}
		if j%10 == 9 {
			r["k"] = int64(j % 31)
		}
		if j%9 == 0 {
			r["v"] = nil
		}
		rows[j] = r
	}
	return rows
}

// refCmp orders two values of a column: nulls last, NaN before them, in either direction.
func refCmp(a, b any, desc bool) int {
	class := func(v any) int {
		switch x := v.(type) {
		case nil:
			return 2
		case float64:
			if math.IsNaN(x) {
				return 1
			}
		}
		return 0
	}
	if ca, cb := class(a), class(b); ca != 0 || cb != 0 {
		return ca - cb
	}
	var c int
	switch x := a.(type) {
	case int64:
		c = cmp.Compare(x, b.(int64))
	case float64:
		c = cmp.Compare(x, b.(float64))
	case string:
		c = cmp.Compare(x, b.(string))
	default:
		panic(fmt.Sprintf("refCmp: %T", a))
	}
	if desc {
		return -c
	}
	return c
}

func seqs(t *testing.T, rows []Row) []int64 {
	t.Helper()
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r["seq"].(int64)
	}
	return out
}

func sortedCopy(v []int64) []int64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s
}

func TestRandomShuffle(t *testing.T) {
	ctx := timeout(t)
	for _, tc := range []struct {
		name string
		d    *Dataset
		n    int64
	}{
		{"one block", Range(500, Parallelism(1)), 500},
		{"blocks", Range(1000, Parallelism(7)), 1000},
		{"many small blocks", Range(2000, Parallelism(100)), 2000}, // merges groups of maps
		{"empty", Range(0), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.d.RandomShuffle(Seed(42))
			rows, err := a.TakeAll(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := ids(t, rows)
			if !slices.Equal(sortedCopy(got), seq(0, tc.n)) {
				t.Fatalf("not a permutation of 0..%d: %d rows", tc.n, len(got))
			}
			if tc.n > 10 && slices.IsSorted(got) {
				t.Fatalf("the rows were not shuffled")
			}
			again, err := tc.d.RandomShuffle(Seed(42)).TakeAll(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(ids(t, again), got) {
				t.Fatalf("the same seed gave another order")
			}
			other, err := tc.d.RandomShuffle(Seed(43)).TakeAll(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if tc.n > 10 && reflect.DeepEqual(ids(t, other), got) {
				t.Fatalf("another seed gave the same order")
			}
			if tc.name == "many small blocks" && !strings.Contains(a.Stats(), "- merge:") {
				t.Errorf("100 maps ran no merge:\n%s", a.Stats())
			}
			if tc.n > 0 && !strings.Contains(a.Stats(), "Bytes shuffled") {
				t.Errorf("stats:\n%s", a.Stats())
			}
		})
	}
	// Without a seed: still a permutation.
	rows, err := Range(300, Parallelism(3)).RandomShuffle().TakeAll(ctx)
	if err != nil || !reflect.DeepEqual(sortedCopy(ids(t, rows)), seq(0, 300)) {
		t.Fatalf("unseeded: %v", err)
	}
	if n, err := Range(300).RandomShuffle().Count(ctx); n != 300 || err != nil {
		t.Fatalf("Count: %d %v", n, err)
	}
	// A Limit downstream stops it early, and what it holds is freed.
	rows, err = Range(1000, Parallelism(10)).RandomShuffle(Seed(1)).Take(ctx, 5)
	if err != nil || len(rows) != 5 {
		t.Fatalf("Take(5): %v %v", rows, err)
	}
}

func blockRows(t *testing.T, m *Dataset) []int64 {
	t.Helper()
	var out []int64
	for _, b := range m.Plan.Blocks {
		out = append(out, b.Rows)
	}
	return out
}

func TestRepartition(t *testing.T) {
	ctx := timeout(t)
	m, err := Range(10, Parallelism(4)).Repartition(3, false).Materialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := blockRows(t, m); !reflect.DeepEqual(got, []int64{3, 3, 4}) {
		t.Fatalf("blocks of %v rows", got)
	}
	rows, err := m.TakeAll(ctx)
	if err != nil || !reflect.DeepEqual(ids(t, rows), seq(0, 10)) {
		t.Fatalf("order: %v %v", rows, err)
	}
	// Many small blocks into a few, a few into many (some empty).
	m, err = Range(1000, Parallelism(50)).Repartition(4, false).Materialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := blockRows(t, m); !reflect.DeepEqual(got, []int64{250, 250, 250, 250}) {
		t.Fatalf("blocks of %v rows", got)
	}
	m, err = Range(3, Parallelism(1)).Repartition(5, false).Materialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := blockRows(t, m); !reflect.DeepEqual(got, []int64{0, 1, 0, 1, 1}) {
		t.Fatalf("blocks of %v rows", got)
	}
	if rows, err := m.TakeAll(ctx); err != nil || !reflect.DeepEqual(ids(t, rows), seq(0, 3)) {
		t.Fatalf("rows %v %v", rows, err)
	}
	// With shuffle: n blocks, a permutation, deterministic with a seed.
	sh := Range(1000, Parallelism(3)).Repartition(8, true, Seed(5))
	m, err = sh.Materialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Plan.Blocks) != 8 {
		t.Fatalf("%d blocks", len(m.Plan.Blocks))
	}
	a, err := m.TakeAll(ctx)
	if err != nil || !reflect.DeepEqual(sortedCopy(ids(t, a)), seq(0, 1000)) || slices.IsSorted(ids(t, a)) {
		t.Fatalf("shuffled repartition: %v", err)
	}
	b, err := sh.TakeAll(ctx)
	if err != nil || !reflect.DeepEqual(ids(t, a), ids(t, b)) {
		t.Fatalf("not deterministic: %v", err)
	}
	// Empty input: no blocks.
	m, err = Range(0).Repartition(3, false).Materialize(ctx)
	if err != nil || len(m.Plan.Blocks) != 0 {
		t.Fatalf("empty: %v %v", m, err)
	}
	if _, err := Range(10).Repartition(0, false).TakeAll(ctx); err == nil || !strings.Contains(err.Error(), "Repartition(0)") {
		t.Fatalf("Repartition(0): %v", err)
	}
}

func TestSort(t *testing.T) {
	const n = 600
	items := xRows(n)
	for _, tc := range []struct {
		keys []string
		desc []bool
	}{
		{[]string{"i"}, nil},
		{[]string{"i"}, []bool{true}},
		{[]string{"f"}, nil},
		{[]string{"f"}, []bool{true}},
		{[]string{"s"}, nil},
		{[]string{"s", "i"}, []bool{false, true}},
		{[]string{"k"}, nil}, // skewed: one key in 90% of the rows
		{[]string{"s", "f", "n"}, []bool{true, false, true}},
	} {
		want := slices.Clone(items)
		slices.SortStableFunc(want, func(a, b Row) int {
			for i, k := range tc.keys {
				if c := refCmp(a[k], b[k], i < len(tc.desc) && tc.desc[i]); c != 0 {
					return c
				}
			}
			return 0
		})
		t.Run(fmt.Sprintf("%v desc=%v", tc.keys, tc.desc), func(t *testing.T) {
			ctx := timeout(t)
			for _, par := range []int{1, 10, 60} {
				name := fmt.Sprintf("blocks=%d", par)
				var opts []Option
				if tc.desc != nil {
					opts = append(opts, Descending(tc.desc...))
				}
				d := FromItems(items, Parallelism(par)).Sort(tc.keys, opts...)
				rows, err := d.TakeAll(ctx)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if got := seqs(t, rows); !reflect.DeepEqual(got, seqs(t, want)) {
					t.Fatalf("%s: order of seq\n got %v\nwant %v", name, got[:min(len(got), 30)], seqs(t, want)[:30])
				}
			}
		})
	}
	ctx := timeout(t)
	// Descending() with no value sorts every key descending.
	rows, err := Range(100, Parallelism(4)).Sort([]string{"id"}, Descending()).TakeAll(ctx)
	if err != nil || ids(t, rows)[0] != 99 || !slices.IsSortedFunc(ids(t, rows), func(a, b int64) int { return cmp.Compare(b, a) }) {
		t.Fatalf("Descending(): %v", err)
	}
	// The output is a permutation after a shuffle, and its blocks are ranges.
	d := Range(5000, Parallelism(8)).RandomShuffle(Seed(9)).Sort([]string{"id"})
	m, err := d.Materialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rows, err := m.TakeAll(ctx); err != nil || !reflect.DeepEqual(ids(t, rows), seq(0, 5000)) {
		t.Fatalf("sort after shuffle: %v", err)
	}
	if len(m.Plan.Blocks) < 4 {
		t.Errorf("%d output blocks of 8 partitions", len(m.Plan.Blocks))
	}
	if !strings.Contains(d.Stats(), "- sample:") || !strings.Contains(d.Explain(), "sample(keys)") {
		t.Errorf("stats:\n%s\nexplain: %s", d.Stats(), d.Explain())
	}
	// Many small blocks: merges of sorted runs.
	d = Range(3000, Parallelism(100)).RandomShuffle(Seed(2)).Sort([]string{"id"}, Descending(true))
	rows, err = d.TakeAll(ctx)
	if err != nil || !reflect.DeepEqual(ids(t, rows), reversed(seq(0, 3000))) {
		t.Fatalf("100 blocks: %v", err)
	}
	if !strings.Contains(d.Stats(), "- merge:") {
		t.Errorf("no merge of 100 maps:\n%s", d.Stats())
	}
	// Empty.
	if rows, err := Range(0).Sort([]string{"id"}).TakeAll(ctx); err != nil || len(rows) != 0 {
		t.Fatalf("empty: %v %v", rows, err)
	}
	// Bad input.
	for name, c := range map[string]struct {
		d    *Dataset
		want string
	}{
		"no keys":      {Range(10).Sort(nil), "no key columns"},
		"unknown":      {Range(10).Sort([]string{"nope"}), `no column "nope"`},
		"descending":   {Range(10).Sort([]string{"id"}, Descending(true, false)), "2 values for 1 keys"},
		"list key":     {FromItems([]Row{{"l": []int64{1}}, {"l": []int64{0}}}).Sort([]string{"l"}), "cannot be compared"},
		"empty column": {Range(10).Sort([]string{""}), "empty key"},
	} {
		if _, err := c.d.TakeAll(ctx); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", name, err, c.want)
		}
	}
}

// refGroups is the plain computation of GroupBy(keys).Aggregate(Count(), Sum("v"),
// Min("v"), Max("v"), Mean("v"), Std("v", 1), Std("v", 0), Sum("n"), Min("s"), Max("s")):
// key string -> the aggregates.
func refGroups(rows []Row, keys []string) map[string]Row {
	type acc struct {
		count, sumN int64
		vals        []float64
		minS, maxS  any
		first       Row
	}
	accs := map[string]*acc{}
	var order []string
	for _, r := range rows {
		k := refKey(r, keys)
		a := accs[k]
		if a == nil {
			a = &acc{first: r}
			accs[k] = a
			order = append(order, k)
		}
		a.count++
		a.sumN += r["n"].(int64)
		if v, ok := r["v"].(float64); ok {
			a.vals = append(a.vals, v)
		}
		if s, ok := r["s"].(string); ok {
			if a.minS == nil || s < a.minS.(string) {
				a.minS = s
			}
			if a.maxS == nil || s > a.maxS.(string) {
				a.maxS = s
			}
		}
	}
	out := map[string]Row{}
	for _, k := range order {
		a := accs[k]
		r := Row{"count()": a.count, "sum(n)": a.sumN, "min(s)": a.minS, "max(s)": a.maxS}
		for _, key := range keys {
			r[key] = a.first[key]
		}
		if len(a.vals) == 0 {
			r["sum(v)"], r["min(v)"], r["max(v)"], r["mean(v)"], r["std(v)"], r["std0"] = nil, nil, nil, nil, nil, nil
		} else {
			var sum float64
			for _, v := range a.vals {
				sum += v
			}
			mean := sum / float64(len(a.vals))
			var ss float64
			for _, v := range a.vals {
				ss += (v - mean) * (v - mean)
			}
			r["sum(v)"], r["min(v)"], r["max(v)"], r["mean(v)"] = sum, slices.Min(a.vals), slices.Max(a.vals), mean
			r["std(v)"] = math.NaN()
			if len(a.vals) > 1 {
				r["std(v)"] = math.Sqrt(ss / float64(len(a.vals)-1))
			}
			r["std0"] = math.Sqrt(ss / float64(len(a.vals)))
		}
		out[k] = r
	}
	return out
}

func refKey(r Row, keys []string) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		v := r[k]
		if f, ok := v.(float64); ok && f == 0 {
			v = 0.0 // -0 and 0 are one key
		}
		parts[i] = fmt.Sprintf("%v", v)
	}
	return strings.Join(parts, "|")
}

func sameValue(a, b any) bool {
	fa, okA := a.(float64)
	fb, okB := b.(float64)
	if okA && okB {
		if math.IsNaN(fa) || math.IsNaN(fb) {
			return math.IsNaN(fa) && math.IsNaN(fb)
		}
		return math.Abs(fa-fb) <= 1e-9*math.Max(1, math.Abs(fb))
	}
	return reflect.DeepEqual(a, b)
}

func TestGroupByAggregate(t *testing.T) {
	const n = 1000
	items := xRows(n)
	aggs := []AggregateFn{Count(), Sum("v"), Min("v"), Max("v"), Mean("v"), Std("v", 1), Sum("n"), Min("s"), Max("s")}
	for _, keys := range [][]string{{"i"}, {"f"}, {"s"}, {"k"}, {"s", "i"}} {
		want := refGroups(items, keys)
		t.Run(fmt.Sprint(keys), func(t *testing.T) {
			ctx := timeout(t)
			for _, par := range []int{1, 10, 80} {
				name := fmt.Sprintf("%v blocks=%d", keys, par)
				d := FromItems(items, Parallelism(par)).GroupBy(keys...).Aggregate(aggs...)
				// One run, whose output gives the rows and the schema (a Schema call of d
				// would run it all again: twice the work under the subtest's deadline).
				m, err := d.Materialize(ctx)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				rows, err := m.TakeAll(ctx)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if len(rows) != len(want) {
					t.Fatalf("%s: %d groups, want %d", name, len(rows), len(want))
				}
				for _, r := range rows {
					w, ok := want[refKey(r, keys)]
					if !ok {
						t.Fatalf("%s: unexpected group %v", name, r)
					}
					for col, wv := range w {
						if col == "std0" {
							continue
						}
						if !sameValue(r[col], wv) {
							t.Fatalf("%s: group %s: %s = %v, want %v (row %v)", name, refKey(r, keys), col, r[col], wv, r)
						}
					}
				}
				// Within a block the groups are sorted by the keys; the columns are the keys,
				// then the aggregations in order.
				s, err := m.Schema(ctx)
				if err != nil {
					t.Fatalf("%s: Schema: %v", name, err)
				}
				if names := columnNames(s); !reflect.DeepEqual(names, append(slices.Clone(keys), "count()", "sum(v)", "min(v)", "max(v)", "mean(v)", "std(v)", "sum(n)", "min(s)", "max(s)")) {
					t.Fatalf("%s: columns %v", name, names)
				}
				if par == 80 && !strings.Contains(d.Stats(), "- merge:") {
					t.Errorf("%s: no merge:\n%s", name, d.Stats())
				}
			}
		})
	}
	ctx := timeout(t)
	// The shortcuts, and Std with ddof 0.
	want := refGroups(items, []string{"k"})
	for name, c := range map[string]struct {
		d   *Dataset
		col string
		ref string
	}{
		"Count": {FromItems(items).GroupBy("k").Count(), "count()", "count()"},
		"Sum":   {FromItems(items).GroupBy("k").Sum("v"), "sum(v)", "sum(v)"},
		"Min":   {FromItems(items).GroupBy("k").Min("v"), "min(v)", "min(v)"},
		"Max":   {FromItems(items).GroupBy("k").Max("v"), "max(v)", "max(v)"},
		"Mean":  {FromItems(items).GroupBy("k").Mean("v"), "mean(v)", "mean(v)"},
		"Std0":  {FromItems(items).GroupBy("k").Std("v", 0), "std(v)", "std0"},
	} {
		rows, err := c.d.TakeAll(ctx)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(rows) != len(want) {
			t.Fatalf("%s: %d groups", name, len(rows))
		}
		for _, r := range rows {
			if len(r) != 2 || !sameValue(r[c.col], want[refKey(r, []string{"k"})][c.ref]) {
				t.Fatalf("%s: %v, want %v", name, r, want[refKey(r, []string{"k"})])
			}
		}
	}
	// Empty dataset: no groups.
	if rows, err := Range(0).GroupBy("id").Count().TakeAll(ctx); err != nil || len(rows) != 0 {
		t.Fatalf("empty: %v %v", rows, err)
	}
	// Bad input.
	for name, c := range map[string]struct {
		d    *Dataset
		want string
	}{
		"no keys":       {Range(10).GroupBy().Count(), "no key columns"},
		"unknown key":   {Range(10).GroupBy("nope").Count(), `no column "nope"`},
		"unknown col":   {Range(10).GroupBy("id").Sum("nope"), `no column "nope"`},
		"sum of string": {FromItems(items).GroupBy("k").Sum("s"), "not a number"},
		"no columns":    {Range(10).GroupBy("id").Mean(), "no columns given"},
		"duplicate":     {Range(10).GroupBy("id").Aggregate(Sum("id"), Sum("id")), "two output columns"},
		"no aggs":       {Range(10).GroupBy("id").Aggregate(), "no aggregation"},
		"negative ddof": {Range(10).GroupBy("id").Std("id", -1), "negative ddof"},
	} {
		if _, err := c.d.TakeAll(ctx); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", name, err, c.want)
		}
	}
}

var groupSummary = BatchFunc("test.groupSummary", func(ctx context.Context, b arrow.Record) (arrow.Record, error) {
	rows := rowsOf(b)
	var sum int64
	for _, r := range rows {
		sum += r["n"].(int64)
	}
	return rowsToRecord([]Row{{"s": rows[0]["s"], "rows": int64(len(rows)), "sumn": sum}}, nil)
})

var groupFail = BatchFunc("test.groupFail", func(ctx context.Context, b arrow.Record) (arrow.Record, error) {
	return nil, errors.New("boom")
})

func TestMapGroups(t *testing.T) {
	ctx := timeout(t)
	items := xRows(500)
	want := refGroups(items, []string{"s"})
	for _, par := range []int{1, 7, 40} {
		rows, err := FromItems(items, Parallelism(par)).GroupBy("s").MapGroups(groupSummary).TakeAll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(want) {
			t.Fatalf("%d groups, want %d", len(rows), len(want))
		}
		for _, r := range rows {
			w := want[refKey(r, []string{"s"})]
			if r["rows"] != w["count()"] || r["sumn"] != w["sum(n)"] {
				t.Fatalf("group %v, want %v", r, w)
			}
		}
	}
	if _, err := Range(10).GroupBy("id").MapGroups(groupFail).TakeAll(ctx); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("a failing function: %v", err)
	}
	if _, err := Range(10).GroupBy("id").MapGroups(nil).TakeAll(ctx); err == nil {
		t.Fatalf("nil function: no error")
	}
}

func TestTrainTestSplitShuffle(t *testing.T) {
	ctx := timeout(t)
	d := Range(1000, Parallelism(5))
	split := func() ([]int64, []int64) {
		train, test, err := d.TrainTestSplit(ctx, 0.25, Shuffle(7))
		if err != nil {
			t.Fatal(err)
		}
		a, err := train.TakeAll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b, err := test.TakeAll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return ids(t, a), ids(t, b)
	}
	train, test := split()
	if len(train) != 750 || len(test) != 250 {
		t.Fatalf("%d and %d rows", len(train), len(test))
	}
	if !reflect.DeepEqual(sortedCopy(append(slices.Clone(train), test...)), seq(0, 1000)) {
		t.Fatalf("the parts are not a partition of the rows")
	}
	if slices.IsSorted(test) || slices.Max(test) < 900 && slices.Min(test) >= 750 {
		t.Fatalf("the test part was not shuffled: %v", test[:10])
	}
	train2, test2 := split()
	if !reflect.DeepEqual(train, train2) || !reflect.DeepEqual(test, test2) {
		t.Fatalf("the same seed gave other parts")
	}
}

// TestExchangeLimitAndExplain: an exchange under a Limit stops early; Explain names the
// stages.
func TestExchangeExplain(t *testing.T) {
	ctx := timeout(t)
	d := Range(100).GroupBy("id").Count().Sort([]string{"count()"}, Descending())
	ex := d.Explain()
	for _, s := range []string{"Aggregate[keys=id: count()]", "Sort[count() desc]", "map(partial aggregate, hash partition)", "reduce(merge sorted runs)"} {
		if !strings.Contains(ex, s) {
			t.Errorf("Explain lacks %q:\n%s", s, ex)
		}
	}
	rows, err := d.Take(ctx, 3)
	if err != nil || len(rows) != 3 {
		t.Fatalf("Take(3): %v %v", rows, err)
	}
	got := []int64{}
	for _, r := range rows {
		got = append(got, r["count()"].(int64))
	}
	if !reflect.DeepEqual(got, []int64{1, 1, 1}) {
		t.Fatalf("counts %v", got)
	}
}

func reversed(v []int64) []int64 {
	out := slices.Clone(v)
	slices.Reverse(out)
	return out
}

// TestAggregateUint64: sums of a uint64 column are uint64 (as pyarrow's) and its values
// from 2^63 count as the large numbers they are in sums, means and standard deviations,
// per group and over the whole dataset (they were read through int64, so turned negative).
func TestAggregateUint64(t *testing.T) {
	ctx := timeout(t)
	const big = uint64(1) << 63
	items := []Row{
		{"g": "c", "u": nil}, {"g": "c", "u": nil}, // a block where u is null in every row
		{"g": "a", "u": big}, {"g": "b", "u": uint64(3)},
		{"g": "a", "u": uint64(10)}, {"g": "b", "u": uint64(5)},
	}
	ds := FromItems(items, Parallelism(3))
	rows, err := ds.GroupBy("g").Aggregate(Sum("u"), Mean("u"), Std("u", 0)).Sort([]string{"g"}).TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	near := func(got any, want float64) bool {
		f, ok := got.(float64)
		return ok && math.Abs(f-want) <= 1e-9*math.Abs(want)
	}
	want := []struct {
		sum        any
		mean, std  float64
		nullMoment bool
	}{
		{big + 10, float64(big+10) / 2, float64(big-10) / 2, false},
		{uint64(8), 4, 1, false},
		{nil, 0, 0, true},
	}
	if len(rows) != 3 {
		t.Fatalf("groups: %v", rows)
	}
	for i, w := range want {
		r := rows[i]
		if r["sum(u)"] != w.sum {
			t.Errorf("group %v: sum(u) = %v (%T), want %v (%T)", r["g"], r["sum(u)"], r["sum(u)"], w.sum, w.sum)
		}
		if w.nullMoment {
			if r["mean(u)"] != nil || r["std(u)"] != nil {
				t.Errorf("group %v: mean, std = %v, %v, want nulls", r["g"], r["mean(u)"], r["std(u)"])
			}
			continue
		}
		if !near(r["mean(u)"], w.mean) || !near(r["std(u)"], w.std) {
			t.Errorf("group %v: mean, std = %v, %v, want %v, %v", r["g"], r["mean(u)"], r["std(u)"], w.mean, w.std)
		}
	}
	if s, err := ds.Sum(ctx, "u"); err != nil || s != big+18 {
		t.Errorf("Sum = %v (%T) %v, want %v", s, s, err, big+18)
	}
	if m, err := ds.Mean(ctx, "u"); err != nil || !near(m, float64(big+18)/4) {
		t.Errorf("Mean = %v %v, want %v", m, err, float64(big+18)/4)
	}
	// Signed integer sums stay int64.
	if s, err := FromItems([]Row{{"x": int64(2)}, {"x": int64(3)}}).Sum(ctx, "x"); err != nil || s != int64(5) {
		t.Errorf("Sum of int64 = %v (%T) %v", s, s, err)
	}
}

var zeroKey = ColumnFunc("test.zeroKey", func(_ context.Context, b arrow.Record) (arrow.Array, error) {
	return newInt64s(make([]int64, b.NumRows()), nil), nil
})

// TestSortSkewTooLarge: a Sort whose one key value holds more bytes than the object store
// fails (its reduce block is refused) with ErrObjectTooLarge and says why, in Sort's terms.
func TestSortSkewTooLarge(t *testing.T) {
	ctx, cancel := context.WithTimeout(shared, 5*time.Minute)
	defer cancel()
	// 3M rows of two int64 columns: 48 MB, all of key 0, in a 32 MiB store.
	ds := Range(3_000_000, Parallelism(8)).AddColumn("k", zeroKey).Sort([]string{"k"})
	var err error
	for _, e := range ds.IterBatches(ctx, BatchSize(1<<20)) {
		if e != nil {
			err = e
			break
		}
	}
	if !errors.Is(err, ray.ErrObjectTooLarge) {
		t.Fatalf("want ErrObjectTooLarge, got %v", err)
	}
	if !strings.Contains(err.Error(), "Sort keeps the rows of one key value in one output block") {
		t.Fatalf("the error does not say why: %v", err)
	}
}
