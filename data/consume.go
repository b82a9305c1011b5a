package data

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/ray-go/ray"
	"github.com/ray-go/ray/data/internal/formats"
)

// execute starts the streaming execution of d's plan.
func (d *Dataset) execute(ctx context.Context, o options) (*executor, error) {
	if err := d.planErr(); err != nil {
		return nil, err
	}
	e, err := newExecutor(ctx, optimize(d.Plan), o)
	if err != nil {
		return nil, err
	}
	e.start()
	return e, nil
}

// finish ends e (if it still runs) and keeps its statistics on d.
func (d *Dataset) finish(e *executor) {
	e.stop()
	d.stats.Store(e.stats)
}

// IterBatches runs the dataset and yields its rows in batches of exactly BatchSize rows
// (default 256; batches are cut across block boundaries, only the last one may be shorter),
// in dataset order (or shuffled locally with LocalShuffleBuffer). Prefetch (default 2) bounds the blocks fetched ahead: refs are resolved
// in batched ray.GetAll calls of at most that many blocks. A batch is released when the loop
// body returns: Retain it to keep it. Stopping the loop early stops the execution. An error
// ends the iteration with a nil batch and the error.
func (d *Dataset) IterBatches(ctx context.Context, opts ...Option) iter.Seq2[arrow.Record, error] {
	o := collect(opts)
	return func(yield func(arrow.Record, error) bool) {
		e, err := d.execute(ctx, o)
		if err != nil {
			yield(nil, err)
			return
		}
		defer d.finish(e)
		size := o.batchSize
		if size <= 0 {
			size = 256
		}
		prefetch := max(o.prefetch, 1)
		if o.prefetch == 0 {
			prefetch = 2
		}
		var (
			held []arrow.Record // fetched blocks not fully consumed (head at offset off)
			off  int64
			eof  bool
		)
		defer func() {
			for _, r := range held {
				r.Release()
			}
		}()
		fetch := func() error {
			// Take the next blocks the executor has (waiting for at least one), up to the
			// prefetch bound, and resolve them in one GetAll.
			var obs []outBlock
			for len(held)+len(obs) < prefetch {
				var ob outBlock
				var ok bool
				var err error
				if len(obs) == 0 {
					ob, ok, err = e.next(ctx)
				} else {
					select {
					case b, more := <-e.out:
						ob, ok = b, more
						if !more {
							err = e.err
						}
					default:
						goto get
					}
				}
				if err != nil {
					return err
				}
				if !ok {
					eof = true
					break
				}
				obs = append(obs, ob)
			}
		get:
			if len(obs) == 0 {
				return nil
			}
			refs := make([]ray.ObjectRef[arrow.Record], len(obs))
			for i, ob := range obs {
				refs[i] = ob.ref
			}
			if o.getAllHook != nil {
				o.getAllHook(len(refs))
			}
			recs, err := ray.GetAll(ctx, refs)
			if err != nil && lostErr(err) {
				// A block was lost (its node died) and could not be recreated by lineage
				// alone: run the reduces that made such blocks again (redoBlock).
				recs, err = e.fetchRedo(ctx, obs)
			}
			if err != nil {
				for _, ob := range obs {
					e.release(ob, true)
				}
				return fmt.Errorf("data: fetching blocks: %w", err)
			}
			// A block's record is built over the stored bytes (no copy), so the block is
			// released, and counted as consumed, only when the record is done with.
			for i, r := range recs {
				ob := obs[i]
				// Null columns take the type the other blocks give them (see unify.go).
				c, err := conform(r, ob.want)
				r.Release()
				if err != nil {
					for _, ob := range obs[i:] {
						e.release(ob, true)
					}
					for _, r := range recs[i+1:] {
						r.Release()
					}
					return err
				}
				held = append(held, &heldBlock{Record: c, release: func() { e.release(ob, true) }})
			}
			return nil
		}
		more := func() (bool, error) {
			if eof {
				return false, nil
			}
			return true, fetch()
		}
		if o.shuffleBuf > 0 {
			shuffleBatches(int64(size), int64(o.shuffleBuf), newShuffleRand(o.shuffleSeed), &held, more, yield)
			return
		}
		cutBatches(int64(size), &held, &off, more, yield)
	}
}

