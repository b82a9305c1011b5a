// Command data benchmarks ray-go's Ray Data package (github.com/ray-go/ray/data) against
// plain Go doing the same work in the same process:
//
//	(a) etl:     ReadParquet -> MapBatches(add x2 = x*2) -> IterBatches, against pqarrow
//	             reading the same files with the same per-batch function (goal: ray-go at
//	             >= 80% of pqarrow's rows/s);
//	(b) infer:   Range -> MapBatches(BatchClass with an expensive setup, a 256x256 float32
//	             matmul per row) on ActorPool(1, N) -> IterBatches, against a plain Go loop;
//	(c) bounded: a dataset several times the object store streamed through a fresh runtime
//	             with a small store (ray.WithObjectStoreMemory): peak RSS, spilling.
//	(d) sort:    ReadParquet -> Sort -> WriteParquet of gensort-like records, checked like
//	             valsort, against plain Go sorting the same bytes in memory (goal >= 40%);
//	(e) groupby: GroupBy(key).Aggregate(Sum, Mean) of 20 M rows with 1 M keys, against a Go
//	             map (goal >= 50%);
//	(f) shuffle: RandomShuffle of 5 M rows then IterBatches, against an in-memory
//	             permutation (goal >= 50%). d, e, f run only when asked (-parts d,e,f).
//
//	go run ./benchmarks/data                       # all parts, defaults (well under 5 min on 2 cores)
//	go run ./benchmarks/data -parts a -trials 5    # only the ETL comparison
//	go run ./benchmarks/data -json                 # JSON on stdout, the table on stderr
//	go run ./benchmarks/data -parts a -cpuprofile cpu.out
//
// See README.md for the shapes, the method and how to read the figures.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"sort"
	"strings"
	"time"

	"github.com/ray-go/ray"
)

type config struct {
	rows         int64
	files        int
	rgRows       int64
	dir          string
	trials       int
	batch        int
	workers      int
	warmup       bool
	variants     map[string]bool
	parallelism  int
	progress     bool
	inferRows    int
	inferBlocks  int
	mapBatch     int
	actors       int
	poolMin      int
	timeout      time.Duration
	boundedData  int64
	boundedStore int64
	// (d), (e), (f)
	xTrials       int
	xMaxTasks     int
	sortBytes     int64
	sortFiles     int
	sortStore     int64 // (d) the local runtime's object store (0: the default)
	sortBaseline  bool
	groupRows     int64
	groupBlocks   int
	shuffleRows   int64
	shuffleBlocks int
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "databench: "+format+"\n", args...)
}

func numCPU() int { return runtime.NumCPU() }

func main() { os.Exit(run()) }

