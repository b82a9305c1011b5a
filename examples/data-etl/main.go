// Command data-etl is a small ETL job with ray-go's Ray Data package: it reads Parquet
// files, keeps the large orders (Filter), adds a tax column computed on whole Arrow batches
// (MapBatches), keeps four columns (SelectColumns) and writes Parquet, one file per block.
// It prints the files written, the row counts and the execution's statistics (ds.Stats());
// while it runs, the data package draws one progress line per operator on stderr when
// stderr is a terminal.
//
//	go run ./examples/data-etl                          # writes a small input to a temp dir first
//	go run ./examples/data-etl -in /data/orders -out /tmp/big-orders
//	go run ./examples/data-etl -rows 2000000 -min 90    # a larger generated input
//
// See README.md for the walk-through.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/ray-go/ray"
	"github.com/ray-go/ray/data"
)

// Functions are registered at package level under unique names: the plan refers to them
// by name, so every process of a cluster finds them.
var (
	// makeOrder turns an id of data.Range into an order row (for the generated input).
	makeOrder = data.RowFunc("data-etl.makeOrder", func(_ context.Context, r data.Row) (data.Row, error) {
		o := orderOf(r["id"].(int64))
		return data.Row{"order_id": o.ID, "customer": o.Customer, "country": o.Country, "amount": o.Amount}, nil
	})

	// bigOrder keeps the orders of at least minAmount (a row predicate: Filter).
	bigOrder = data.Predicate("data-etl.bigOrder", func(_ context.Context, r data.Row) (bool, error) {
		amount, ok := r["amount"].(float64)
		if !ok {
			return false, fmt.Errorf("amount is %T, want float64", r["amount"])
		}
		return amount >= minAmount, nil
	})

	// addTax adds the column tax = amount * taxRate to a whole batch (MapBatches): the
	// function gets an Arrow record and returns a new one.
	addTax = data.BatchFunc("data-etl.addTax", func(_ context.Context, b arrow.Record) (arrow.Record, error) {
		idx := b.Schema().FieldIndices("amount")
		if len(idx) == 0 {
			return nil, errors.New("no column amount")
		}
		amounts := b.Column(idx[0]).(*array.Float64)
		bld := array.NewFloat64Builder(memory.DefaultAllocator)
		defer bld.Release()
		bld.Reserve(amounts.Len())
		for i := 0; i < amounts.Len(); i++ {
			if amounts.IsNull(i) {
				bld.AppendNull()
				continue
			}
			bld.UnsafeAppend(tax(amounts.Value(i)))
		}
		col := bld.NewArray()
		defer col.Release()
		fields := append(b.Schema().Fields(), arrow.Field{Name: "tax", Type: arrow.PrimitiveTypes.Float64, Nullable: true})
		cols := append(append([]arrow.Array(nil), b.Columns()...), col)
		return array.NewRecord(arrow.NewSchema(fields, nil), cols, b.NumRows()), nil
	})
)

// minAmount is the Filter's threshold (-min). Like every flag, it is set before ray.Init,
// so a cluster's worker processes (which run this same binary with the same arguments)
// see the same value.
var minAmount = 50.0

const taxRate = 0.2

// tax is an order's tax, rounded to cents.
func tax(amount float64) float64 { return float64(int64(amount*taxRate*100+0.5)) / 100 }

// order is one row of the generated input.
type order struct {
	ID       int64
	Customer string
	Country  string
	Amount   float64
}

var countries = []string{"DE", "FR", "JP", "US", "BR", "IN"}

// orderOf is the generated input's row id: a deterministic function of id, so a test can
// tell which rows the job must keep.
func orderOf(id int64) order {
	h := uint64(id)*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
	h ^= h >> 29
	return order{
		ID:       id,
		Customer: fmt.Sprintf("c%04d", h%5000),
		Country:  countries[h%uint64(len(countries))],
		Amount:   float64(h%10000) / 100, // 0.00 .. 99.99
	}
}