// fetchRedo reads obs one at a time; a block that reads as lost and that a reduce made is
// made again by running the reduce again (redoBlock), up to maxLostRetries times. The new
// block replaces the lost one in obs (the lost one is released).
func (e *executor) fetchRedo(ctx context.Context, obs []outBlock) ([]arrow.Record, error) {
	recs := make([]arrow.Record, 0, len(obs))
	fail := func(err error) ([]arrow.Record, error) {
		for _, r := range recs {
			r.Release()
		}
		return nil, err
	}
	for i := range obs {
		rec, err := ray.Get(ctx, obs[i].ref)
		for try := 0; err != nil && obs[i].redo != nil && lostErr(err) && try < maxLostRetries; try++ {
			ref, rerr := e.redoBlock(ctx, obs[i], err)
			if rerr != nil {
				return fail(rerr)
			}
			obs[i].ref.Release()
			obs[i].ref = ref
			rec, err = ray.Get(ctx, ref)
		}
		if err != nil {
			return fail(err)
		}
		recs = append(recs, rec)
	}
	return recs, nil
}

// heldBlock is a fetched block's record that releases the block when it is released
// (once: cutBatches releases each held record exactly once).
type heldBlock struct {
	arrow.Record
	release func()
}

func (h *heldBlock) Release() {
	h.Record.Release()
	if h.release != nil {
		h.release()
		h.release = nil
	}
}

// cutBatches yields batches of exactly size rows (the last may be shorter) from the records
// in held (the first one consumed up to *off); fetch appends more records to held and
// returns false when there are no more. Consumed records are released.
func cutBatches(size int64, held *[]arrow.Record, off *int64, fetch func() (bool, error), yield func(arrow.Record, error) bool) {
	eof := false
	for {
		var parts []arrow.Record
		var rows int64
		for rows < size {
			if len(*held) == 0 {
				if eof {
					break
				}
				more, err := fetch()
				if err != nil {
					for _, p := range parts {
						p.Release()
					}
					yield(nil, err)
					return
				}
				eof = !more
				continue
			}
			h := (*held)[0]
			take := min(size-rows, h.NumRows()-*off)
			if take > 0 {
				parts = append(parts, h.NewSlice(*off, *off+take))
				rows += take
			}
			*off += take
			if *off >= h.NumRows() {
				h.Release()
				*held, *off = (*held)[1:], 0
			}
		}
		if len(parts) == 0 {
			return
		}
		batch, err := concatRecords(parts)
		for _, p := range parts {
			p.Release()
		}
		if err != nil {
			yield(nil, err)
			return
		}
		more := yield(batch, nil)
		batch.Release()
		if !more {
			return
		}
	}
}

// IterRows runs the dataset and yields its rows in order. Options: those of IterBatches.
func (d *Dataset) IterRows(ctx context.Context, opts ...Option) iter.Seq2[Row, error] {
	return func(yield func(Row, error) bool) {
		for b, err := range d.IterBatches(ctx, opts...) {
			if err != nil {
				yield(nil, err)
				return
			}
			for _, r := range rowsOf(b) {
				if !yield(r, nil) {
					return
				}
			}
		}
	}
}

