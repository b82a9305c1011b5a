package data

import (
	"context"
	"fmt"
	"sync"

	"github.com/apache/arrow/go/v15/arrow"
)

// Row is one row of a dataset: column name to value. Values read from blocks are int64,
// int32, ..., float64, float32, string, []byte, bool, time.Time (timestamps and dates), []any
// (lists), Row (structs) or nil (null). Functions may return any of those and Go ints
// (int, uint, ...), which become int64/uint64 columns.
type Row = map[string]any

// BatchFn is a registered function over whole batches (MapBatches). Make it with BatchFunc
// (stateless, runs in tasks) or BatchClass (stateful, for actor pools).
type BatchFn struct {
	name  string
	fn    func(ctx context.Context, batch arrow.Record) (arrow.Record, error)
	setup func(ctx context.Context) (func(ctx context.Context, batch arrow.Record) (arrow.Record, error), error)
}

// Name is the function's registered name.
func (f *BatchFn) Name() string { return f.name }

// RowFn is a registered row-to-row function (Map).
type RowFn struct {
	name string
	fn   func(ctx context.Context, row Row) (Row, error)
}

// Name is the function's registered name.
func (f *RowFn) Name() string { return f.name }

// FlatRowFn is a registered row-to-rows function (FlatMap).
type FlatRowFn struct {
	name string
	fn   func(ctx context.Context, row Row) ([]Row, error)
}

// Name is the function's registered name.
func (f *FlatRowFn) Name() string { return f.name }

// PredicateFn is a registered row predicate (Filter).
type PredicateFn struct {
	name string
	fn   func(ctx context.Context, row Row) (bool, error)
}

// Name is the function's registered name.
func (f *PredicateFn) Name() string { return f.name }

// ColumnFn is a registered function computing a new column from a batch (AddColumn).
type ColumnFn struct {
	name string
	fn   func(ctx context.Context, batch arrow.Record) (arrow.Array, error)
}

// Name is the function's registered name.
func (f *ColumnFn) Name() string { return f.name }

// The registry: worker processes run the same binary and find functions by name, so every
// function is registered at package initialisation under a unique name.
var (
	regMu sync.RWMutex
	reg   = map[string]any{}
)

func register(name string, f any) {
	if name == "" {
		panic("data: a registered function needs a non-empty name")
	}
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := reg[name]; dup {
		panic(fmt.Sprintf("data: function %q registered twice (names must be unique)", name))
	}
	reg[name] = f
}

func lookup[T any](name string) (T, error) {
	regMu.RLock()
	f, ok := reg[name]
	regMu.RUnlock()
	t, isT := f.(T)
	if !ok || !isT {
		var zero T
		return zero, fmt.Errorf("data: no %T registered under %q (register functions at package level so every process has them)", zero, name)
	}
	return t, nil
}

// BatchFunc registers fn, a function from one batch to one batch, under name. Call it at
// package level. The batch passed in is released by the caller after fn returns; fn returns
// a new record (or the input after Retain) that the caller releases.
func BatchFunc(name string, fn func(ctx context.Context, batch arrow.Record) (arrow.Record, error)) *BatchFn {
	f := &BatchFn{name: name, fn: fn}
	register(name, f)
	return f
}

// BatchClass registers a stateful batch function: setup runs once per actor of an actor pool
// (ActorPool) and returns the function that then processes that actor's batches (Ray's
// callable class). Without ActorPool, every task runs setup again before its block.
func BatchClass(name string, setup func(ctx context.Context) (func(ctx context.Context, batch arrow.Record) (arrow.Record, error), error)) *BatchFn {
	f := &BatchFn{name: name, setup: setup}
	register(name, f)
	return f
}

// RowFunc registers fn, a function from one row to one row, under name (for Map).
func RowFunc(name string, fn func(ctx context.Context, row Row) (Row, error)) *RowFn {
	f := &RowFn{name: name, fn: fn}
	register(name, f)
	return f
}

// FlatRowFunc registers fn, a function from one row to any number of rows (for FlatMap).
func FlatRowFunc(name string, fn func(ctx context.Context, row Row) ([]Row, error)) *FlatRowFn {
	f := &FlatRowFn{name: name, fn: fn}
	register(name, f)
	return f
}

// Predicate registers fn, a row predicate, under name (for Filter: rows where it returns
// true are kept).
func Predicate(name string, fn func(ctx context.Context, row Row) (bool, error)) *PredicateFn {
	f := &PredicateFn{name: name, fn: fn}
	register(name, f)
	return f
}

// ColumnFunc registers fn, which computes one column (as many values as the batch has
// rows) from a batch, under name (for AddColumn).
func ColumnFunc(name string, fn func(ctx context.Context, batch arrow.Record) (arrow.Array, error)) *ColumnFn {
	f := &ColumnFn{name: name, fn: fn}
	register(name, f)
	return f
}
