package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/ray-go/ray/data"
)

// dim is the model's width: every row becomes a dim-vector that is multiplied by a
// dim x dim float32 matrix.
const dim = 256

// setupSleep is the model's extra load time (set by -setup before any setup runs).
var setupSleep = 200 * time.Millisecond

// Setup counters of this process (local mode: actors run here too).
var (
	setups  atomic.Int64
	setupNs atomic.Int64

	setupMu     sync.Mutex
	setupStarts []time.Time // when each setup began
)

// setupOffsets returns when the setups that began at or after t0 began, relative to t0.
func setupOffsets(t0 time.Time) []float64 {
	setupMu.Lock()
	defer setupMu.Unlock()
	var out []float64
	for _, t := range setupStarts {
		if !t.Before(t0) {
			out = append(out, t.Sub(t0).Seconds())
		}
	}
	return out
}

// newModel is the expensive setup: it builds the weight matrix and sleeps, as loading a
// model would; it returns the per-batch function.
func newModel(_ context.Context) (func(context.Context, arrow.Record) (arrow.Record, error), error) {
	start := time.Now()
	setupMu.Lock()
	setupStarts = append(setupStarts, start)
	setupMu.Unlock()
	w := make([]float32, dim*dim)
	for i := range w {
		w[i] = float32(mix(uint64(i))>>40)/float32(1<<24) - 0.5
	}
	time.Sleep(setupSleep)
	setups.Add(1)
	setupNs.Add(int64(time.Since(start)))
	return func(_ context.Context, b arrow.Record) (arrow.Record, error) { return infer(w, b) }, nil
}

var embedFn = data.BatchClass("databench.embed", newModel)

var scoreSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "score", Type: arrow.PrimitiveTypes.Float32},
}, nil)

// infer computes, for the batch's rows, features X (rows x dim, a function of id), Y = X·W,
// and per row score = max_j Y[j]; it returns (id, score).
func infer(w []float32, b arrow.Record) (arrow.Record, error) {
	ids, ok := b.Column(0).(*array.Int64)
	if !ok {
		return nil, fmt.Errorf("column 0 is %s, want int64 ids", b.Column(0).DataType())
	}
	n := ids.Len()
	x := make([]float32, dim)
	y := make([]float32, dim)
	sb := array.NewFloat32Builder(memory.DefaultAllocator)
	defer sb.Release()
	sb.Reserve(n)
	for r := 0; r < n; r++ {
		id := ids.Value(r)
		for k := range x {
			x[k] = float32((id*int64(k+1))%255) / 255
		}
		clear(y)
		for k, xk := range x {
			row := w[k*dim : (k+1)*dim]
			for j := range y {
				y[j] += xk * row[j]
			}
		}
		best := y[0]
		for _, v := range y[1:] {
			best = max(best, v)
		}
		sb.UnsafeAppend(best)
	}
	scores := sb.NewArray()
	defer scores.Release()
	return array.NewRecord(scoreSchema, []arrow.Array{ids, scores}, int64(n)), nil
}

// inferResult is part (b).
type inferResult struct {
	Rows       int            `json:"rows"`
	Blocks     int            `json:"blocks"`
	MapBatch   int            `json:"map_batch_rows"`
	MinActors  int            `json:"min_actors"`
	MaxActors  int            `json:"max_actors"`
	SetupSleep float64        `json:"setup_sleep_s"`
	Sides      []side         `json:"sides"`
	Summaries  []summaryStats `json:"summaries"`
	Actors     []int          `json:"ray_actors_used_per_trial"`
	Setups     []int64        `json:"ray_setups_per_trial"` // -1: not observable (cluster)
	SetupS     []float64      `json:"ray_setup_s_total_per_trial"`
	SetupAt    [][]float64    `json:"ray_setup_start_s_per_trial"` // when each actor's setup began, after the pipeline started
	Overhead   float64        `json:"ray_over_plain_parallel"`
	Stats      string         `json:"last_ray_stats"`
}

var actorsRe = regexp.MustCompile(`Actors used: (\d+)`)

func inferRay(ctx context.Context, cfg config) (float64, int, string, error) {
	ds := data.Range(cfg.inferRows, data.Parallelism(cfg.inferBlocks)).
		MapBatches(embedFn, data.ActorPool(cfg.poolMin, cfg.actors), data.BatchSize(cfg.mapBatch))
	var sum float64
	rows := 0
	for b, err := range ds.IterBatches(ctx, data.BatchSize(1024), data.Progress(cfg.progress)) {
		if err != nil {
			return 0, 0, ds.Stats(), err
		}
		for _, v := range b.Column(1).(*array.Float32).Float32Values() {
			sum += float64(v)
		}
		rows += int(b.NumRows())
	}
	if rows != cfg.inferRows {
		return 0, 0, ds.Stats(), fmt.Errorf("%d rows, want %d", rows, cfg.inferRows)
	}
	return sum, rows, ds.Stats(), nil
}

