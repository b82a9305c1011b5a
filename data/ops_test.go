package data

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow/array"
)

var (
	// withX gives each row columns x and x_1 (to test Zip's renaming of clashes).
	withX = RowFunc("test.withX", func(_ context.Context, r Row) (Row, error) {
		id := r["id"].(int64)
		return Row{"id": id, "x": id * 10, "x_1": id * 100}, nil
	})
	// modKey adds k = id%3 as a string.
	modKey = RowFunc("test.modKey", func(_ context.Context, r Row) (Row, error) {
		id := r["id"].(int64)
		return Row{"id": id, "k": fmt.Sprintf("k%d", id%3)}, nil
	})
)

func takeAll(t *testing.T, ctx context.Context, d *Dataset) []Row {
	t.Helper()
	rows, err := d.TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestRenameColumns(t *testing.T) {
	ctx := timeout(t)
	for _, src := range []*Dataset{Range(20, Parallelism(3)), Range(20, Parallelism(20)), Range(20, Parallelism(1)), Range(0)} {
		d := src.Map(withName).RenameColumns(map[string]string{"name": "n", "score": "s"})
		var want []Row
		for _, r := range takeAll(t, ctx, src.Map(withName)) {
			want = append(want, Row{"id": r["id"], "n": r["name"], "s": r["score"]})
		}
		if got := takeAll(t, ctx, d); !reflect.DeepEqual(got, want) {
			t.Fatalf("rows:\n got %v\nwant %v", got, want)
		}
	}
	d := Range(5).Map(withName).RenameColumns(map[string]string{"score": "s", "name": "n"})
	if s, err := d.Schema(ctx); err != nil || strings.Join(columnNames(s), ",") != "id,n,s" {
		t.Fatalf("column order: %v %v", s, err)
	}
	if ex := d.Explain(); !strings.Contains(ex, "ReadRange->Map(test.withName)->RenameColumns(name->n, score->s)") {
		t.Errorf("not fused: %s", ex)
	}
	fresh := Range(5).Map(withName).RenameColumns(map[string]string{"score": "s"})
	if n, err := fresh.Count(ctx); err != nil || n != 5 || !strings.Contains(fresh.Stats(), "not been executed") {
		t.Errorf("Count: %d %v (row-preserving: from the plan)", n, err)
	}
	// Nulls are kept.
	got := takeAll(t, ctx, Range(100, Parallelism(4)).Map(nullOpt).RenameColumns(map[string]string{"opt": "o"}))
	for i, r := range got {
		if !reflect.DeepEqual(r, Row{"id": int64(i), "o": optOf(int64(i))}) {
			t.Fatalf("row %d: %v", i, r)
		}
	}
	if _, err := Range(3).RenameColumns(map[string]string{"nope": "x"}).TakeAll(ctx); err == nil || !strings.Contains(err.Error(), `no column "nope"; the columns are: id`) {
		t.Fatalf("missing column: %v", err)
	}
	if _, err := Range(3).Map(withName).RenameColumns(map[string]string{"name": "id"}).TakeAll(ctx); err == nil || !strings.Contains(err.Error(), `two columns would be named "id"`) {
		t.Fatalf("clash: %v", err)
	}
	if _, err := Range(3).RenameColumns(nil).TakeAll(ctx); err == nil {
		t.Fatal("no renames: no error")
	}
}

// blockRuns cuts ids into runs of consecutive values.
func blockRuns(ids []int64) [][]int64 {
	var runs [][]int64
	for i, id := range ids {
		if i == 0 || id != ids[i-1]+1 {
			runs = append(runs, nil)
		}
		runs[len(runs)-1] = append(runs[len(runs)-1], id)
	}
	return runs
}

func TestRandomizeBlockOrder(t *testing.T) {
	ctx := timeout(t)
	src := Range(100, Parallelism(10)) // blocks [10i, 10i+10)
	order := func(seed int64) []int64 {
		return ids(t, takeAll(t, ctx, src.RandomizeBlockOrder(seed)))
	}
	moved := false
	for seed := int64(1); seed <= 3; seed++ {
		got := order(seed)
		sorted := slices.Clone(got)
		slices.Sort(sorted)
		if !reflect.DeepEqual(sorted, seq(0, 100)) {
			t.Fatalf("seed %d: not a permutation of the rows: %v", seed, got)
		}
		// Whole blocks move: every block's rows stay together and in order.
		starts := map[int64]bool{}
		for _, run := range blockRuns(got) {
			for i := 0; i < len(run); i += 10 {
				if run[i]%10 != 0 || i+10 > len(run) {
					t.Fatalf("seed %d: a block was cut: %v", seed, got)
				}
				starts[run[i]] = true
			}
		}
		if len(starts) != 10 {
			t.Fatalf("seed %d: blocks %v", seed, starts)
		}
		if !reflect.DeepEqual(order(seed), got) {
			t.Fatalf("seed %d: two runs differ", seed)
		}
		moved = moved || !reflect.DeepEqual(got, seq(0, 100))
	}
	if !moved {
		t.Fatal("three seeds left 10 blocks in order")
	}
	d := Range(30, Parallelism(3)).Map(withName).RandomizeBlockOrder(5).Filter(isEven)
	if ex := d.Explain(); !strings.Contains(ex, "ReadRange->Map(test.withName) -> RandomizeBlockOrder -> Filter(test.even)") || !strings.Contains(ex, "RandomizeBlockOrder[seed=5]") {
		t.Errorf("plan: %s", ex)
	}
	got := ids(t, takeAll(t, ctx, d))
	slices.Sort(got)
	var evens []int64
	for i := int64(0); i < 30; i += 2 {
		evens = append(evens, i)
	}
	if !reflect.DeepEqual(got, evens) {
		t.Fatalf("after a filter: %v", got)
	}
	if rows := takeAll(t, ctx, Range(0).RandomizeBlockOrder(1)); len(rows) != 0 {
		t.Fatalf("empty: %v", rows)
	}
	if got := ids(t, takeAll(t, ctx, Range(7, Parallelism(1)).RandomizeBlockOrder(1))); !reflect.DeepEqual(got, seq(0, 7)) {
		t.Fatalf("one block: %v", got)
	}
	// Limit after it, and a null block in it.
	if rows, err := Range(100, Parallelism(4)).Map(nullOpt).RandomizeBlockOrder(2).Take(ctx, 30); err != nil || len(rows) != 30 {
		t.Fatalf("Limit: %d rows, %v", len(rows), err)
	}
	checkTypes := Range(100, Parallelism(4)).Map(nullOpt).RandomizeBlockOrder(9)
	for b, err := range checkTypes.IterBatches(ctx, BatchSize(10)) {
		if err != nil {
			t.Fatal(err)
		}
		if ft := fieldType(b.Schema(), "opt"); ft != "float64" {
			t.Fatalf("batch type %s", ft)
		}
	}
}

func TestZip(t *testing.T) {
	ctx := timeout(t)
	zipPlain := func(a, b []Row, rename map[string]string) []Row {
		out := make([]Row, len(a))
		for i := range a {
			r := Row{}
			for k, v := range a[i] {
				r[k] = v
			}
			for k, v := range b[i] {
				if nk, ok := rename[k]; ok {
					k = nk
				}
				r[k] = v
			}
			out[i] = r
		}
		return out
	}
	cases := []struct {
		name   string
		a, b   *Dataset
		rename map[string]string
	}{
		{"different blocks", Range(30, Parallelism(3)).Map(withName), Range(30, Parallelism(4)).Map(plus100), map[string]string{"id": "id_1"}},
		{"many small blocks", Range(50, Parallelism(25)).Map(withName), Range(50, Parallelism(3)).Map(withX), map[string]string{"id": "id_1"}},
		{"one block", Range(9, Parallelism(1)).Map(withX), Range(9, Parallelism(2)).Map(withX), map[string]string{"id": "id_1", "x": "x_2", "x_1": "x_1_1"}},
		{"filtered (counts from the run)", Range(40, Parallelism(4)).Filter(isEven), Range(20, Parallelism(3)).Map(withName), map[string]string{"id": "id_1"}},
		{"nulls", Range(100, Parallelism(4)).Map(nullOpt), Range(100, Parallelism(5)).Map(withName), map[string]string{"id": "id_1"}},
		{"empty", Range(0), Range(0), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := zipPlain(takeAll(t, ctx, c.a), takeAll(t, ctx, c.b), c.rename)
			d := c.a.Zip(c.b)
			got := takeAll(t, ctx, d)
			if len(got) != len(want) || len(want) > 0 && !reflect.DeepEqual(got, want) {
				t.Fatalf("rows:\n got %v\nwant %v", got, want)
			}
		})
	}
	// Column order: the left's, then the right's renamed.
	s, err := Range(3).Map(withX).Zip(Range(3).Map(withX)).Schema(ctx)
	if err != nil || strings.Join(columnNames(s), ",") != "id,x,x_1,id_1,x_2,x_1_1" {
		t.Fatalf("columns: %v %v", s, err)
	}
	// Different counts: known from the plans, at once; else when it runs.
	if _, err := Range(3).Zip(Range(4)).TakeAll(ctx); err == nil || !strings.Contains(err.Error(), "different numbers of rows: 3 and 4") {
		t.Fatalf("known counts: %v", err)
	}
	for _, c := range [][2]*Dataset{
		{Range(30, Parallelism(3)).Filter(isEven), Range(20, Parallelism(2))},
		{Range(10, Parallelism(3)), Range(30, Parallelism(2)).Filter(isEven)},
	} {
		_, err := c[0].Zip(c[1]).TakeAll(ctx)
		if err == nil || !strings.Contains(err.Error(), "Zip: the datasets have different numbers of rows") {
			t.Fatalf("counts at run time: %v", err)
		}
	}
	d := Range(10, Parallelism(2)).Zip(Range(10, Parallelism(3)).Map(plus100))
	if ex := d.Explain(); !strings.Contains(ex, "Zip(ReadRange, ReadRange->Map(test.plus100))") {
		t.Errorf("plan: %s", ex)
	}
	if _, err := d.TakeAll(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.Stats(), "Zip: 2 tasks executed, 2 blocks produced") {
		t.Errorf("stats:\n%s", d.Stats())
	}
	if n, err := d.Count(ctx); err != nil || n != 10 {
		t.Fatalf("Count: %d %v", n, err)
	}
}

