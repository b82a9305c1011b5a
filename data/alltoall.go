package data

import (
	"fmt"
	"slices"
)

// kAllToAll is the logical kind of every all-to-all operator (lnode.X says which).
const kAllToAll = "AllToAll"

func (d *Dataset) exchange(x *exchange, err error) *Dataset {
	return d.derive(&lnode{Kind: kAllToAll, X: x, Inputs: []*lnode{d.Plan}}, err)
}

// RandomShuffle shuffles the rows of the dataset (Ray's random_shuffle): a map-reduce over
// the object store in which map tasks send each row of their block to a random output
// partition and reduce tasks concatenate a partition's rows and permute them. The output
// has as many blocks as the input (rows spread evenly at random over them). With Seed the
// order is the same in every run of the same dataset; without it, it differs. It is a
// barrier: the first output block exists once every input block has been mapped.
func (d *Dataset) RandomShuffle(opts ...Option) *Dataset {
	o := collect(opts)
	x := &exchange{Kind: xShuffle}
	if o.seed != nil {
		x.Seed, x.Seeded = *o.seed, true
	}
	return d.exchange(x, nil)
}

// Repartition changes the number of blocks to n (Ray's repartition). Without shuffle the
// rows keep their order: output block k holds rows [k*T/n, (k+1)*T/n) of the T rows, cut
// out of and concatenated from the input blocks (it waits for every input block's row
// count). With shuffle the rows are distributed at random over the n blocks, as
// RandomShuffle (Seed applies). Either way there are exactly n blocks, some of them empty
// when the dataset has fewer than n rows (none when it has no rows).
func (d *Dataset) Repartition(n int, shuffle bool, opts ...Option) *Dataset {
	o := collect(opts)
	x := &exchange{Kind: xRepartition, N: n, Shuffle: shuffle}
	if o.seed != nil {
		x.Seed, x.Seeded = *o.seed, true
	}
	var err error
	if n <= 0 {
		err = fmt.Errorf("data: Repartition(%d): need at least one block", n)
	}
	return d.exchange(x, err)
}

// Sort sorts the rows by the key columns (Ray's sort): by keys[0], then keys[1] among
// equal keys[0], and so on; ascending unless Descending. Nulls come last, then NaN before
// them, whatever the direction. The sort is stable: rows with equal keys keep their order
// in the dataset. Keys may be numbers, strings, binary, booleans, timestamps or dates.
//
// It runs as a map-reduce: sample tasks take evenly spaced keys of every input block, the
// driver picks N-1 range boundaries from the sorted samples (N: the input's number of
// blocks), map tasks sort their block and cut it at the boundaries, and reduce tasks merge
// the sorted runs of their range; output block i holds range i. Rows of one key value stay
// in one block, so a key that holds most rows makes one large block; when it is larger than
// a node's object store, the consuming call fails with an error wrapping
// ray.ErrObjectTooLarge that says so.
func (d *Dataset) Sort(keys []string, opts ...Option) *Dataset {
	o := collect(opts)
	x := &exchange{Kind: xSort, Keys: slices.Clone(keys)}
	var err error
	switch {
	case len(keys) == 0:
		err = fmt.Errorf("data: Sort: no key columns given")
	case slices.Contains(keys, ""):
		err = fmt.Errorf("data: Sort: an empty key column name")
	case len(o.desc) == 0:
		if o.descSet {
			x.Desc = repeat(true, len(keys))
		}
	case len(o.desc) == 1:
		x.Desc = repeat(o.desc[0], len(keys))
	case len(o.desc) == len(keys):
		x.Desc = slices.Clone(o.desc)
	default:
		err = fmt.Errorf("data: Sort: Descending has %d values for %d keys (give one, or one per key)", len(o.desc), len(keys))
	}
	return d.exchange(x, err)
}

func repeat(v bool, n int) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// GroupedData is a dataset grouped by key columns (Ray's GroupedData): aggregate it
// (Aggregate, Count, Sum, Min, Max, Mean, Std) or map its groups (MapGroups).
type GroupedData struct {
	d    *Dataset
	keys []string
	err  error
}

