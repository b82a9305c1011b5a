package data

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
)

// plainGroups is groupByHash done with a Go map over the rows' keys as text (keyOf).
func plainGroups(n int, keyOf func(int) string) (groupOf, reps []int32) {
	seen := map[string]int32{}
	groupOf = make([]int32, n)
	for i := 0; i < n; i++ {
		k := keyOf(i)
		g, ok := seen[k]
		if !ok {
			g = int32(len(reps))
			seen[k] = g
			reps = append(reps, int32(i))
		}
		groupOf[i] = g
	}
	return groupOf, reps
}

func checkGroups(t *testing.T, what string, cols []arrow.Array, hashes []uint64, keyOf func(int) string) {
	t.Helper()
	groupOf, reps, err := groupByHash(cols, hashes)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	wantOf, wantReps := plainGroups(len(hashes), keyOf)
	if !slices.Equal(reps, wantReps) {
		t.Fatalf("%s: %d groups, want %d (first reps %v, want %v)", what, len(reps), len(wantReps), reps[:min(8, len(reps))], wantReps[:min(8, len(wantReps))])
	}
	if !slices.Equal(groupOf, wantOf) {
		for i := range groupOf {
			if groupOf[i] != wantOf[i] {
				t.Fatalf("%s: row %d (key %s) in group %d, want %d", what, i, keyOf(i), groupOf[i], wantOf[i])
			}
		}
	}
}

// TestGroupTable: the open-addressing table of groupByHash against a Go map: many keys
// (it grows several times, from estimates), keys whose hashes all collide (then the keys
// are compared), hashes alike in their low bits (a reduce's rows: one partition), null
// keys of an integer column (which is then not grouped by hash alone), several key
// columns, and no rows.
func TestGroupTable(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	int64s := func(vals []int64, valid []bool) arrow.Array {
		b := array.NewInt64Builder(mem)
		defer b.Release()
		b.AppendValues(vals, valid)
		return b.NewArray()
	}
	strs := func(vals []string) arrow.Array {
		b := array.NewStringBuilder(mem)
		defer b.Release()
		b.AppendValues(vals, nil)
		return b.NewArray()
	}

	for _, tc := range []struct{ rows, keys int }{{0, 1}, {1, 1}, {1000, 3}, {200_000, 150_000}, {300_000, 1 << 40}} {
		vals := make([]int64, tc.rows)
		for i := range vals {
			vals[i] = r.Int64N(int64(tc.keys)) - int64(tc.keys)/2
		}
		a := int64s(vals, nil)
		h, err := hashRows([]arrow.Array{a}, a.Len())
		if err != nil {
			t.Fatal(err)
		}
		checkGroups(t, fmt.Sprintf("%d rows of %d int64 keys", tc.rows, tc.keys), []arrow.Array{a}, h, func(i int) string { return fmt.Sprint(vals[i]) })
		a.Release()
	}

	// Every hash alike: the keys tell the groups apart.
	words := make([]string, 5000)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", r.IntN(700))
	}
	s := strs(words)
	defer s.Release()
	same := make([]uint64, len(words))
	for i := range same {
		same[i] = 0xfeedface
	}
	checkGroups(t, "colliding hashes", []arrow.Array{s}, same, func(i int) string { return words[i] })

	// Hashes that the size estimate takes for a few (all in a few registers): the table
	// starts small and grows by doubling many times.
	many := make([]string, 40_000)
	fooled := make([]uint64, len(many))
	for i := range many {
		k := r.IntN(20_000)
		many[i] = fmt.Sprint(k)
		fooled[i] = uint64(k) << 40
	}
	if e := estimateGroups(fooled); e > 1000 {
		t.Fatalf("the estimate was not fooled: %d", e)
	}
	ms := strs(many)
	defer ms.Release()
	checkGroups(t, "growth from a low estimate", []arrow.Array{ms}, fooled, func(i int) string { return many[i] })

	// Hashes of one partition of 32: all alike in their five low bits.
	keys := make([]int64, 100_000)
	var part []int64
	for i := range keys {
		keys[i] = r.Int64N(60_000)
	}
	a := int64s(keys, nil)
	defer a.Release()
	h, _ := hashRows([]arrow.Array{a}, a.Len())
	var ph []uint64
	for i, x := range h {
		if x%32 == 7 {
			part = append(part, keys[i])
			ph = append(ph, x)
		}
	}
	pa := int64s(part, nil)
	defer pa.Release()
	checkGroups(t, "one partition's keys", []arrow.Array{pa}, ph, func(i int) string { return fmt.Sprint(part[i]) })

	// Grouped partition by partition (a map task's layout): the same groups, numbered
	// partition after partition, each partition's in the order of their first rows.
	for _, parts := range []int{1, 7, 32} {
		groupOf, reps, counts, err := groupByPartition([]arrow.Array{a}, h, parts)
		if err != nil {
			t.Fatal(err)
		}
		var want []int32 // the first rows, partition by partition
		for p := 0; p < parts; p++ {
			seen := map[int64]bool{}
			for i, k := range keys {
				if int(h[i]%uint64(parts)) == p && !seen[k] {
					seen[k] = true
					want = append(want, int32(i))
				}
			}
			if counts[p] != int64(len(seen)) {
				t.Fatalf("%d partitions: partition %d has %d groups, want %d", parts, p, counts[p], len(seen))
			}
		}
		if !slices.Equal(reps, want) {
			t.Fatalf("%d partitions: %d groups, want %d, or in another order", parts, len(reps), len(want))
		}
		for i, g := range groupOf {
			if keys[reps[g]] != keys[i] {
				t.Fatalf("%d partitions: row %d (key %d) in the group of key %d", parts, i, keys[i], keys[reps[g]])
			}
		}
	}

	// Null keys: one group of their own, whatever value the null slot holds.
	nv := make([]int64, 20_000)
	valid := make([]bool, len(nv))
	for i := range nv {
		nv[i] = r.Int64N(500)
		valid[i] = r.IntN(10) != 0
	}
	na := int64s(nv, valid)
	defer na.Release()
	nh, _ := hashRows([]arrow.Array{na}, na.Len())
	keyOf := func(i int) string {
		if !valid[i] {
			return "null"
		}
		return fmt.Sprint(nv[i])
	}
	checkGroups(t, "null keys", []arrow.Array{na}, nh, keyOf)

	// Two key columns.
	checkGroups(t, "two columns", []arrow.Array{na, s}, mustHash(t, na, s), func(i int) string { return keyOf(i) + "/" + words[i%len(words)] })
}