// TestZipLimit: a Limit (Take, Show) after a Zip stops both inputs early; their partial
// row counts are not a count mismatch.
func TestZipLimit(t *testing.T) {
	ctx := timeout(t)
	cases := []struct {
		name string
		d    *Dataset
	}{
		{"plain", Range(100, Parallelism(4)).Zip(Range(100, Parallelism(4)).Map(plus100))},
		{"sorted left", Range(100, Parallelism(4)).Sort([]string{"id"}, Descending(true)).Zip(Range(100, Parallelism(5)).Map(plus100))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			all := takeAll(t, ctx, c.d)
			rows, err := c.d.Take(ctx, 3)
			if err != nil {
				t.Fatalf("Take(3): %v", err)
			}
			if !reflect.DeepEqual(rows, all[:3]) {
				t.Fatalf("Take(3): %v, want %v", rows, all[:3])
			}
			rows, err = c.d.Limit(7).TakeAll(ctx)
			if err != nil || !reflect.DeepEqual(rows, all[:7]) {
				t.Fatalf("Limit(7): %v %v, want %v", rows, err, all[:7])
			}
		})
	}
	// A real mismatch is still an error when the Limit takes every row.
	if _, err := Range(30, Parallelism(3)).Filter(isEven).Zip(Range(20, Parallelism(2))).Limit(100).TakeAll(ctx); err == nil || !strings.Contains(err.Error(), "different numbers of rows") {
		t.Fatalf("mismatch under a Limit: %v", err)
	}
}

