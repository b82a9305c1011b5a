package data

import (
	"context"
	"fmt"
	"iter"
	"sync"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/ray-go/ray"
)

// coordinator is the actor behind StreamingSplit: it runs the dataset's execution in its
// own process (it owns the blocks) and hands blocks out to n consumers as they ask.
type coordinator struct {
	mu    sync.Mutex
	ds    *Dataset
	o     options
	n     int
	e     *executor
	ended []bool
	err   error
}

// splitBlock is one answer of the coordinator: a block, or the end (with the execution's
// error, if it failed).
type splitBlock struct {
	Ref  ray.ObjectRef[arrow.Record]
	Rows int64
	Want []byte // the dataset's schema as known (Arrow IPC), for null columns; may be empty
	Done bool
	Err  string
}

type splitArgs struct {
	DS       *Dataset
	N        int
	Budget   int64
	MaxTasks int
}

var coordClass = ray.Actor1("ray.data.coordinator", func(_ context.Context, a splitArgs) (*coordinator, error) {
	return &coordinator{ds: a.DS, n: a.N, o: options{budget: a.Budget, maxTasks: a.MaxTasks, progress: new(bool)}, ended: make([]bool, a.N)}, nil
})

var coordNext = ray.Method1(coordClass, "Next", func(c *coordinator, ctx context.Context, i int) (splitBlock, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i < 0 || i >= c.n {
		return splitBlock{}, fmt.Errorf("data: StreamingSplit: consumer %d of %d", i, c.n)
	}
	if c.err != nil {
		return splitBlock{Done: true, Err: c.err.Error()}, nil
	}
	if c.e == nil {
		// The execution outlives this call: it runs with the runtime of the actor.
		e, err := c.ds.execute(context.WithoutCancel(ctx), c.o)
		if err != nil {
			c.err = err
			return splitBlock{Done: true, Err: err.Error()}, nil
		}
		c.e = e
	}
	ob, ok, err := c.e.next(ctx)
	if err != nil {
		c.err = err
		return splitBlock{Done: true, Err: err.Error()}, nil
	}
	if !ok {
		c.ended[i] = true
		all := true
		for _, d := range c.ended {
			all = all && d
		}
		if all {
			c.ds.finish(c.e)
		}
		return splitBlock{Done: true}, nil
	}
	// The ref travels in the result (the consumer borrows it); the executor only accounts
	// the block as consumed.
	c.e.release(ob, false)
	sb := splitBlock{Ref: ob.ref, Rows: ob.rows}
	if ob.want != nil && ob.schema != nil && schemaHasNull(ob.schema) {
		sb.Want = encodeSchema(ob.want)
	}
	return sb, nil
})

// SplitIterator is one of the n consumers of a StreamingSplit. It is a plain value: pass it
// to a task or an actor, which iterates over its share of the blocks.
type SplitIterator struct {
	// Coordinator is the actor that runs the execution and hands out blocks.
	Coordinator ray.ActorHandle[coordinator]
	// Index is this consumer's number, 0..n-1.
	Index int
}

// StreamingSplit runs the dataset once for n consumers (Ray's streaming_split): a
// coordinator actor executes the plan, streaming, and hands each block to the consumer that
// asks next, so the consumers together see every block exactly once, each block in
// dataset order within a consumer. Each consumer must iterate to the end (the execution
// ends when all have). Options: ObjectStoreBudget, MaxTasksInFlight.
func (d *Dataset) StreamingSplit(ctx context.Context, n int, opts ...Option) ([]SplitIterator, error) {
	if err := d.planErr(); err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, fmt.Errorf("data: StreamingSplit(%d): need at least one consumer", n)
	}
	o := collect(opts)
	h := coordClass.Remote(ctx, ray.V(splitArgs{DS: d, N: n, Budget: o.budget, MaxTasks: o.maxTasks}), ray.MaxConcurrency(n),
		// Its state (a mutex, the dataset, the executor) is not the codec's to checkpoint; its
		// log lives as long as one split's iteration.
		ray.UnboundedMethodLog())
	if err := h.Err(); err != nil {
		return nil, fmt.Errorf("data: StreamingSplit: starting the coordinator: %w", err)
	}
	out := make([]SplitIterator, n)
	for i := range out {
		out[i] = SplitIterator{Coordinator: h, Index: i}
	}
	return out, nil
}

// IterBatches yields this consumer's share of the dataset in batches of BatchSize rows
// (default 256; cut across the blocks it receives). Options: BatchSize, LocalShuffleBuffer,
// LocalShuffleSeed.
func (s SplitIterator) IterBatches(ctx context.Context, opts ...Option) iter.Seq2[arrow.Record, error] {
	o := collect(opts)
	size := int64(o.batchSize)
	if size <= 0 {
		size = 256
	}
	return func(yield func(arrow.Record, error) bool) {
		var held []arrow.Record
		var off int64
		defer func() {
			for _, r := range held {
				r.Release()
			}
		}()
		batcher := func(fetch func() (bool, error)) {
			if o.shuffleBuf > 0 {
				shuffleBatches(size, int64(o.shuffleBuf), newShuffleRand(o.shuffleSeed), &held, fetch, yield)
				return
			}
			cutBatches(size, &held, &off, fetch, yield)
		}
		batcher(func() (bool, error) {
			b, err := ray.Get(ctx, coordNext.Remote(ctx, s.Coordinator, ray.V(s.Index)))
			if err != nil {
				return false, fmt.Errorf("data: StreamingSplit: %w", err)
			}
			if b.Done {
				if b.Err != "" {
					return false, fmt.Errorf("%s", b.Err)
				}
				return false, nil
			}
			rec, err := ray.Get(ctx, b.Ref)
			b.Ref.Release()
			if err != nil {
				return false, fmt.Errorf("data: fetching a block: %w", err)
			}
			if len(b.Want) > 0 {
				want, err := decodeSchema(b.Want)
				if err == nil {
					c, cerr := conform(rec, want)
					rec.Release()
					if cerr != nil {
						return false, cerr
					}
					rec = c
				}
			}
			held = append(held, rec)
			return true, nil
		})
	}
}

// IterRows yields this consumer's rows.
func (s SplitIterator) IterRows(ctx context.Context, opts ...Option) iter.Seq2[Row, error] {
	return func(yield func(Row, error) bool) {
		for b, err := range s.IterBatches(ctx, opts...) {
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