// writeInput writes rows generated orders into dir as Parquet (files files) with the data
// package itself: Range -> Map -> WriteParquet.
func writeInput(ctx context.Context, dir string, rows, files int) ([]string, error) {
	return data.Range(rows, data.Parallelism(files)).Map(makeOrder).WriteParquet(ctx, dir)
}

// result is what a run of the pipeline did.
type result struct {
	InputRows  int64
	OutputRows int64
	Files      []string
	Stats      string
}

// pipeline reads the Parquet files in (files, directories or globs), keeps the orders of at
// least minAmount, adds the tax column, keeps order_id, customer, amount and tax, and writes
// the result as Parquet into out. opts are passed to the consuming calls (e.g.
// data.Progress(false)).
func pipeline(ctx context.Context, in []string, out string, opts ...data.Option) (result, error) {
	var res result
	src := data.ReadParquet(in)
	n, err := src.Count(ctx, opts...) // from the Parquet footers: no data is read
	if err != nil {
		return res, err
	}
	res.InputRows = n
	ds := src.Filter(bigOrder).MapBatches(addTax).SelectColumns("order_id", "customer", "amount", "tax")
	if res.Files, err = ds.WriteParquet(ctx, out, opts...); err != nil {
		return res, err
	}
	res.Stats = ds.Stats()
	// Read what was written back to count it.
	if len(res.Files) > 0 {
		if res.OutputRows, err = data.ReadParquet(res.Files).Count(ctx, opts...); err != nil {
			return res, err
		}
	}
	return res, nil
}

func main() {
	in := flag.String("in", "", "input Parquet files or directories, comma-separated (default: generate -rows orders into a temporary directory)")
	out := flag.String("out", "", "output directory (default: a new temporary directory, kept)")
	rows := flag.Int("rows", 200_000, "rows of the generated input (without -in)")
	files := flag.Int("files", 4, "files of the generated input (without -in)")
	flag.Float64Var(&minAmount, "min", minAmount, "keep the orders of at least this amount")
	explain := flag.Bool("explain", false, "print the logical and physical plans")
	flag.Parse()
	if err := run(*in, *out, *rows, *files, *explain); err != nil {
		log.Fatal(err)
	}
}

func run(in, out string, rows, files int, explain bool) error {
	ctx, err := ray.Init(context.Background())
	if err != nil {
		return err
	}
	defer ray.Shutdown(ctx)
	start := time.Now()

	var inputs []string
	if in == "" {
		dir, err := os.MkdirTemp("", "data-etl-in-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		written, err := writeInput(ctx, dir, rows, files)
		if err != nil {
			return fmt.Errorf("writing the input: %w", err)
		}
		fmt.Printf("wrote %d generated orders to %s (%d files) in %v\n", rows, dir, len(written), time.Since(start).Round(time.Millisecond))
		inputs = []string{dir}
	} else {
		inputs = strings.Split(in, ",")
	}
	if out == "" {
		if out, err = os.MkdirTemp("", "data-etl-out-"); err != nil {
			return err
		}
	}
	if explain {
		fmt.Println(data.ReadParquet(inputs).Filter(bigOrder).MapBatches(addTax).
			SelectColumns("order_id", "customer", "amount", "tax").Explain())
	}

	t0 := time.Now()
	res, err := pipeline(ctx, inputs, out)
	if err != nil {
		return err
	}
	fmt.Printf("\nread %d rows, kept %d (amount >= %g), wrote %d files to %s in %v:\n",
		res.InputRows, res.OutputRows, minAmount, len(res.Files), out, time.Since(t0).Round(time.Millisecond))
	for _, f := range res.Files {
		size := int64(0)
		if fi, err := os.Stat(f); err == nil {
			size = fi.Size()
		}
		fmt.Printf("  %s  (%d bytes)\n", filepath.Base(f), size)
	}
	fmt.Printf("\n%s\n", res.Stats)

	// A look at the output.
	if len(res.Files) > 0 {
		fmt.Println("first rows of the output:")
		if err := data.ReadParquet(res.Files).Show(ctx, 5); err != nil {
			return err
		}
	}
	return nil
}