func TestSplitAtIndices(t *testing.T) {
	ctx := timeout(t)
	for _, src := range []struct {
		d *Dataset
		n int64
	}{{Range(100, Parallelism(7)), 100}, {Range(100, Parallelism(1)), 100}, {Range(60, Parallelism(30)).Map(nullOpt), 60}, {Range(0), 0}} {
		all := takeAll(t, ctx, src.d)
		for _, idx := range [][]int{{0, 10, 10, 55, 200}, {50}, {}, {1, 2, 3}} {
			parts, err := src.d.SplitAtIndices(ctx, idx)
			if err != nil {
				t.Fatal(err)
			}
			if len(parts) != len(idx)+1 {
				t.Fatalf("%d parts for %v", len(parts), idx)
			}
			prev := 0
			for i, p := range parts {
				end := int(src.n)
				if i < len(idx) {
					end = min(idx[i], end)
				}
				lo := min(prev, int(src.n))
				want := all[lo:max(end, lo)]
				got := takeAll(t, ctx, p)
				if len(got) != len(want) || len(want) > 0 && !reflect.DeepEqual(got, want) {
					t.Fatalf("indices %v part %d: %v, want %v", idx, i, got, want)
				}
				if i < len(idx) {
					prev = idx[i]
				}
			}
		}
	}
	if _, err := Range(10).SplitAtIndices(ctx, []int{5, 3}); err == nil || !strings.Contains(err.Error(), "sorted") {
		t.Fatalf("unsorted: %v", err)
	}
	if _, err := Range(10).SplitAtIndices(ctx, []int{-1}); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Fatalf("negative: %v", err)
	}
}

