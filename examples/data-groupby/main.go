// Command data-groupby writes a small sales table as Parquet into a temporary directory,
// then reports on it with ray-go's Ray Data all-to-all operators: revenue per country
// (GroupBy(...).Aggregate with Count, Sum, Mean, Std, Max), sorted by revenue (Sort,
// descending), the top customers of each country (GroupBy(...).MapGroups) and a shuffled
// train/test split. It prints the reports, the plan (Explain) and the statistics of the
// aggregation (Stats), whose all-to-all stages show the map, merge and reduce tasks.
//
//	go run ./examples/data-groupby
//	go run ./examples/data-groupby -rows 2000000
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"sort"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/ray-go/ray"
	"github.com/ray-go/ray/data"
)

var countries = []string{"DE", "FR", "IT", "JP", "NL", "US"}

// makeSale turns an id of data.Range into a sale (deterministic, so the report is too).
var makeSale = data.RowFunc("data-groupby.makeSale", func(_ context.Context, r data.Row) (data.Row, error) {
	id := r["id"].(int64)
	h := uint64(id)*0x9e3779b97f4a7c15 + 1
	h ^= h >> 29
	return data.Row{
		"sale_id":  id,
		"country":  countries[h%uint64(len(countries))],
		"customer": fmt.Sprintf("c%03d", (h>>8)%200),
		"amount":   float64((h>>20)%10000) / 100,
	}, nil
})

// topCustomers gets the rows of one country (MapGroups) and returns its best customer by
// revenue: one row per group.
var topCustomers = data.BatchFunc("data-groupby.topCustomers", func(_ context.Context, g arrow.Record) (arrow.Record, error) {
	col := func(name string) arrow.Array { return g.Column(g.Schema().FieldIndices(name)[0]) }
	customers, amounts := col("customer").(*array.String), col("amount").(*array.Float64)
	byCustomer := map[string]float64{}
	for i := 0; i < customers.Len(); i++ {
		byCustomer[customers.Value(i)] += amounts.Value(i)
	}
	best, most := "", -1.0
	for c, v := range byCustomer {
		if v > most || v == most && c < best {
			best, most = c, v
		}
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "country", Type: arrow.BinaryTypes.String},
		{Name: "top_customer", Type: arrow.BinaryTypes.String},
		{Name: "revenue", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).Append(col("country").(*array.String).Value(0))
	b.Field(1).(*array.StringBuilder).Append(best)
	b.Field(2).(*array.Float64Builder).Append(most)
	return b.NewRecord(), nil
})

func main() {
	rows := flag.Int("rows", 200_000, "sales to generate")
	flag.Parse()
	ctx, err := ray.Init(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)

	dir, err := os.MkdirTemp("", "data-groupby-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if _, err := data.Range(*rows, data.Parallelism(8)).Map(makeSale).WriteParquet(ctx, dir); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("wrote %d sales as Parquet to %s\n\n", *rows, dir)
	sales := data.ReadParquet([]string{dir})

	// Revenue per country, best first.
	report := sales.GroupBy("country").
		Aggregate(data.Count(), data.Sum("amount"), data.Mean("amount"), data.Std("amount", 1), data.Max("amount")).
		Sort([]string{"sum(amount)"}, data.Descending())
	fmt.Println("revenue per country:")
	if err := report.Show(ctx, len(countries)); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("\n%s\n\n%s\n", report.Explain(), report.Stats())

	// The best customer of each country (MapGroups calls topCustomers once per country).
	top, err := sales.GroupBy("country").MapGroups(topCustomers).TakeAll(ctx)
	if err != nil {
		log.Fatal(err)
	}
	sort.Slice(top, func(i, j int) bool { return top[i]["country"].(string) < top[j]["country"].(string) })
	fmt.Println("best customer per country:")
	for _, r := range top {
		fmt.Printf("  %s  %s  %.2f\n", r["country"], r["top_customer"], r["revenue"])
	}

	// A shuffled 80/20 split, the same for the same seed.
	train, test, err := sales.TrainTestSplit(ctx, 0.2, data.Shuffle(42))
	if err != nil {
		log.Fatal(err)
	}
	nTrain, _ := train.Count(ctx)
	nTest, _ := test.Count(ctx)
	first, err := test.Take(ctx, 3)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("\nshuffled split: %d train rows, %d test rows; the test part starts with sales", nTrain, nTest)
	for _, r := range first {
		fmt.Printf(" %d", r["sale_id"])
	}
	fmt.Println()
}
