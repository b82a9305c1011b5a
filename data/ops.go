package data

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/ray-go/ray"
)

// ErrEmpty is returned (wrapped) by TakeBatch on an empty dataset and by the whole-dataset
// aggregates (Sum, Min, Max, Mean, Std) when there is no value to aggregate: no rows, or
// only nulls in the column (where Ray returns None).
var ErrEmpty = errors.New("data: no rows (the dataset is empty, or the column holds only nulls)")

// RenameColumns renames columns, old name to new name (Ray's rename_columns); the order of
// the columns does not change. A column the data does not have, or two columns that end up
// with one name, fail the consuming call. It fuses with the maps around it.
func (d *Dataset) RenameColumns(names map[string]string) *Dataset {
	return d.mapLike(kRename, "", false, nil, func(n *lnode) error {
		if len(names) == 0 {
			return fmt.Errorf("data: RenameColumns: no columns given")
		}
		olds := make([]string, 0, len(names))
		for o, nw := range names {
			if o == "" || nw == "" {
				return fmt.Errorf("data: RenameColumns: empty column name (%q -> %q)", o, nw)
			}
			olds = append(olds, o)
		}
		slices.Sort(olds)
		for _, o := range olds {
			n.Cols = append(n.Cols, o, names[o])
		}
		return nil
	})
}

// renameColumns renames rec's columns by pairs (old, new, old, new...).
func renameColumns(rec arrow.Record, pairs []string) (arrow.Record, error) {
	schema := rec.Schema()
	fields := slices.Clone(schema.Fields())
	for i := 0; i+1 < len(pairs); i += 2 {
		idx := schema.FieldIndices(pairs[i])
		if len(idx) == 0 {
			return nil, fmt.Errorf("data: RenameColumns: no column %q; the columns are: %s", pairs[i], strings.Join(columnNames(schema), ", "))
		}
		for _, j := range idx {
			fields[j].Name = pairs[i+1]
		}
	}
	seen := map[string]bool{}
	for _, f := range fields {
		if seen[f.Name] {
			return nil, fmt.Errorf("data: RenameColumns: two columns would be named %q (the columns are: %s)", f.Name, strings.Join(columnNames(schema), ", "))
		}
		seen[f.Name] = true
	}
	md := schema.Metadata()
	return array.NewRecord(arrow.NewSchema(fields, &md), rec.Columns(), rec.NumRows()), nil
}

// RandomizeBlockOrder shuffles the order of the blocks (Ray's randomize_block_order): rows
// stay in their blocks and in their order within a block. The same seed gives the same order
// of the same blocks. It is a barrier, as in Ray: every block of the input exists (held in
// the object store, spilled if need be) before the first one goes on.
func (d *Dataset) RandomizeBlockOrder(seed int64) *Dataset {
	return d.derive(&lnode{Kind: kRandBlocks, N: seed, Inputs: []*lnode{d.Plan}}, nil)
}

// Zip pairs the rows of d and other one to one (Ray's zip): row i has the columns of d's row
// i, then those of other's row i. A column name of other that d already has gets the suffix
// "_1" (or "_2", ... until it is unique), as in Ray. Both must have the same number of rows:
// when both counts are known from the plans Zip fails at once, otherwise the consuming call
// does. The output has d's blocks: a task per block of d takes the rows of other that pair
// with it (sliced from one or more of other's blocks), so both sides stream.
func (d *Dataset) Zip(other *Dataset) *Dataset {
	n := &lnode{Kind: kZip, Inputs: []*lnode{d.Plan}}
	var err error
	if e := other.planErr(); e != nil {
		err = fmt.Errorf("data: Zip: the other dataset: %w", e)
	} else {
		n.Inputs = append(n.Inputs, other.Plan)
		if d.Err == "" {
			a, okA := knownCount(d.Plan)
			b, okB := knownCount(other.Plan)
			if okA && okB && a != b {
				err = zipCountErr(a, b)
			}
		}
	}
	return d.derive(n, err)
}

func zipCountErr(a, b int64) error {
	return fmt.Errorf("data: Zip: the datasets have different numbers of rows: %d and %d (Zip pairs rows one to one)", a, b)
}