func mustHash(t *testing.T, a, s arrow.Array) []uint64 {
	t.Helper()
	n := min(a.Len(), s.Len())
	as, ss := array.NewSlice(a, 0, int64(n)), array.NewSlice(s, 0, int64(n))
	defer as.Release()
	defer ss.Release()
	h, err := hashRows([]arrow.Array{as, ss}, n)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestEstimateGroups: the table's size estimate (a HyperLogLog over the row hashes) is
// within 10% of the groups, from a few to one per row, and never more than the rows.
func TestEstimateGroups(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, groups := range []int{1, 10, 1000, 31_000, 390_000, 600_000} {
		const n = 600_000
		vals := make([]int64, n)
		for i := range vals {
			if i < groups {
				vals[i] = int64(i) // every group at least once
			} else {
				vals[i] = r.Int64N(int64(groups))
			}
		}
		b := array.NewInt64Builder(mem)
		b.AppendValues(vals, nil)
		a := b.NewArray()
		b.Release()
		h, _ := hashRows([]arrow.Array{a}, n)
		a.Release()
		e := estimateGroups(h)
		if e > n || float64(e) < float64(groups)*0.9 || float64(e) > float64(groups)*1.1*1.1+16 {
			t.Errorf("%d groups in %d rows: estimated %d", groups, n, e)
		}
	}
}

// TestGroupBySharedStates: aggregations that share a partial state (Sum and Mean of an
// integer column: its sum and count of values; Mean and Std of a float column) give what
// each gives alone, over one block and over many (merges included).
func TestGroupBySharedStates(t *testing.T) {
	const n = 1000
	items := xRows(n)
	want := refGroups(items, []string{"i"})
	ctx := timeout(t)
	for _, par := range []int{1, 10, 80} {
		rows, err := FromItems(items, Parallelism(par)).GroupBy("i").Aggregate(Mean("n"), Sum("n"), Std("v", 0), Mean("v")).TakeAll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(want) {
			t.Fatalf("blocks=%d: %d groups, want %d", par, len(rows), len(want))
		}
		for _, r := range rows {
			w := want[refKey(r, []string{"i"})]
			meanN := float64(w["sum(n)"].(int64)) / float64(w["count()"].(int64))
			if !sameValue(r["sum(n)"], w["sum(n)"]) || !sameValue(r["mean(n)"], meanN) ||
				!sameValue(r["mean(v)"], w["mean(v)"]) || !sameValue(r["std(v)"], w["std0"]) {
				t.Fatalf("blocks=%d: group %v, want sum(n) %v mean(n) %v mean(v) %v std(v) %v", par, r, w["sum(n)"], meanN, w["mean(v)"], w["std0"])
			}
		}
	}
}