func TestTrainTestSplit(t *testing.T) {
	ctx := timeout(t)
	for _, c := range []struct {
		d *Dataset
		n int
		f float64
	}{{Range(10, Parallelism(3)), 10, 0.25}, {Range(100, Parallelism(30)), 100, 0.3}, {Range(1), 1, 0.5}, {Range(0), 0, 0.2}} {
		train, test, err := c.d.TrainTestSplit(ctx, c.f)
		if err != nil {
			t.Fatal(err)
		}
		cut := int(float64(c.n) * (1 - c.f))
		if got := ids(t, takeAll(t, ctx, train)); len(got) != cut || cut > 0 && !reflect.DeepEqual(got, seq(0, int64(cut))) {
			t.Fatalf("train of %d at %v: %v", c.n, c.f, got)
		}
		if got := ids(t, takeAll(t, ctx, test)); len(got) != c.n-cut || c.n > cut && !reflect.DeepEqual(got, seq(int64(cut), int64(c.n))) {
			t.Fatalf("test of %d at %v: %v", c.n, c.f, got)
		}
	}
	for _, f := range []float64{0, 1, -0.5, math.NaN()} {
		if _, _, err := Range(10).TrainTestSplit(ctx, f); err == nil {
			t.Fatalf("fraction %v: no error", f)
		}
	}
}

func TestTakeBatch(t *testing.T) {
	ctx := timeout(t)
	for _, c := range []struct {
		d    *Dataset
		n    int
		want []int64
	}{{Range(100, Parallelism(4)), 30, seq(0, 30)}, {Range(100, Parallelism(50)), 77, seq(0, 77)}, {Range(10, Parallelism(3)), 50, seq(0, 10)}, {Range(5, Parallelism(1)), 5, seq(0, 5)}} {
		b, err := c.d.TakeBatch(ctx, c.n)
		if err != nil {
			t.Fatal(err)
		}
		if got := b.Column(0).(*array.Int64).Int64Values(); !reflect.DeepEqual(got, c.want) {
			t.Fatalf("TakeBatch(%d): %v", c.n, got)
		}
		b.Release()
	}
	if _, err := Range(0).TakeBatch(ctx, 5); !errors.Is(err, ErrEmpty) {
		t.Fatalf("empty: %v", err)
	}
	if _, err := Range(5).TakeBatch(ctx, 0); err == nil {
		t.Fatal("n = 0: no error")
	}
	// Across the null block: one record, opt typed.
	b, err := Range(100, Parallelism(4)).Map(nullOpt).TakeBatch(ctx, 50)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	if ft := fieldType(b.Schema(), "opt"); ft != "float64" || b.NumRows() != 50 {
		t.Fatalf("%d rows, opt %s", b.NumRows(), ft)
	}
	if got := rowsOf(b); !reflect.DeepEqual(got, wantOptRows(50)) {
		t.Fatalf("rows: %v", got)
	}
}

