package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray"
	"github.com/ray-go/ray/data"
)

var shared context.Context

func TestMain(m *testing.M) {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		fmt.Fprintln(os.Stderr, "Init:", err)
		os.Exit(1)
	}
	shared = ctx
	code := m.Run()
	if err := ray.Shutdown(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "Shutdown:", err)
		code = 1
	}
	os.Exit(code)
}

// TestReport runs the example's reports on a small generated CSV and checks them against
// the same computed in plain Go from the generator.
func TestReport(t *testing.T) {
	ctx, cancel := context.WithTimeout(shared, 2*time.Minute)
	defer cancel()
	const rows = 4000
	path := filepath.Join(t.TempDir(), "readings.csv")
	if err := writeCSV(path, rows); err != nil {
		t.Fatal(err)
	}
	res, err := report(ctx, []string{path}, data.Progress(false))
	if err != nil {
		t.Fatal(err)
	}

	type agg struct {
		n, rainN          int64
		sum, sq, min, max float64
		rain              float64
	}
	byCountry := map[string]*agg{}
	rainBy := map[string]float64{}
	var nulls int
	for i := 0; i < rows; i++ {
		r := readingOf(i)
		a := byCountry[r.Country]
		if a == nil {
			a = &agg{min: math.Inf(1), max: math.Inf(-1)}
			byCountry[r.Country] = a
		}
		a.n++
		a.sum += r.TempC
		a.sq += r.TempC * r.TempC
		a.min, a.max = min(a.min, r.TempC), max(a.max, r.TempC)
		if r.RainMM != nil {
			a.rain += *r.RainMM
			a.rainN++
			rainBy[r.Station] += *r.RainMM
		} else {
			nulls++
		}
	}
	if nulls == 0 || nulls == rows {
		t.Fatalf("%d of %d readings without rain: the test would not check null handling", nulls, rows)
	}
	if len(res.ByCountry) != len(byCountry) {
		t.Fatalf("%d countries, want %d: %v", len(res.ByCountry), len(byCountry), res.ByCountry)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }
	prev := math.Inf(1)
	for _, r := range res.ByCountry {
		c := r["country"].(string)
		a := byCountry[c]
		mean := a.sum / float64(a.n)
		std := math.Sqrt((a.sq - a.sum*a.sum/float64(a.n)) / float64(a.n-1))
		if r["count()"] != a.n || !near(r["mean(temp_c)"].(float64), mean) || r["min(temp_c)"] != a.min ||
			r["max(temp_c)"] != a.max || !near(r["std(temp_c)"].(float64), std) || !near(r["sum(rain_mm)"].(float64), a.rain) {
			t.Fatalf("country %s: %v, want count %d mean %v min %v max %v std %v rain %v", c, r, a.n, mean, a.min, a.max, std, a.rain)
		}
		if mean > prev {
			t.Fatalf("not sorted by mean temperature, warmest first: %v", res.ByCountry)
		}
		prev = mean
	}

	stations := make([]string, 0, len(rainBy))
	for s := range rainBy {
		stations = append(stations, s)
	}
	sort.Slice(stations, func(i, j int) bool { return rainBy[stations[i]] > rainBy[stations[j]] })
	if len(res.Wettest) != 3 {
		t.Fatalf("wettest: %v", res.Wettest)
	}
	for i, r := range res.Wettest {
		if r["station"] != stations[i] || !near(r["sum(rain_mm)"].(float64), rainBy[stations[i]]) {
			t.Fatalf("wettest #%d: %v, want %s with %v", i+1, r, stations[i], rainBy[stations[i]])
		}
	}

	if res.Train+res.Test != rows || res.Test != rows/4 || len(res.TestFirst) != 3 {
		t.Fatalf("split: %d train, %d test, first %v", res.Train, res.Test, res.TestFirst)
	}
	for _, s := range []string{"ReadCSV", "Aggregate[keys=country", "Sort[mean(temp_c) desc]"} {
		if !strings.Contains(res.Explain, s) {
			t.Errorf("Explain lacks %q:\n%s", s, res.Explain)
		}
	}
	for _, s := range []string{"All-to-all stages", "- map", "- reduce", "Bytes shuffled"} {
		if !strings.Contains(res.Stats, s) {
			t.Errorf("Stats lacks %q:\n%s", s, res.Stats)
		}
	}
}