// TakeAll runs the dataset and returns all its rows.
func (d *Dataset) TakeAll(ctx context.Context, opts ...Option) ([]Row, error) {
	var out []Row
	for r, err := range d.IterRows(ctx, opts...) {
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Take returns the first n rows (the dataset runs with Limit(n): upstream work stops once
// n rows exist).
func (d *Dataset) Take(ctx context.Context, n int, opts ...Option) ([]Row, error) {
	l := d.Limit(n)
	rows, err := l.TakeAll(ctx, opts...)
	d.stats.Store(l.stats.Load())
	return rows, err
}

// knownCount is the row count when the plan tells it without running.
func knownCount(n *lnode) (int64, bool) {
	switch n.Kind {
	case kRead:
		switch n.Source.Kind {
		case "range":
			return n.Source.N, true
		case "ipc":
			var t int64
			for _, r := range n.Source.Rows {
				t += r
			}
			return t, true
		}
		return 0, false
	case kInput:
		var t int64
		for _, b := range n.Blocks {
			t += b.Rows
		}
		return t, true
	case kMap, kAddColumn, kSelect, kDrop, kRename, kRandBlocks:
		return knownCount(n.Inputs[0])
	case kAllToAll:
		if n.X.Kind == xShuffle || n.X.Kind == xSort || n.X.Kind == xRepartition {
			return knownCount(n.Inputs[0])
		}
		return 0, false
	case kZip: // both known: equal (Zip checked)
		a, okA := knownCount(n.Inputs[0])
		_, okB := knownCount(n.Inputs[1])
		return a, okA && okB
	case kLimit:
		c, ok := knownCount(n.Inputs[0])
		return min(c, n.N), ok
	case kUnion:
		var t int64
		for _, in := range n.Inputs {
			c, ok := knownCount(in)
			if !ok {
				return 0, false
			}
			t += c
		}
		return t, true
	}
	return 0, false
}

// Count returns the number of rows. It comes from the plan when the plan tells (sources of
// known size and row-preserving transforms), else from the blocks' metadata: the dataset
// runs but no block is fetched.
func (d *Dataset) Count(ctx context.Context, opts ...Option) (int64, error) {
	if err := d.planErr(); err != nil {
		return 0, err
	}
	if c, ok := knownCount(d.Plan); ok {
		return c, nil
	}
	e, err := d.execute(ctx, collect(opts))
	if err != nil {
		return 0, err
	}
	defer d.finish(e)
	var n int64
	for {
		ob, ok, err := e.next(ctx)
		if err != nil {
			return 0, err
		}
		if !ok {
			return n, nil
		}
		n += ob.rows
		e.release(ob, true)
	}
}

// Schema runs the dataset until its first block and returns its schema. A column null in
// every row of that block has the type the blocks known by then give it (null if none does).
func (d *Dataset) Schema(ctx context.Context, opts ...Option) (*arrow.Schema, error) {
	e, err := d.execute(ctx, collect(opts))
	if err != nil {
		return nil, err
	}
	defer d.finish(e)
	ob, ok, err := e.next(ctx)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("data: Schema: the dataset has no blocks")
	}
	defer e.release(ob, true)
	rec, err := ray.Get(ctx, ob.ref)
	if err != nil {
		return nil, fmt.Errorf("data: fetching a block: %w", err)
	}
	defer rec.Release()
	if u, ok := unifySchemas(rec.Schema(), ob.want); ok {
		return u, nil
	}
	return rec.Schema(), nil
}

// Show prints the first n rows to stdout, one per line (Ray's show).
func (d *Dataset) Show(ctx context.Context, n int) error { return d.Fprint(ctx, os.Stdout, n) }

// Fprint writes the first n rows to w, one per line as {col: value, ...} in column order.
func (d *Dataset) Fprint(ctx context.Context, w io.Writer, n int) error {
	l := d.Limit(n)
	for b, err := range l.IterBatches(ctx) {
		if err != nil {
			return err
		}
		names := columnNames(b.Schema())
		for _, r := range rowsOf(b) {
			parts := make([]string, len(names))
			for i, c := range names {
				parts[i] = fmt.Sprintf("%s: %v", c, fmtValue(r[c]))
			}
			if _, err := fmt.Fprintf(w, "{%s}\n", strings.Join(parts, ", ")); err != nil {
				return err
			}
		}
	}
	d.stats.Store(l.stats.Load())
	return nil
}

func fmtValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("%q", v)
	case []byte:
		if len(v) > 32 {
			return fmt.Sprintf("b%q...", v[:32])
		}
		return fmt.Sprintf("b%q", v)
	}
	return fmt.Sprint(v)
}

// Materialize runs the dataset and returns a Dataset over its blocks (Ray's materialize):
// consuming it again runs nothing upstream. The blocks live while the returned Dataset (or
// a copy of it, also in other processes) is reachable.
func (d *Dataset) Materialize(ctx context.Context, opts ...Option) (*Dataset, error) {
	blocks, err := d.materialize(ctx, collect(opts))
	if err != nil {
		return nil, err
	}
	m := newDataset(&lnode{Kind: kInput, Blocks: blocks}, nil)
	m.stats.Store(d.stats.Load())
	return m, nil
}

// NumBlocks returns the number of blocks of a materialized dataset (Ray's num_blocks, which
// also answers only for a MaterializedDataset): one returned by Materialize, Split,
// SplitAtIndices or TrainTestSplit, or a FromItems or FromArrow dataset with nothing after
// it (its blocks are made from the items, as Ray's from_items makes a MaterializedDataset).
// It runs nothing. For any other dataset it returns an error saying to call Materialize
// first: how many blocks a lazy plan makes is known only as it runs (one per read unit or
// input block, but Limit, Filter, Union and the all-to-all operators change it).
func (d *Dataset) NumBlocks() (int, error) {
	if err := d.planErr(); err != nil {
		return 0, err
	}
	switch n := d.Plan; {
	case n.Kind == kInput:
		return len(n.Blocks), nil
	case n.Kind == kRead && n.Source != nil && n.Source.Kind == "ipc":
		return len(n.Source.Blocks), nil
	}
	return 0, fmt.Errorf("data: NumBlocks: the dataset is lazy (plan %s), and its number of blocks is known only once it runs; call Materialize and ask the materialized dataset", renderLogical(d.Plan))
}