func run() int {
	var cfg config
	flag.Int64Var(&cfg.rows, "rows", 5_000_000, "(a) rows of the Parquet input")
	flag.IntVar(&cfg.files, "files", 8, "(a) Parquet files the rows are split over")
	flag.Int64Var(&cfg.rgRows, "rowgroup", 125_000, "(a) rows per Parquet row group")
	flag.StringVar(&cfg.dir, "dir", "", "(a) directory of the input: reused if an earlier run wrote the same shape there, else written (default: a temporary directory, removed at the end)")
	flag.IntVar(&cfg.trials, "trials", 5, "trials per variant of (a) and (b); medians are reported")
	flag.IntVar(&cfg.batch, "batch", 256, "(a) rows per batch consumed (IterBatches' BatchSize, the anchor's slices)")
	flag.IntVar(&cfg.workers, "workers", 0, "(a) goroutines of the pqarrow anchor (default: the cores)")
	flag.BoolVar(&cfg.warmup, "warmup", true, "(a) run each variant once untimed first")
	flag.IntVar(&cfg.parallelism, "parallelism", 0, "(a) ReadParquet's Parallelism option (default 0: the package's default, the cluster's CPUs but at least one read task per file)")
	variants := flag.String("variants", "ray,pqarrow,pqarrow1", "(a) variants to run: ray (ray-go), pqarrow (one goroutine per core), pqarrow1 (one goroutine); e.g. -variants ray to profile ray-go alone")
	flag.BoolVar(&cfg.progress, "progress", false, "draw the data package's progress bars (on a terminal)")
	flag.IntVar(&cfg.inferRows, "infer-rows", 80_000, "(b) rows to score")
	flag.IntVar(&cfg.inferBlocks, "infer-blocks", 16, "(b) blocks of the Range source")
	flag.IntVar(&cfg.mapBatch, "map-batch", 256, "(b) rows per MapBatches call")
	flag.IntVar(&cfg.actors, "actors", 0, "(b) the actor pool's max size, and the plain loop's goroutines (default: the cores)")
	flag.IntVar(&cfg.poolMin, "pool-min", 1, "(b) the actor pool's min size")
	setup := flag.Duration("setup", 200*time.Millisecond, "(b) sleep in each model setup, on top of building the matrix")
	boundedMiB := flag.Int64("bounded-mib", 1024, "(c) MiB of data streamed")
	storeMiB := flag.Int64("bounded-store-mib", 64, "(c) object store of the fresh runtime, MiB")
	parts := flag.String("parts", "a,b,c", "parts to run: any of a (etl), b (infer), c (bounded), d (sort), e (groupby), f (shuffle)")
	flag.IntVar(&cfg.xTrials, "x-trials", 3, "(d), (e), (f) trials per variant")
	flag.IntVar(&cfg.xMaxTasks, "x-max-tasks", 0, "(d), (e), (f) the data package's MaxTasksInFlight option (default 0: the package's default)")
	sortMiB := flag.Int64("sort-mib", 1024, "(d) MiB of 100-byte records to sort")
	flag.IntVar(&cfg.sortFiles, "sort-files", 16, "(d) Parquet files of the input")
	sortStoreMiB := flag.Int64("sort-store-mib", 0, "(d) the local runtime's object store, MiB (e.g. 512 with -sort-mib 2048: data 4x the store, which must spill; the other parts run with it too); 0: the default store")
	flag.BoolVar(&cfg.sortBaseline, "sort-baseline", true, "(d) also run the in-memory baseline (it holds the records and a sorted copy in memory: turn it off to measure ray-go's peak RSS alone)")
	flag.Int64Var(&cfg.groupRows, "groupby-rows", 20_000_000, "(e) rows")
	flag.Int64Var(&groupKeysFlag, "groupby-keys", 1_000_000, "(e) distinct keys")
	flag.IntVar(&cfg.groupBlocks, "groupby-blocks", 32, "(e) blocks of the Range source (and partitions)")
	flag.Int64Var(&cfg.shuffleRows, "shuffle-rows", 5_000_000, "(f) rows")
	flag.IntVar(&cfg.shuffleBlocks, "shuffle-blocks", 16, "(f) blocks of the Range source (and partitions)")
	quick := flag.Bool("quick", false, "(d), (e), (f) at small sizes: 128 MiB sort, 2 M rows of 100 k keys, 1 M rows shuffled")
	asJSON := flag.Bool("json", false, "print the results as one JSON object on stdout (the table goes to stderr)")
	address := flag.String("address", "", "run against the cluster at this GCS address (also RAY_ADDRESS) instead of a local runtime; (c) needs a local runtime and is skipped")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the measured parts to `file`")
	traceFile := flag.String("trace", "", "write an execution trace (go tool trace) of the measured parts to `file`")
	verbose := flag.Bool("v", false, "print ds.Stats() of the last ray-go run of each part")
	flag.DurationVar(&cfg.timeout, "timeout", 3*time.Minute, "give up on a part that takes longer (a stuck pipeline fails instead of hanging)")
	flag.Parse()

	if cfg.workers <= 0 {
		cfg.workers = runtime.NumCPU()
	}
	cfg.sortBytes = *sortMiB << 20
	cfg.sortStore = *sortStoreMiB << 20
	if cfg.sortBytes < 100 || cfg.sortStore < 0 {
		logf("-sort-mib must be positive and -sort-store-mib not negative")
		return 2
	}
	if *quick {
		cfg.sortBytes, cfg.groupRows, groupKeysFlag, cfg.shuffleRows = 128<<20, 2_000_000, 100_000, 1_000_000
	}
	if cfg.actors <= 0 {
		cfg.actors = runtime.NumCPU()
	}
	cfg.poolMin = min(max(cfg.poolMin, 1), cfg.actors)
	setupSleep = *setup
	cfg.boundedData = *boundedMiB << 20
	cfg.boundedStore = *storeMiB << 20
	cfg.variants = map[string]bool{}
	for _, v := range strings.Split(*variants, ",") {
		switch v = strings.TrimSpace(v); v {
		case "ray", "pqarrow", "pqarrow1":
			cfg.variants[v] = true
		case "":
		default:
			logf("-variants: unknown variant %q (ray, pqarrow or pqarrow1)", v)
			return 2
		}
	}
	want := map[string]bool{}
	for _, p := range strings.Split(*parts, ",") {
		switch p = strings.TrimSpace(p); p {
		case "a", "b", "c", "d", "e", "f":
			want[p] = true
		case "sort", "groupby", "shuffle":
			want[map[string]string{"sort": "d", "groupby": "e", "shuffle": "f"}[p]] = true
		case "":
		default:
			logf("-parts: unknown part %q (a, b, c, d, e or f)", p)
			return 2
		}
	}
	if cfg.trials < 1 || cfg.rows < 1 || cfg.files < 1 || cfg.rgRows < 1 || cfg.batch < 1 || cfg.inferRows < 1 || cfg.inferBlocks < 1 || cfg.mapBatch < 1 {
		logf("-trials, -rows, -files, -rowgroup, -batch, -infer-rows, -infer-blocks and -map-batch must be positive")
		return 2
	}
	if *address == "" {
		*address = os.Getenv(ray.AddressEnv)
	}

	wallStart := time.Now()
	var opts []ray.InitOption
	if *address != "" {
		opts = append(opts, ray.WithAddress(*address))
	}
	if cfg.sortStore > 0 && *address == "" {
		// One runtime only: the runtime sets the process's soft memory limit from the
		// store budgets of its nodes (ray.Init), so a second, default-sized runtime
		// would raise it by 30% of the machine.
		opts = append(opts, ray.WithObjectStoreMemory(cfg.sortStore))
	}
	// Init first: in a cluster's worker processes it never returns, so nothing below (such
	// as writing the input) runs there.
	ctx, err := ray.Init(context.Background(), opts...)
	if err != nil {
		logf("init: %v", err)
		return 1
	}
	defer func() {
		if err := ray.Shutdown(ctx); err != nil {
			logf("shutdown: %v", err)
		}
	}()
	mach := describeMachine()
	logf("%s", mach)
	out := report{Machine: mach, Address: *address, Command: strings.Join(os.Args, " ")}

	var a *partAResult
	var b *inferResult
	var c *boundedResult
	profile := func() func() {
		if *cpuProfile == "" {
			return func() {}
		}
		f, err := os.Create(*cpuProfile)
		if err != nil {
			logf("-cpuprofile: %v", err)
			return func() {}
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			logf("-cpuprofile: %v", err)
			f.Close()
			return func() {}
		}
		return func() { pprof.StopCPUProfile(); f.Close() }
	}
	if *traceFile != "" { // (the CPU profile's start/stop bracket the same parts)
		inner := profile
		profile = func() func() {
			stopCPU := inner()
			f, err := os.Create(*traceFile)
			if err != nil {
				logf("-trace: %v", err)
				return stopCPU
			}
			if err := trace.Start(f); err != nil {
				logf("-trace: %v", err)
				f.Close()
				return stopCPU
			}
			return func() { trace.Stop(); f.Close(); stopCPU() }
		}
	}

	if want["a"] {
		dir := cfg.dir
		if dir == "" {
			if dir, err = os.MkdirTemp("", "databench-"); err != nil {
				logf("%v", err)
				return 1
			}
			defer os.RemoveAll(dir)
		}
		start := time.Now()
		sh, files, err := prepare(dir, shape{Rows: cfg.rows, Files: cfg.files, RGRows: cfg.rgRows})
		if err != nil {
			logf("preparing the input: %v", err)
			return 1
		}
		logf("a: input %s: %d rows in %d files, row groups of %d rows, %s Parquet (snappy), %s in Arrow; ready in %v",
			dir, sh.Rows, sh.Files, sh.RGRows, mib(sh.FileBytes), mib(sh.ArrowBytes), time.Since(start).Round(time.Millisecond))
		stop := profile()
		pctx, cancel := context.WithTimeout(ctx, cfg.timeout)
		a, err = partA(pctx, cfg, sh, files)
		cancel()
		stop()
		if err != nil {
			logf("a: %v", err)
			return 1
		}
		out.ETL = a
	}
	if want["b"] {
		stop := func() {}
		if !want["a"] {
			stop = profile()
		}
		pctx, cancel := context.WithTimeout(ctx, cfg.timeout)
		b, err = partB(pctx, cfg, *address == "")
		cancel()
		stop()
		if err != nil {
			logf("b: %v", err)
			return 1
		}
		out.Infer = b
	}
	if want["c"] {
		if *address != "" {
			logf("c: skipped: it starts a local runtime with a small object store")
		} else {
			if c, err = partC(cfg); err != nil {
				logf("c: %v", err)
				return 1
			}
			out.Bounded = c
		}
	}
	xpart := func(name string, f func(context.Context) (*xResult, error)) (*xResult, bool) {
		stop := profile()
		defer stop()
		pctx, cancel := context.WithTimeout(ctx, cfg.timeout)
		defer cancel()
		r, err := f(pctx)
		if err != nil {
			logf("%s: %v", name, err)
			return nil, false
		}
		return r, true
	}
	if want["d"] && cfg.sortStore > 0 && *address != "" {
		logf("d: -sort-store-mib starts a local runtime; it cannot be used with -address")
		return 2
	}
	if want["d"] {
		dir, err := os.MkdirTemp(cfg.dir, "databench-sort-")
		if err != nil {
			logf("%v", err)
			return 1
		}
		r, ok := xpart("d", func(ctx context.Context) (*xResult, error) { return partD(ctx, cfg, dir) })
		os.RemoveAll(dir)
		if !ok {
			return 1
		}
		out.Sort = r
	}
	if want["e"] {
		r, ok := xpart("e", func(ctx context.Context) (*xResult, error) { return partE(ctx, cfg) })
		if !ok {
			return 1
		}
		out.GroupBy = r
	}
	if want["f"] {
		r, ok := xpart("f", func(ctx context.Context) (*xResult, error) { return partF(ctx, cfg) })
		if !ok {
			return 1
		}
		out.Shuffle = r
	}
	out.WallS = time.Since(wallStart).Seconds()

	table := io.Writer(os.Stdout)
	if *asJSON {
		table = os.Stderr
	}
	printTable(table, out, cfg, *verbose)
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			logf("%v", err)
			return 1
		}
	}
	return 0
}