// GroupBy groups the rows by the key columns (Ray's groupby). The groups are hash
// partitioned on the keys: map tasks send each group of their block (for aggregations,
// its partial aggregates) to the partition of its keys' hash, reduce tasks combine a
// partition's groups. Keys may be numbers, strings, binary, booleans, timestamps or dates;
// null is a key like any other. The output has a block per non-empty partition (at most
// the input's number of blocks); within a block the groups are sorted by their keys, but
// the blocks are in hash order: Sort the result for a globally ordered one.
func (d *Dataset) GroupBy(keys ...string) *GroupedData {
	g := &GroupedData{d: d, keys: slices.Clone(keys)}
	switch {
	case len(keys) == 0:
		g.err = fmt.Errorf("data: GroupBy: no key columns given")
	case slices.Contains(keys, ""):
		g.err = fmt.Errorf("data: GroupBy: an empty key column name")
	}
	return g
}

// Aggregate computes aggregations per group (Ray's GroupedData.aggregate): one row per
// group with the key columns and a column per aggregation, named as in Ray ("count()",
// "sum(x)", "mean(x)", ...). Map tasks aggregate their block partially, merge tasks
// combine partials of finished maps while later maps run, reduce tasks finish them.
func (g *GroupedData) Aggregate(aggs ...AggregateFn) *Dataset {
	x := &exchange{Kind: xAggregate, Keys: g.keys, Aggs: slices.Clone(aggs)}
	err := g.err
	if err == nil && len(aggs) == 0 {
		err = fmt.Errorf("data: GroupBy(%v).Aggregate: no aggregation given", g.keys)
	}
	seen := map[string]bool{}
	for _, a := range aggs {
		if err != nil {
			break
		}
		if e := a.validate(); e != nil {
			err = fmt.Errorf("data: GroupBy(%v).Aggregate: %w", g.keys, e)
		} else if seen[a.Name()] || slices.Contains(g.keys, a.Name()) {
			err = fmt.Errorf("data: GroupBy(%v).Aggregate: two output columns named %q", g.keys, a.Name())
		}
		seen[a.Name()] = true
	}
	return g.d.exchange(x, err)
}

// Count counts the rows of each group: column "count()".
func (g *GroupedData) Count() *Dataset { return g.Aggregate(Count()) }

func (g *GroupedData) each(name string, f func(string) AggregateFn, cols []string) *Dataset {
	if len(cols) == 0 && g.err == nil {
		return g.d.exchange(&exchange{Kind: xAggregate, Keys: g.keys}, fmt.Errorf("data: GroupBy(%v).%s: no columns given", g.keys, name))
	}
	aggs := make([]AggregateFn, len(cols))
	for i, c := range cols {
		aggs[i] = f(c)
	}
	return g.Aggregate(aggs...)
}

// Sum sums each of cols per group: columns "sum(col)" (int64 for integer columns, uint64
// for uint64 ones, float64 for floating-point ones; null for a group with no value). A non-numeric column fails the
// consuming call.
func (g *GroupedData) Sum(cols ...string) *Dataset { return g.each("Sum", Sum, cols) }

// Min takes the smallest value of each of cols per group: columns "min(col)".
func (g *GroupedData) Min(cols ...string) *Dataset { return g.each("Min", Min, cols) }

// Max takes the largest value of each of cols per group: columns "max(col)".
func (g *GroupedData) Max(cols ...string) *Dataset { return g.each("Max", Max, cols) }

// Mean is the mean of each of cols per group: columns "mean(col)", float64.
func (g *GroupedData) Mean(cols ...string) *Dataset { return g.each("Mean", Mean, cols) }

// Std is the standard deviation of col per group with ddof delta degrees of freedom:
// column "std(col)", float64 (NaN for a group of at most ddof values).
func (g *GroupedData) Std(col string, ddof int) *Dataset { return g.Aggregate(Std(col, ddof)) }

// MapGroups calls f on each group's rows, one Arrow record per group (sorted by the keys,
// the rows of a group in no particular order), and concatenates what it returns (Ray's
// map_groups). f is a BatchFunc (or a BatchClass, whose setup then runs once per reduce
// task). Map tasks hash partition the rows on the keys; each reduce task sorts its
// partition by the keys and calls f group by group.
func (g *GroupedData) MapGroups(f *BatchFn) *Dataset {
	err := g.err
	x := &exchange{Kind: xMapGroups, Keys: g.keys}
	if f == nil {
		if err == nil {
			err = fmt.Errorf("data: GroupBy(%v).MapGroups: the function is nil (make it with BatchFunc or BatchClass)", g.keys)
		}
	} else {
		x.Fn = f.name
	}
	return g.d.exchange(x, err)
}