func (d *Dataset) materialize(ctx context.Context, o options) ([]blockRef, error) {
	if err := d.planErr(); err != nil {
		return nil, err
	}
	if d.Plan.Kind == kInput {
		return d.Plan.Blocks, nil
	}
	e, err := d.execute(ctx, o)
	if err != nil {
		return nil, err
	}
	defer d.finish(e)
	var blocks []blockRef
	for {
		ob, ok, err := e.next(ctx)
		if err != nil {
			return nil, err
		}
		if !ok {
			return blocks, nil
		}
		blocks = append(blocks, blockRef{Ref: ob.ref, Rows: ob.rows, Bytes: ob.size})
		e.release(ob, false)
	}
}

// Split materializes the dataset and divides its blocks into n datasets, in order, that
// together hold every block once (Ray's split). Parts hold whole blocks and about the same
// number of rows (each part at least one block when there are n or more); with Equal every part has exactly total/n rows (blocks are cut by tasks;
// as in Ray, the total%n rows left over are dropped). The parts are materialized Datasets:
// pass them to tasks or actors (one per consumer).
func (d *Dataset) Split(ctx context.Context, n int, opts ...Option) ([]*Dataset, error) {
	if n <= 0 {
		return nil, fmt.Errorf("data: Split(%d): need at least one part", n)
	}
	o := collect(opts)
	blocks, err := d.materialize(ctx, o)
	if err != nil {
		return nil, err
	}
	var total int64
	for _, b := range blocks {
		total += b.Rows
	}
	parts := make([][]blockRef, n)
	if !o.equal {
		// Whole blocks, in order: a block goes to the part whose share of rows holds its
		// middle row (its first row's share left the last part empty whenever the blocks
		// differed by a row: 1000, 1000 and 1001 rows gave parts of 2000, 1001 and 0).
		// With at least n blocks every part gets one (as Ray's split by block count): no
		// part is skipped, and enough blocks are left for the parts after.
		var acc int64
		prev := -1
		for k, b := range blocks {
			i := k * n / len(blocks)
			if total > 0 {
				i = int((2*acc + b.Rows) * int64(n) / (2 * total))
			}
			if len(blocks) >= n {
				i = max(min(i, prev+1), prev, n-(len(blocks)-k))
			}
			i = min(max(i, 0), n-1)
			parts[i] = append(parts[i], b)
			acc += b.Rows
			prev = i
		}
	} else {
		each := total / int64(n)
		i, left := 0, each
		for _, b := range blocks {
			var off int64
			for off < b.Rows && i < n {
				take := min(b.Rows-off, left)
				if take == b.Rows {
					parts[i] = append(parts[i], b)
				} else if take > 0 {
					parts[i] = append(parts[i], sliceBlock(ctx, b, off, take))
				}
				off += take
				left -= take
				if left == 0 {
					i++
					left = each
				}
			}
		}
	}
	out := make([]*Dataset, n)
	for i := range out {
		out[i] = newDataset(&lnode{Kind: kInput, Blocks: parts[i]}, nil)
	}
	return out, nil
}

// sliceBlock cuts rows [off, off+n) out of b with a task.
func sliceBlock(ctx context.Context, b blockRef, off, n int64) blockRef {
	spec := execSpec{Op: "Split", Stages: []stage{{Kind: "slice", Off: off, N: n}}}
	ref := execTask.Remote(ctx, ray.V(spec), b.Ref)
	return blockRef{Ref: ref, Rows: n, Bytes: max(1, b.Bytes*n/max(b.Rows, 1))}
}

// ---- writes ----

// writeTask writes one block to path; want (Arrow IPC, may be empty) is the dataset's schema
// that the block's null columns are cast to.
var writeTask = ray.Task4("ray.data.write", func(ctx context.Context, path string, opt formats.WriteOptions, want []byte, rec arrow.Record) (int64, error) {
	defer rec.Release()
	if len(want) > 0 {
		ws, err := decodeSchema(want)
		if err != nil {
			return 0, err
		}
		c, err := conform(rec, ws)
		if err != nil {
			return 0, fmt.Errorf("data: writing %s: %w", path, err)
		}
		defer c.Release()
		rec = c
	}
	// WriteFile's errors name the file already.
	return formats.WriteFile(path, rec.Schema(), []arrow.Record{rec}, opt)
})