type report struct {
	Machine machine        `json:"machine"`
	Address string         `json:"address,omitempty"`
	Command string         `json:"command"`
	WallS   float64        `json:"wall_s"`
	ETL     *partAResult   `json:"etl,omitempty"`
	Infer   *inferResult   `json:"infer,omitempty"`
	Bounded *boundedResult `json:"bounded,omitempty"`
	Sort    *xResult       `json:"sort,omitempty"`
	GroupBy *xResult       `json:"groupby,omitempty"`
	Shuffle *xResult       `json:"shuffle,omitempty"`
}

func printTable(w io.Writer, r report, cfg config, verbose bool) {
	fmt.Fprintln(w, r.Machine)
	where := "local runtime (ray.Init, no address): peak RSS covers the whole cluster"
	if r.Address != "" {
		where = "cluster " + r.Address + ": peak RSS is the driver's only"
	}
	fmt.Fprintf(w, "mode: %s; %d trials per variant of (a) and (b), %d of (d), (e), (f), medians; wall %.1f s\n", where, cfg.trials, cfg.xTrials, r.WallS)
	if a := r.ETL; a != nil {
		fmt.Fprintf(w, "\n(a) ReadParquet -> MapBatches(x2 = x*2) -> IterBatches(BatchSize %d)\n", a.Batch)
		fmt.Fprintf(w, "    input: %d rows (id int64, x float64, s string 16 B) in %d snappy files, row groups of %d rows; %s Parquet, %s Arrow (MB/s counts Arrow bytes)\n",
			a.Shape.Rows, a.Shape.Files, a.Shape.RGRows, mib(a.Shape.FileBytes), mib(a.Shape.ArrowBytes))
		printSummaries(w, a.Summaries, "rows/s", "MB/s")
		fmt.Fprintf(w, "    ratio ray-go / pqarrow (%d goroutines): %.3f (goal >= 0.80)", a.Workers, a.Ratio)
		if a.RatioSerial > 0 {
			fmt.Fprintf(w, "; ray-go / pqarrow (1 goroutine): %.3f", a.RatioSerial)
		}
		fmt.Fprintln(w)
		if verbose {
			fmt.Fprintf(w, "\n%s\n", indent(a.Stats))
		}
	}
	if b := r.Infer; b != nil {
		fmt.Fprintf(w, "\n(b) Range(%d, %d blocks) -> MapBatches(BatchClass: %dx%d float32 matrix + %.0f ms sleep; per row a 1x%d·%dx%d matmul; BatchSize %d) on ActorPool(%d,%d) -> IterBatches\n",
			b.Rows, b.Blocks, dim, dim, b.SetupSleep*1000, dim, dim, dim, b.MapBatch, b.MinActors, b.MaxActors)
		printSummaries(w, b.Summaries, "rows/s", "")
		fmt.Fprintf(w, "    ray-go actors used per trial: %v; setups run: %v; setup time summed over actors: %s\n",
			b.Actors, b.Setups, fmtSecs(b.SetupS))
		if len(b.SetupAt) > 0 {
			starts := make([]string, len(b.SetupAt))
			for i, s := range b.SetupAt {
				starts[i] = fmtSecs(s)
			}
			fmt.Fprintf(w, "    ray-go setups began (s after the pipeline started), per trial: %s\n", strings.Join(starts, " "))
		}
		fmt.Fprintf(w, "    ratio ray-go / plain Go (%d goroutines): %.3f\n", b.MaxActors, b.Overhead)
		if verbose {
			fmt.Fprintf(w, "\n%s\n", indent(b.Stats))
		}
	}
	if c := r.Bounded; c != nil {
		fmt.Fprintf(w, "\n(c) Range -> MapBatches(+1 KiB blob per row) -> IterBatches through a fresh runtime with a %s object store\n", mib(c.StoreBytes))
		fmt.Fprintf(w, "    %s in %d rows, %d blocks: %.2f s, %.0f rows/s, %.0f MB/s\n", mib(c.DataBytes), c.Rows, c.Blocks, c.WallS, c.RowsPerS, c.MBPerS)
		fmt.Fprintf(w, "    peak RSS %s (baseline %s, %s); peak block bytes held %s of a %s budget\n",
			mib(c.Mem.Peak), mib(c.Mem.Baseline), c.Mem.Method, mib(c.PeakHeld), mib(c.Budget))
		fmt.Fprintf(w, "    ray.Memory over %d samples: max %s in the store, max %d objects; spilled %d objects (%s)\n",
			c.Samples, mib(c.MaxStoreBytes), c.MaxStoreObjs, c.SpilledObjects, mib(c.SpilledBytes))
		if verbose {
			fmt.Fprintf(w, "\n%s\n", indent(c.Stats))
		}
	}
	printXParts(w, r, verbose)
}