func TestLocalShuffleBuffer(t *testing.T) {
	ctx := timeout(t)
	const n, size, buf = 200, 16, 50
	d := Range(n, Parallelism(5)) // blocks of 40
	run := func(opts ...Option) ([]int64, []int64) {
		var got, sizes []int64
		for b, err := range d.IterBatches(ctx, append([]Option{BatchSize(size), LocalShuffleBuffer(buf)}, opts...)...) {
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, b.NumRows())
			got = append(got, b.Column(0).(*array.Int64).Int64Values()...)
		}
		return got, sizes
	}
	got, sizes := run(LocalShuffleSeed(3))
	sorted := slices.Clone(got)
	slices.Sort(sorted)
	if !reflect.DeepEqual(sorted, seq(0, n)) {
		t.Fatalf("not a permutation: %v", got)
	}
	if slices.Equal(got, seq(0, n)) {
		t.Fatal("not shuffled")
	}
	for i, s := range sizes {
		if i < len(sizes)-1 && s != size || i == len(sizes)-1 && s != n%size {
			t.Fatalf("batch sizes %v", sizes)
		}
	}
	// A row comes out no earlier than the buffer lets it: at output position p, the rows
	// read are at most p + buffer + batch + one block.
	for p, id := range got {
		if id > int64(p+buf+size+40) {
			t.Fatalf("row %d at position %d: further ahead than the buffer holds", id, p)
		}
	}
	// Deterministic with a seed, however the blocks are fetched.
	again, _ := run(LocalShuffleSeed(3), Prefetch(1))
	third, _ := run(LocalShuffleSeed(3), Prefetch(5))
	if !reflect.DeepEqual(again, got) || !reflect.DeepEqual(third, got) {
		t.Fatalf("same seed, different orders:\n%v\n%v\n%v", got, again, third)
	}
	// IterRows, nulls, an empty dataset, a buffer larger than the data.
	var rows []Row
	for r, err := range Range(100, Parallelism(4)).Map(nullOpt).IterRows(ctx, LocalShuffleBuffer(1000), LocalShuffleSeed(1)) {
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	if !reflect.DeepEqual(sortByID(rows), wantOptRows(100)) {
		t.Fatalf("rows with nulls: %v", rows)
	}
	for b, err := range Range(0).IterBatches(ctx, LocalShuffleBuffer(10)) {
		t.Fatalf("empty dataset gave %v, %v", b, err)
	}
}

func TestReadText(t *testing.T) {
	ctx := timeout(t)
	dir := t.TempDir()
	files := map[string]string{
		"a.txt":     "first line\nsecond line\n\n  \nthird\r\nlast without newline",
		"b.txt":     "only\n",
		"c.txt":     "",
		"sub/d.log": "deep\n",
	}
	var want []Row
	for _, name := range []string{"a.txt", "b.txt", "c.txt", "sub/d.log"} { // the order Expand gives
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(files[name]), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(files[name], "\n") {
			line = strings.TrimSuffix(line, "\r")
			if strings.TrimSpace(line) != "" {
				want = append(want, Row{"text": line, "path": p})
			}
		}
	}
	got := takeAll(t, ctx, ReadText([]string{dir}, IncludePath()))
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rows:\n got %v\nwant %v", got, want)
	}
	n, err := ReadText([]string{filepath.Join(dir, "*.txt")}).Count(ctx)
	if err != nil || n != 5 {
		t.Fatalf("Count: %d %v", n, err)
	}
	if rows := takeAll(t, ctx, ReadText([]string{filepath.Join(dir, "c.txt")})); len(rows) != 0 {
		t.Fatalf("empty file: %v", rows)
	}
	if ex := ReadText([]string{dir}).Filter(isEven).Explain(); !strings.Contains(ex, "ReadText->Filter") {
		t.Errorf("plan: %s", ex)
	}
}