// inferPlain does the same work without ray-go: workers goroutines, each running the setup
// once (like one actor), take the same blocks as Range's read tasks and cut them into the
// same batches.
func inferPlain(ctx context.Context, cfg config, workers int) (float64, error) {
	n, nb := int64(cfg.inferRows), int64(cfg.inferBlocks)
	blocks := make(chan [2]int64, nb)
	for i := int64(0); i < nb; i++ {
		blocks <- [2]int64{n * i / nb, n * (i + 1) / nb}
	}
	close(blocks)
	sums := make([]float64, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for wi := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn, err := newModel(ctx)
			if err != nil {
				errs[wi] = err
				return
			}
			for blk := range blocks {
				bld := array.NewInt64Builder(memory.DefaultAllocator)
				bld.Reserve(int(blk[1] - blk[0]))
				for id := blk[0]; id < blk[1]; id++ {
					bld.UnsafeAppend(id)
				}
				col := bld.NewArray()
				bld.Release()
				rec := array.NewRecord(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, int64(col.Len()))
				col.Release()
				for off := int64(0); off < rec.NumRows(); off += int64(cfg.mapBatch) {
					s := rec.NewSlice(off, min(off+int64(cfg.mapBatch), rec.NumRows()))
					out, err := fn(ctx, s)
					s.Release()
					if err != nil {
						errs[wi] = err
						rec.Release()
						return
					}
					for _, v := range out.Column(1).(*array.Float32).Float32Values() {
						sums[wi] += float64(v)
					}
					out.Release()
				}
				rec.Release()
			}
		}()
	}
	wg.Wait()
	total := 0.0
	for i := range sums {
		if errs[i] != nil {
			return 0, errs[i]
		}
		total += sums[i]
	}
	return total, nil
}

// partB runs the batch-inference comparison: per trial ray-go with an actor pool, then the
// plain loop with one goroutine per actor, then with one goroutine.
func partB(ctx context.Context, cfg config, local bool) (*inferResult, error) {
	res := &inferResult{Rows: cfg.inferRows, Blocks: cfg.inferBlocks, MapBatch: cfg.mapBatch, MinActors: cfg.poolMin, MaxActors: cfg.actors, SetupSleep: setupSleep.Seconds()}
	ray := &side{Name: fmt.Sprintf("ray-go ActorPool(%d,%d)", cfg.poolMin, cfg.actors)}
	par := &side{Name: fmt.Sprintf("plain Go, %d goroutines", cfg.actors)}
	ser := &side{Name: "plain Go, 1 goroutine"}
	var want float64
	have := false
	check := func(name string, sum float64) error {
		if !have {
			want, have = sum, true
			return nil
		}
		if relDiff(sum, want) > 1e-9 {
			return fmt.Errorf("%s: checksum %v, the first run had %v", name, sum, want)
		}
		return nil
	}
	for trial := 0; trial < cfg.trials; trial++ {
		// ray-go
		s0, ns0 := setups.Load(), setupNs.Load()
		p := startProbe()
		start := time.Now()
		sum, rows, stats, err := inferRay(ctx, cfg)
		wall := time.Since(start)
		m := p.finish()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ray.Name, err)
		}
		if err := check(ray.Name, sum); err != nil {
			return nil, err
		}
		res.Stats = stats
		actors := -1
		if mm := actorsRe.FindStringSubmatch(stats); mm != nil {
			actors, _ = strconv.Atoi(mm[1])
		}
		res.Actors = append(res.Actors, actors)
		if local {
			res.Setups = append(res.Setups, setups.Load()-s0)
			res.SetupS = append(res.SetupS, time.Duration(setupNs.Load()-ns0).Seconds())
			res.SetupAt = append(res.SetupAt, setupOffsets(start))
		} else {
			res.Setups = append(res.Setups, -1)
			res.SetupS = append(res.SetupS, -1)
		}
		ray.Trials = append(ray.Trials, trialStats{WallS: wall.Seconds(), Rows: int64(rows), Mem: m})
		setupInfo := "setups n/a (they run in the cluster's workers)"
		if local {
			setupInfo = fmt.Sprintf("setups %d (began at %s)", res.Setups[len(res.Setups)-1], fmtSecs(res.SetupAt[len(res.SetupAt)-1]))
		}
		logf("b: trial %d %-26s %6.3f s  %8.0f rows/s  actors %d  %s  peak RSS %s", trial+1, ray.Name, wall.Seconds(),
			float64(rows)/wall.Seconds(), actors, setupInfo, mib(m.Peak))

		for _, v := range []struct {
			s       *side
			workers int
		}{{par, cfg.actors}, {ser, 1}} {
			if v.workers == 1 && cfg.actors == 1 && v.s == ser {
				continue
			}
			p := startProbe()
			start := time.Now()
			sum, err := inferPlain(ctx, cfg, v.workers)
			wall := time.Since(start)
			m := p.finish()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", v.s.Name, err)
			}
			if err := check(v.s.Name, sum); err != nil {
				return nil, err
			}
			v.s.Trials = append(v.s.Trials, trialStats{WallS: wall.Seconds(), Rows: int64(cfg.inferRows), Mem: m})
			logf("b: trial %d %-26s %6.3f s  %8.0f rows/s  peak RSS %s", trial+1, v.s.Name, wall.Seconds(),
				float64(cfg.inferRows)/wall.Seconds(), mib(m.Peak))
		}
	}
	for _, s := range []*side{ray, par, ser} {
		if len(s.Trials) == 0 {
			continue
		}
		res.Sides = append(res.Sides, *s)
		res.Summaries = append(res.Summaries, s.summary(int64(cfg.inferRows)*8))
	}
	if res.Summaries[1].RowsPerS > 0 {
		res.Overhead = res.Summaries[0].RowsPerS / res.Summaries[1].RowsPerS
	}
	return res, nil
}
