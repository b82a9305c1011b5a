package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"

	"github.com/ray-go/ray/data"
)

// addDouble is the per-batch function of part (a), the same Go function on both sides: it
// returns the batch with a fourth column x2 = x*2 (float64).
func addDouble(_ context.Context, b arrow.Record) (arrow.Record, error) {
	idx := b.Schema().FieldIndices("x")
	if len(idx) == 0 {
		return nil, fmt.Errorf("no column x in %s", b.Schema())
	}
	xs := b.Column(idx[0]).(*array.Float64).Float64Values()
	bld := array.NewFloat64Builder(memory.DefaultAllocator)
	defer bld.Release()
	bld.Reserve(len(xs))
	for _, x := range xs {
		bld.UnsafeAppend(x * 2)
	}
	col := bld.NewArray()
	defer col.Release()
	fields := append(slices.Clone(b.Schema().Fields()), arrow.Field{Name: "x2", Type: arrow.PrimitiveTypes.Float64})
	cols := append(append([]arrow.Array(nil), b.Columns()...), col)
	return array.NewRecord(arrow.NewSchema(fields, nil), cols, b.NumRows()), nil
}

var doubleFn = data.BatchFunc("databench.addDouble", addDouble)

// tally is what the consumer of part (a) saw: rows, and a checksum over x2 (so both sides
// provably did the same work and the batches are really read).
type tally struct {
	rows    int64
	batches int64
	sum     float64
}

func (t *tally) consume(b arrow.Record) {
	t.rows += b.NumRows()
	t.batches++
	x2 := b.Column(int(b.NumCols()) - 1).(*array.Float64).Float64Values()
	s := 0.0
	for _, v := range x2 {
		s += v
	}
	t.sum += s
}

// etlRay is part (a) through ray-go: ReadParquet -> MapBatches(addDouble) -> IterBatches.
func etlRay(ctx context.Context, files []string, batch, parallelism int, progress bool) (tally, string, error) {
	var t tally
	ds := data.ReadParquet(files, data.Parallelism(parallelism)).MapBatches(doubleFn)
	for b, err := range ds.IterBatches(ctx, data.BatchSize(batch), data.Progress(progress)) {
		if err != nil {
			return t, ds.Stats(), err
		}
		t.consume(b)
	}
	return t, ds.Stats(), nil
}

// etlPlain is the anchor: the same read with pqarrow in this process, workers goroutines
// each reading whole files (all row groups, 64 Ki rows per decoded batch, as ray-go's
// reader), applying addDouble to each decoded batch and handing it to the consumer, which
// cuts it into batches of batch rows.
func etlPlain(ctx context.Context, files []string, batch, workers int) (tally, error) {
	var t tally
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan string, len(files))
	for _, f := range files {
		work <- f
	}
	close(work)
	out := make(chan arrow.Record, workers)
	errc := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for path := range work {
				if err := readPlain(ctx, path, out); err != nil {
					errc <- err
					cancel()
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(out) }()
	for rec := range out {
		n := rec.NumRows()
		for off := int64(0); off < n; off += int64(batch) {
			s := rec.NewSlice(off, min(off+int64(batch), n))
			t.consume(s)
			s.Release()
		}
		rec.Release()
	}
	select {
	case err := <-errc:
		return t, err
	default:
	}
	return t, ctx.Err()
}