// zipWith returns left with the columns of the right rows in pieces appended.
func zipWith(ctx context.Context, left arrow.Record, pieces []zipPiece) (arrow.Record, error) {
	refs := make([]ray.ObjectRef[arrow.Record], len(pieces))
	for i, p := range pieces {
		refs[i] = p.Ref
	}
	recs, err := ray.GetAll(ctx, refs)
	if err != nil {
		return nil, fmt.Errorf("fetching the other dataset's blocks: %w", err)
	}
	slices_ := make([]arrow.Record, len(recs))
	for i, r := range recs {
		slices_[i] = r.NewSlice(pieces[i].Off, pieces[i].Off+pieces[i].N)
		r.Release()
	}
	right, err := concatRecords(slices_)
	for _, s := range slices_ {
		s.Release()
	}
	if err != nil {
		return nil, err
	}
	defer right.Release()
	if right.NumRows() != left.NumRows() {
		return nil, fmt.Errorf("internal error: %d rows to zip with a block of %d", right.NumRows(), left.NumRows())
	}
	fields := slices.Clone(left.Schema().Fields())
	cols := slices.Clone(left.Columns())
	names := map[string]bool{}
	for _, f := range fields {
		names[f.Name] = true
	}
	for i, f := range right.Schema().Fields() {
		name := f.Name
		for k := 1; names[name]; k++ {
			name = fmt.Sprintf("%s_%d", f.Name, k)
		}
		names[name] = true
		f.Name = name
		fields = append(fields, f)
		cols = append(cols, right.Column(i))
	}
	return array.NewRecord(arrow.NewSchema(fields, nil), cols, left.NumRows()), nil
}

// TakeBatch returns the first n rows as one Arrow record (Ray's take_batch; the dataset runs
// with Limit(n)): fewer if the dataset has fewer, an error wrapping ErrEmpty if it has none.
// The caller releases the record.
func (d *Dataset) TakeBatch(ctx context.Context, n int, opts ...Option) (arrow.Record, error) {
	if n <= 0 {
		return nil, fmt.Errorf("data: TakeBatch(%d): need at least one row", n)
	}
	l := d.Limit(n)
	defer func() { d.stats.Store(l.stats.Load()) }()
	o := append(slices.Clone(opts), BatchSize(n))
	for b, err := range l.IterBatches(ctx, o...) {
		if err != nil {
			return nil, err
		}
		b.Retain()
		return b, nil
	}
	return nil, fmt.Errorf("data: TakeBatch: %w", ErrEmpty)
}

// SplitAtIndices materializes the dataset and splits it at the given row indices (Ray's
// split_at_indices): with indices i1 <= i2 <= ..., the parts are rows [0, i1), [i1, i2), ...,
// [ik, end), len(indices)+1 materialized datasets in order. Indices past the end give empty
// parts; negative or decreasing indices are an error. Blocks are cut by tasks where an index
// falls inside one.
func (d *Dataset) SplitAtIndices(ctx context.Context, indices []int, opts ...Option) ([]*Dataset, error) {
	for i, x := range indices {
		if x < 0 {
			return nil, fmt.Errorf("data: SplitAtIndices: index %d is negative", x)
		}
		if i > 0 && x < indices[i-1] {
			return nil, fmt.Errorf("data: SplitAtIndices: indices must be sorted, %d comes after %d", x, indices[i-1])
		}
	}
	blocks, err := d.materialize(ctx, collect(opts))
	if err != nil {
		return nil, err
	}
	parts := make([][]blockRef, len(indices)+1)
	var start int64 // the first row of the current block
	part := 0
	for _, b := range blocks {
		var off int64
		for off < b.Rows {
			end := b.Rows // this part's end within the block
			if part < len(indices) {
				end = min(end, max(int64(indices[part])-start, off))
			}
			if end == off { // the part ends here
				part++
				continue
			}
			if off == 0 && end == b.Rows {
				parts[part] = append(parts[part], b)
			} else {
				parts[part] = append(parts[part], sliceBlock(ctx, b, off, end-off))
			}
			off = end
		}
		start += b.Rows
	}
	out := make([]*Dataset, len(parts))
	for i := range out {
		out[i] = newDataset(&lnode{Kind: kInput, Blocks: parts[i]}, nil)
	}
	return out, nil
}

// TrainTestSplit materializes the dataset and splits it into a train and a test part (Ray's
// train_test_split): the test part is the last testFraction of the rows, the train part the
// first int(count*(1-testFraction)) rows. testFraction must be in (0, 1). With Shuffle(seed)
// the rows are shuffled first (RandomShuffle with Seed(seed)), so that both parts are
// random samples.
func (d *Dataset) TrainTestSplit(ctx context.Context, testFraction float64, opts ...Option) (train, test *Dataset, err error) {
	if !(testFraction > 0 && testFraction < 1) {
		return nil, nil, fmt.Errorf("data: TrainTestSplit(%v): the test fraction must be in (0, 1)", testFraction)
	}
	src := d
	if o := collect(opts); o.shuffle != nil {
		src = d.RandomShuffle(Seed(*o.shuffle))
	}
	m, err := src.Materialize(ctx, opts...)
	if err != nil {
		return nil, nil, err
	}
	n, err := m.Count(ctx)
	if err != nil {
		return nil, nil, err
	}
	parts, err := m.SplitAtIndices(ctx, []int{int(float64(n) * (1 - testFraction))})
	if err != nil {
		return nil, nil, err
	}
	d.stats.Store(m.stats.Load())
	return parts[0], parts[1], nil
}