func printXParts(w io.Writer, r report, verbose bool) {
	if x := r.Sort; x != nil {
		printX(w, "d", fmt.Sprintf("ReadParquet -> Sort(key) -> WriteParquet of %d gensort records (10-byte key, 90-byte value), %s; checked like valsort; baseline: the same bytes sorted in memory by plain Go", x.Rows, mib(x.Bytes)), x, verbose)
	}
	if x := r.GroupBy; x != nil {
		printX(w, "e", fmt.Sprintf("Range(%d) -> MapBatches(key = hash %% %d, x float64) -> GroupBy(key).Aggregate(Sum(x), Mean(x)) -> IterBatches; baseline: the same rows into a Go map", x.Rows, groupKeysFlag), x, verbose)
	}
	if x := r.Shuffle; x != nil {
		printX(w, "f", fmt.Sprintf("Range(%d) -> RandomShuffle -> IterBatches; baseline: an in-memory permutation (rand.Shuffle) cut into the same batches", x.Rows), x, verbose)
	}
}

func printSummaries(w io.Writer, ss []summaryStats, rateName, mbName string) {
	fmt.Fprintf(w, "    %-28s %12s", "variant", rateName)
	if mbName != "" {
		fmt.Fprintf(w, " %9s", mbName)
	}
	fmt.Fprintf(w, " %9s %17s %10s %10s\n", "wall s", "(min-max)", "peak RSS", "baseline")
	for _, s := range ss {
		fmt.Fprintf(w, "    %-28s %12.0f", s.Name, s.RowsPerS)
		if mbName != "" {
			fmt.Fprintf(w, " %9.0f", s.MBPerS)
		}
		fmt.Fprintf(w, " %9.3f %17s %10s %10s\n", s.WallS, fmt.Sprintf("(%.3f-%.3f)", s.MinWallS, s.MaxWallS), mib(s.PeakRSS), mib(s.Baseline))
	}
	if len(ss) > 0 {
		fmt.Fprintf(w, "    peak RSS: %s, median over trials, each trial after a GC\n", ss[0].MemMethod)
	}
}

func fmtSecs(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		if x < 0 {
			parts[i] = "n/a"
		} else {
			parts[i] = fmt.Sprintf("%.2fs", x)
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func minOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	m := v[0]
	for _, x := range v {
		m = min(m, x)
	}
	return m
}

func maxOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	m := v[0]
	for _, x := range v {
		m = max(m, x)
	}
	return m
}
