// Command data-csv reports on a CSV file with ray-go's Ray Data (github.com/ray-go/ray/data):
// it writes a small table of weather readings as CSV into a temporary directory (or reads
// the file given with -csv), then, on the embedded local cluster:
//
//   - the readings per country (GroupBy(...).Aggregate with Count, Mean, Min, Max, Std and
//     Sum), sorted by mean temperature, warmest first (Sort, descending);
//   - the three wettest stations (GroupBy, Sum, Sort, Take);
//   - a shuffled 75/25 train/test split (TrainTestSplit), the same for the same seed;
//
// and prints the reports, the plan of the first (Explain) and what its execution did
// (Stats: the read, the all-to-all stages with their map and reduce tasks, rows and bytes).
// Empty rain fields are nulls, which the aggregations skip.
//
//	go run ./examples/data-csv
//	go run ./examples/data-csv -rows 1000000
//	go run ./examples/data-csv -csv readings.csv   # columns station,country,month,temp_c,rain_mm
package main

import (
	"context"
	"encoding/csv"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"

	"github.com/ray-go/ray"
	"github.com/ray-go/ray/data"
)

var countries = []string{"DE", "ES", "FI", "IT", "NO", "PT"}

// reading is one generated row; rain is nil for a reading without a rain gauge value (an
// empty CSV field, read as null).
type reading struct {
	Station string
	Country string
	Month   int64
	TempC   float64
	RainMM  *float64
}

// readingOf makes reading i (deterministic, so the report and the test's expectations are).
func readingOf(i int) reading {
	h := uint64(i)*0x9e3779b97f4a7c15 + 7
	h ^= h >> 31
	station := int(h % 40)
	country := countries[station%len(countries)]
	month := int64(h>>8%12) + 1
	// Warmer in the south, in summer; quarter degrees, so sums are exact in float64.
	base := map[string]float64{"DE": 9, "ES": 17, "FI": 3, "IT": 15, "NO": 4, "PT": 16}[country]
	summer := 6 - float64(abs(int(month)-7))
	temp := base + summer*2 + float64(int(h>>16%21)-10)/4
	r := reading{Station: fmt.Sprintf("%s-%02d", country, station), Country: country, Month: month, TempC: temp}
	if h>>40%10 != 0 { // one reading in ten has no rain value
		rain := float64(h>>24%400) / 8
		r.RainMM = &rain
	}
	return r
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// writeCSV writes rows readings to path with a header line.
func writeCSV(path string, rows int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"station", "country", "month", "temp_c", "rain_mm"})
	for i := 0; i < rows; i++ {
		r := readingOf(i)
		rain := ""
		if r.RainMM != nil {
			rain = strconv.FormatFloat(*r.RainMM, 'f', -1, 64)
		}
		_ = w.Write([]string{r.Station, r.Country, strconv.FormatInt(r.Month, 10), strconv.FormatFloat(r.TempC, 'f', -1, 64), rain})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// result is what report computes.
type result struct {
	ByCountry   []data.Row // country, count(), mean(temp_c), min(temp_c), max(temp_c), std(temp_c), sum(rain_mm); warmest first
	Wettest     []data.Row // station, sum(rain_mm); the three wettest
	Train, Test int64      // rows of the shuffled split
	TestFirst   []data.Row // the first rows of the test part
	Explain     string     // the plan of the per-country report
	Stats       string     // its execution
}

// report runs the reports over the CSV files (or directories) in paths.
func report(ctx context.Context, paths []string, opts ...data.Option) (*result, error) {
	readings := data.ReadCSV(paths)
	res := &result{}

	byCountry := readings.GroupBy("country").
		Aggregate(data.Count(), data.Mean("temp_c"), data.Min("temp_c"), data.Max("temp_c"), data.Std("temp_c", 1), data.Sum("rain_mm")).
		Sort([]string{"mean(temp_c)"}, data.Descending())
	var err error
	if res.ByCountry, err = byCountry.TakeAll(ctx, opts...); err != nil {
		return nil, fmt.Errorf("per country: %w", err)
	}
	res.Explain, res.Stats = byCountry.Explain(), byCountry.Stats()

	wettest := readings.GroupBy("station").Sum("rain_mm").Sort([]string{"sum(rain_mm)"}, data.Descending())
	if res.Wettest, err = wettest.Take(ctx, 3, opts...); err != nil {
		return nil, fmt.Errorf("wettest stations: %w", err)
	}

	train, test, err := readings.TrainTestSplit(ctx, 0.25, data.Shuffle(7))
	if err != nil {
		return nil, fmt.Errorf("split: %w", err)
	}
	if res.Train, err = train.Count(ctx); err != nil {
		return nil, err
	}
	if res.Test, err = test.Count(ctx); err != nil {
		return nil, err
	}
	if res.TestFirst, err = test.Take(ctx, 3, opts...); err != nil {
		return nil, err
	}
	return res, nil
}

func main() {
	rows := flag.Int("rows", 50_000, "readings to generate (without -csv)")
	in := flag.String("csv", "", "a CSV file (or directory of them) with the columns station,country,month,temp_c,rain_mm (default: generate -rows readings)")
	flag.Parse()
	ctx, err := ray.Init(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)

	path := *in
	if path == "" {
		dir, err := os.MkdirTemp("", "data-csv-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(dir)
		path = filepath.Join(dir, "readings.csv")
		if err := writeCSV(path, *rows); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("wrote %d readings to %s\n\n", *rows, path)
	}
	res, err := report(ctx, []string{path})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("readings per country, warmest first:")
	fmt.Printf("  %-7s %7s %7s %7s %7s %7s %10s\n", "country", "count", "mean", "min", "max", "std", "rain (mm)")
	for _, r := range res.ByCountry {
		fmt.Printf("  %-7s %7d %7.2f %7.2f %7.2f %7.2f %10.1f\n", r["country"], r["count()"], r["mean(temp_c)"],
			r["min(temp_c)"], r["max(temp_c)"], r["std(temp_c)"], r["sum(rain_mm)"])
	}
	fmt.Println("\nthe three wettest stations:")
	for _, r := range res.Wettest {
		fmt.Printf("  %-6s %10.1f mm\n", r["station"], r["sum(rain_mm)"])
	}
	fmt.Printf("\nshuffled split: %d train rows, %d test rows; the test part starts with", res.Train, res.Test)
	for _, r := range res.TestFirst {
		fmt.Printf(" %s/%d", r["station"], r["month"])
	}
	fmt.Printf("\n\n%s\n\n%s", res.Explain, res.Stats)
}