// WriteParquet writes one Parquet file per block into dir (created if needed), named
// <prefix>_<index>.parquet with a prefix unique to this write. Each file is written by a
// task on the node that holds the block. It returns the files written, in dataset order.
// A write that fails removes the files it had finished (never files that were in dir
// before) and says so in its error, or names those it could not remove (Ray leaves them).
// Options: Compression.
func (d *Dataset) WriteParquet(ctx context.Context, dir string, opts ...Option) ([]string, error) {
	return d.write(ctx, dir, formats.Parquet, opts)
}

// WriteCSV writes one CSV file (with a header line) per block into dir. Options:
// Delimiter, NoHeader.
func (d *Dataset) WriteCSV(ctx context.Context, dir string, opts ...Option) ([]string, error) {
	return d.write(ctx, dir, formats.CSV, opts)
}

// WriteJSON writes one line-delimited JSON file per block into dir.
func (d *Dataset) WriteJSON(ctx context.Context, dir string, opts ...Option) ([]string, error) {
	return d.write(ctx, dir, formats.JSON, opts)
}

func (d *Dataset) write(ctx context.Context, dir string, f formats.Format, opts []Option) ([]string, error) {
	o := collect(opts)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("data: Write%s: %w", formatName(int(f)), err)
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	prefix := hex.EncodeToString(rnd[:])
	wo := formats.WriteOptions{Format: f, Compression: o.compression, Delimiter: o.delimiter, NoHeader: o.noHeader}
	e, err := d.execute(ctx, o)
	if err != nil {
		return nil, err
	}
	defer d.finish(e)
	// Each block is released as soon as its write task ends, by a goroutine that waits for
	// it, not when the loop below next looks: the loop waits in e.next for the next block,
	// and with a budget smaller than a few blocks the executor waits for those releases
	// before it can run the tasks that make that block (a deadlock when the loop released
	// only when it had limit writes in flight).
	type written struct {
		path string
		err  error
	}
	limit := max(e.maxTasks, 1)
	results := make(chan written, limit)
	running := 0
	var files []string
	var failed error
	take := func(w written) {
		running--
		switch {
		case w.err != nil && failed == nil:
			failed = fmt.Errorf("data: Write%s: %w", formatName(int(f)), w.err)
		case w.err == nil:
			files = append(files, w.path)
		}
	}
	// waitUntil waits until at most n writes run, and takes the ended ones.
	waitUntil := func(n int) {
		for running > n {
			take(<-results)
		}
		for {
			select {
			case w := <-results:
				take(w)
			default:
				return
			}
		}
	}
	for i := 0; ; {
		ob, ok, err := e.next(ctx)
		if err != nil {
			waitUntil(0)
			return nil, removeWritten(err, dir, files)
		}
		if !ok {
			break
		}
		if ob.rows == 0 {
			e.release(ob, true)
			continue
		}
		path := dir + string(os.PathSeparator) + formats.FileName(prefix, i, f)
		i++
		wt := writeTask
		if info, err := ray.RefInfo(ctx, ob.ref); err == nil && info.NodeID != "" {
			wt = writeTask.Options(ray.NodeAffinity(info.NodeID, true))
		}
		var want []byte
		if ob.want != nil && ob.schema != nil && schemaHasNull(ob.schema) {
			want = encodeSchema(ob.want)
		}
		ref := wt.Remote(ctx, ray.V(path), ray.V(wo), ray.V(want), ob.ref)
		running++
		go func() {
			_, err := ray.Get(ctx, ref)
			e.release(ob, true)
			results <- written{path: path, err: err}
		}()
		waitUntil(limit - 1)
		if failed != nil {
			waitUntil(0)
			return nil, removeWritten(failed, dir, files)
		}
	}
	waitUntil(0)
	if failed != nil {
		return nil, removeWritten(failed, dir, files)
	}
	sort.Strings(files)
	return slices.Clip(files), nil
}

// removeWritten removes the files a failed write finished (files: only those, never a file
// that was in the directory before, so that a later read of dir does not take part of the
// dataset for the whole) and says so in err; a file it cannot remove is named in err, with
// what to do. A file written on another node's disk is not on this machine to remove: it
// is named too.
func removeWritten(err error, dir string, files []string) error {
	if len(files) == 0 {
		return err
	}
	var left []string
	for _, f := range files {
		if rerr := os.Remove(f); rerr != nil {
			left = append(left, f)
		}
	}
	if len(left) == 0 {
		return fmt.Errorf("%w (the %d files this write had finished in %s were removed)", err, len(files), dir)
	}
	sort.Strings(left)
	return fmt.Errorf("%w (of the %d files this write had finished in %s, %d could not be removed from this machine: %s; remove them, which hold part of the dataset, before reading %s)",
		err, len(files), dir, len(left), strings.Join(left, ", "), dir)
}