func TestAggregates(t *testing.T) {
	ctx := timeout(t)
	// The plain computation over optOf (nulls ignored).
	plain := func(n int64) (vals []float64) {
		for i := int64(0); i < n; i++ {
			if v, ok := optOf(i).(float64); ok {
				vals = append(vals, v)
			}
		}
		return vals
	}
	stats := func(vals []float64, ddof int) (sum, mean, std float64) {
		for _, v := range vals {
			sum += v
		}
		mean = sum / float64(len(vals))
		var ss float64
		for _, v := range vals {
			ss += (v - mean) * (v - mean)
		}
		return sum, mean, math.Sqrt(ss / float64(len(vals)-ddof))
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
	for _, d := range []*Dataset{Range(100, Parallelism(4)).Map(nullOpt), Range(100, Parallelism(50)).Map(nullOpt), Range(100, Parallelism(1)).Map(nullOpt)} {
		vals := plain(100)
		sum, mean, std1 := stats(vals, 1)
		_, _, std0 := stats(vals, 0)
		if got, err := d.Sum(ctx, "opt"); err != nil || !near(got.(float64), sum) {
			t.Fatalf("Sum: %v %v, want %v", got, err, sum)
		}
		if got, err := d.Min(ctx, "opt"); err != nil || got != slices.Min(vals) {
			t.Fatalf("Min: %v %v", got, err)
		}
		if got, err := d.Max(ctx, "opt"); err != nil || got != slices.Max(vals) {
			t.Fatalf("Max: %v %v", got, err)
		}
		if got, err := d.Mean(ctx, "opt"); err != nil || !near(got, mean) {
			t.Fatalf("Mean: %v %v, want %v", got, err, mean)
		}
		if got, err := d.Std(ctx, "opt", 1); err != nil || !near(got, std1) {
			t.Fatalf("Std(1): %v %v, want %v", got, err, std1)
		}
		if got, err := d.Std(ctx, "opt", 0); err != nil || !near(got, std0) {
			t.Fatalf("Std(0): %v %v, want %v", got, err, std0)
		}
		uniq, err := d.Unique(ctx, "opt")
		if err != nil {
			t.Fatal(err)
		}
		var wantU []any
		for _, v := range vals {
			wantU = append(wantU, v)
		}
		if !reflect.DeepEqual(uniq, wantU) {
			t.Fatalf("Unique: %v", uniq)
		}
		// Integer and string columns.
		if got, err := d.Sum(ctx, "id"); err != nil || got != int64(99*100/2) {
			t.Fatalf("Sum(id): %v %v", got, err)
		}
		if got, err := d.Max(ctx, "id"); err != nil || got != int64(99) {
			t.Fatalf("Max(id): %v %v", got, err)
		}
	}
	named := Range(30, Parallelism(4)).Map(withName)
	if got, err := named.Min(ctx, "name"); err != nil || got != "n0" {
		t.Fatalf("Min(name): %v %v", got, err)
	}
	if got, err := named.Max(ctx, "name"); err != nil || got != "n9" {
		t.Fatalf("Max(name): %v %v", got, err)
	}
	keys, err := Range(30, Parallelism(7)).Map(modKey).Unique(ctx, "k")
	if err != nil || !reflect.DeepEqual(keys, []any{"k0", "k1", "k2"}) {
		t.Fatalf("Unique(k): %v %v", keys, err)
	}
	// NaN is one value (it equals nothing, itself included: each NaN row gave one).
	u, err := Range(30, Parallelism(4)).Map(nanEvery3).Unique(ctx, "v")
	if err != nil || len(u) != 3 || !math.IsNaN(u[0].(float64)) || u[1] != 1.0 || u[2] != 0.0 {
		t.Fatalf("Unique with NaNs: %v %v", u, err)
	}
	if st := Range(30, Parallelism(7)).Map(modKey).Explain(); !strings.Contains(st, "ReadRange->Map(test.modKey)") {
		t.Errorf("plan: %s", st)
	}
	// Empty datasets and only nulls: ErrEmpty (Ray returns None); Unique gives nothing.
	for _, d := range []*Dataset{Range(0), Range(40, Parallelism(4)).Map(allNilOpt), Range(10).Filter(isAbove30).Map(nullOpt)} {
		for name, f := range map[string]func() error{
			"Sum":  func() error { _, err := d.Sum(ctx, "opt"); return err },
			"Min":  func() error { _, err := d.Min(ctx, "opt"); return err },
			"Max":  func() error { _, err := d.Max(ctx, "opt"); return err },
			"Mean": func() error { _, err := d.Mean(ctx, "opt"); return err },
			"Std":  func() error { _, err := d.Std(ctx, "opt", 1); return err },
		} {
			if err := f(); !errors.Is(err, ErrEmpty) {
				t.Fatalf("%s of no values: %v", name, err)
			}
		}
		if u, err := d.Unique(ctx, "opt"); err != nil || len(u) != 0 {
			t.Fatalf("Unique of no values: %v %v", u, err)
		}
	}
	// One value: the sample standard deviation is NaN, the population's 0.
	single := Range(1).Map(withName)
	if s, err := single.Std(ctx, "score", 1); err != nil || !math.IsNaN(s) {
		t.Fatalf("Std of one value, ddof 1: %v %v", s, err)
	}
	if s, err := single.Std(ctx, "score", 0); err != nil || s != 0 {
		t.Fatalf("Std of one value, ddof 0: %v %v", s, err)
	}
	if _, err := named.Sum(ctx, "nope"); err == nil || !strings.Contains(err.Error(), `no column "nope"`) {
		t.Fatalf("missing column: %v", err)
	}
	if _, err := named.Sum(ctx, "name"); err == nil || !strings.Contains(err.Error(), "not a number") {
		t.Fatalf("Sum of strings: %v", err)
	}
	if !strings.Contains(named.Stats(), "Aggregate(sum(name))") {
		t.Errorf("stats of the last aggregate:\n%s", named.Stats())
	}
}