func readPlain(ctx context.Context, path string, out chan<- arrow.Record) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	rdr, err := file.NewParquetReader(f, file.WithReadProps(parquet.NewReaderProperties(memory.DefaultAllocator)))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer rr.Release()
	for rr.Next() {
		rec, err := addDouble(ctx, rr.Record())
		if err != nil {
			return err
		}
		select {
		case out <- rec:
		case <-ctx.Done():
			rec.Release()
			return ctx.Err()
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// side is one measured variant: its trials.
type side struct {
	Name   string       `json:"name"`
	Trials []trialStats `json:"trials"`
}

type trialStats struct {
	WallS float64   `json:"wall_s"`
	Rows  int64     `json:"rows"`
	Mem   memResult `json:"mem"`
	CPUS  float64   `json:"cpu_s,omitempty"` // the process's CPU time (user+sys) during the trial (parts d, e, f)
}

// summary is the medians of a side's trials.
type summaryStats struct {
	Name      string  `json:"name"`
	WallS     float64 `json:"median_wall_s"`
	RowsPerS  float64 `json:"median_rows_per_s"`
	MBPerS    float64 `json:"median_mb_per_s"`
	PeakRSS   int64   `json:"median_peak_rss_bytes"`
	Baseline  int64   `json:"median_baseline_rss_bytes"`
	MinWallS  float64 `json:"min_wall_s"`
	MaxWallS  float64 `json:"max_wall_s"`
	MemMethod string  `json:"mem_method"`
	CPUS      float64 `json:"median_cpu_s,omitempty"`
}

func (s *side) summary(bytes int64) summaryStats {
	walls := make([]float64, len(s.Trials))
	peaks := make([]float64, len(s.Trials))
	bases := make([]float64, len(s.Trials))
	cpus := make([]float64, len(s.Trials))
	for i, t := range s.Trials {
		walls[i], peaks[i], bases[i], cpus[i] = t.WallS, float64(t.Mem.Peak), float64(t.Mem.Baseline), t.CPUS
	}
	w := median(walls)
	out := summaryStats{Name: s.Name, WallS: w, PeakRSS: int64(median(peaks)), Baseline: int64(median(bases)),
		MinWallS: minOf(walls), MaxWallS: maxOf(walls), CPUS: median(cpus)}
	if len(s.Trials) > 0 {
		out.MemMethod = s.Trials[0].Mem.Method
		if w > 0 {
			out.RowsPerS = float64(s.Trials[0].Rows) / w
			out.MBPerS = float64(bytes) / w / 1e6
		}
	}
	return out
}

// partA runs the ETL comparison: per trial ray-go, then pqarrow with one goroutine per
// core, then pqarrow with one goroutine, each after a GC and a reset of the peak RSS.
func partA(ctx context.Context, cfg config, sh shape, files []string) (*partAResult, error) {
	res := &partAResult{Shape: sh, Batch: cfg.batch, Workers: cfg.workers}
	ray := &side{Name: "ray-go data"}
	par := &side{Name: fmt.Sprintf("pqarrow, %d goroutines", cfg.workers)}
	ser := &side{Name: "pqarrow, 1 goroutine"}
	type variant struct {
		s   *side
		run func() (tally, error)
	}
	var stats string
	var variants []variant
	if cfg.variants["ray"] {
		variants = append(variants, variant{ray, func() (tally, error) {
			t, st, err := etlRay(ctx, files, cfg.batch, cfg.parallelism, cfg.progress)
			stats = st
			return t, err
		}})
	}
	if cfg.variants["pqarrow"] {
		variants = append(variants, variant{par, func() (tally, error) { return etlPlain(ctx, files, cfg.batch, cfg.workers) }})
	}
	if cfg.variants["pqarrow1"] && cfg.workers > 1 {
		variants = append(variants, variant{ser, func() (tally, error) { return etlPlain(ctx, files, cfg.batch, 1) }})
	}
	if len(variants) == 0 {
		return nil, fmt.Errorf("no variant selected")
	}
	if cfg.warmup {
		for _, v := range variants {
			if _, err := v.run(); err != nil {
				return nil, fmt.Errorf("%s (warm-up): %w", v.s.Name, err)
			}
		}
	}
	var want *tally
	for trial := 0; trial < cfg.trials; trial++ {
		for _, v := range variants {
			p := startProbe()
			start := time.Now()
			t, err := v.run()
			wall := time.Since(start)
			m := p.finish()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", v.s.Name, err)
			}
			if t.rows != sh.Rows {
				return nil, fmt.Errorf("%s: consumed %d rows, want %d", v.s.Name, t.rows, sh.Rows)
			}
			if want == nil {
				want = &t
			} else if relDiff(t.sum, want.sum) > 1e-9 {
				return nil, fmt.Errorf("%s: checksum %v, the first run had %v", v.s.Name, t.sum, want.sum)
			}
			v.s.Trials = append(v.s.Trials, trialStats{WallS: wall.Seconds(), Rows: t.rows, Mem: m})
			logf("a: trial %d %-26s %6.3f s  %5.2f M rows/s  peak RSS %s", trial+1, v.s.Name, wall.Seconds(),
				float64(t.rows)/wall.Seconds()/1e6, mib(m.Peak))
		}
	}
	for _, v := range variants {
		res.Sides = append(res.Sides, *v.s)
		res.Summaries = append(res.Summaries, v.s.summary(sh.ArrowBytes))
	}
	res.Stats = stats
	rate := map[*side]float64{}
	for i, v := range variants {
		rate[v.s] = res.Summaries[i].RowsPerS
	}
	if rate[ray] > 0 && rate[par] > 0 {
		res.Ratio = rate[ray] / rate[par]
	}
	if rate[ray] > 0 && rate[ser] > 0 {
		res.RatioSerial = rate[ray] / rate[ser]
	}
	return res, nil
}

type partAResult struct {
	Shape       shape          `json:"shape"`
	Batch       int            `json:"iter_batch_rows"`
	Workers     int            `json:"anchor_goroutines"`
	Sides       []side         `json:"sides"`
	Summaries   []summaryStats `json:"summaries"`
	Ratio       float64        `json:"ratio_ray_over_pqarrow"`
	RatioSerial float64        `json:"ratio_ray_over_pqarrow_1_goroutine,omitempty"`
	Stats       string         `json:"last_ray_stats"`
}

func relDiff(a, b float64) float64 {
	if a == b {
		return 0
	}
	d := a - b
	if d < 0 {
		d = -d
	}
	m := max(abs(a), abs(b))
	return d / m
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
