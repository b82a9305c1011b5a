package perf

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"time"

	"github.com/ray-go/ray"
)

// metric is one named measurement.
type metric struct {
	name      string
	unit      string
	body      string // what one timed body does (README and -list)
	anchor    string // substrate: the figure BENCHMARKS.md gives
	substrate bool
	setup     func(*env) (*bench, error)
}

// bench is a prepared metric: its body, multiplier and what to undo afterwards.
type bench struct {
	multiplier float64
	run        func() error
	cleanup    func()
}

// env is what setups share.
type env struct {
	ctx      context.Context // the main runtime (lineage on)
	initOpts []ray.InitOption
	sizes    sizes
	address  string // -address: running against a cluster
}

// rayValues are Ray 2.48.0's published figures (BENCHMARKS.md §1).
var rayValues = map[string]float64{
	"single_client_get_calls_Plasma_Store":         10620,
	"single_client_put_calls_Plasma_Store":         5173,
	"multi_client_put_calls_Plasma_Store":          16526,
	"single_client_put_gigabytes":                  19.9,
	"multi_client_put_gigabytes":                   38.1,
	"single_client_tasks_sync":                     981,
	"single_client_tasks_async":                    8041,
	"multi_client_tasks_async":                     21230,
	"1_1_actor_calls_sync":                         2012,
	"1_1_actor_calls_async":                        8664,
	"1_1_actor_calls_concurrent":                   5775,
	"1_n_actor_calls_async":                        8038,
	"n_n_actor_calls_async":                        27376,
	"n_n_actor_calls_with_arg_async":               2759,
	"single_client_get_object_containing_10k_refs": 13.4,
	"single_client_wait_1k_refs":                   5.1,
	"placement_group_create/removal":               765,
}

const lineageRatio = "lineage_overhead_ratio"

// refcountRatio is the share of single_client_tasks_async's time per task that its
// reference counting takes (reference_counting_ops measured in the same run).
const refcountRatio = "refcount_overhead_ratio"

// exactlyOnceRatios are the derived ratios of an exactly-once actor metric to its
// at-most-once twin measured in the same run.
var exactlyOnceRatios = []string{"1_1_actor_calls_async", "1_1_actor_calls_concurrent", "1_n_actor_calls_async", "n_n_actor_calls_async"}

// result is one reported entry.
type result struct {
	name    string
	unit    string
	anchor  string
	sub     bool
	derived bool
	st      stat
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "microbench: "+format+"\n", args...)
}

// Microbench runs the microbenchmark with the command-line arguments args (without the
// program name) and returns the exit status: benchmarks/microbench's whole program, and
// the child process of benchmarks/scale.
func Microbench(args []string) int {
	flag := flag.NewFlagSet("microbench", flag.ContinueOnError)
	quick := flag.Bool("quick", false, "CI-sized run: 0.2 s warm-up, 3 trials of 0.3 s, smaller big-object and batch sizes")
	asJSON := flag.Bool("json", false, `print one JSON object {"<metric>": {"mean": x, "sd": y}, ...} on stdout`)
	only := flag.String("only", "", "run only the metrics whose name matches this regexp")
	list := flag.Bool("list", false, "list the metrics and what their bodies do, then exit")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the timed part to `file`")
	memProfile := flag.String("memprofile", "", "write a heap profile (after the timed part) to `file`")
	cpus := flag.Float64("cpus", 0, "CPUs of the node (default: the machine's)")
	warmup := flag.Duration("warmup", 0, "override the warm-up duration")
	trialDur := flag.Duration("trial", 0, "override the minimum duration of a trial")
	trials := flag.Int("trials", 0, "override the number of trials")
	taskEvents := flag.Bool("task-events", true, "record task events for the state API (false: ray.WithTaskEvents(-1), the switch that measures what recording costs)")
	taskEventsKept := flag.Int("task-events-kept", 0, "with -task-events, how many task records to keep (ray.WithTaskEvents; 0: the default, 1M)")
	storeBytes := flag.Int64("object-store-memory", 0, "object store budget in bytes (default 30% of RAM); a small one makes the big puts spill")
	address := flag.String("address", "", "run against the cluster at this GCS address (as `rayctl start` prints it; also RAY_ADDRESS) instead of a local runtime; the cross_node_* metrics need it")
	mutexProfile := flag.String("mutexprofile", "", "write a mutex profile of the timed part to `file` (runtime.SetMutexProfileFraction(1) from after ray.Init)")
	traceFile := flag.String("trace", "", "write an execution trace (runtime/trace) of the timed part to `file`")
	if err := flag.Parse(args); err != nil {
		return 2
	}

	t, sz := timing{warmup: time.Second, trialDur: 2 * time.Second, trials: 4}, fullSizes
	if *quick {
		t, sz = timing{warmup: 200 * time.Millisecond, trialDur: 300 * time.Millisecond, trials: 3}, quickSizes
	}
	if *warmup > 0 {
		t.warmup = *warmup
	}
	if *trialDur > 0 {
		t.trialDur = *trialDur
	}
	if *trials > 0 {
		t.trials = *trials
	}

	all := append(append(append(append(coreMetrics(), refcountMetric(), spillingPutMetric()), actorMetrics()...), crossNodeMetrics()...), append(substrateMetrics(), pipelineMetric(), singleMetric(), nnMetric())...)
	if *list {
		for _, m := range all {
			fmt.Printf("%-42s %-14s %s\n", m.name, m.unit, m.body)
		}
		fmt.Printf("%-42s %-14s %s\n", lineageRatio, "ratio", "single_client_tasks_async_fresh / single_client_tasks_async_no_lineage")
		fmt.Printf("%-42s %-14s %s\n", refcountRatio, "ratio", "single_client_tasks_async / reference_counting_ops: the share of a task's time spent counting references")
		for _, m := range exactlyOnceRatios {
			fmt.Printf("%-42s %-14s %s\n", m+"_exactly_once_ratio", "ratio", m+"_exactly_once / "+m)
		}
		return 0
	}
	var re *regexp.Regexp
	if *only != "" {
		var err error
		if re, err = regexp.Compile(*only); err != nil {
			logf("-only: %v", err)
			return 2
		}
	}
	var selected []*metric
	needRuntime := false
	for _, m := range all {
		if re == nil || re.MatchString(m.name) {
			selected = append(selected, m)
			needRuntime = needRuntime || !m.substrate
		}
	}
	if len(selected) == 0 {
		logf("-only %q matches no metric (see -list)", *only)
		return 2
	}

	wallStart := time.Now()
	e := &env{sizes: sz}
	if *cpus > 0 {
		e.initOpts = append(e.initOpts, ray.WithNumCPUs(*cpus))
	}
	if *storeBytes > 0 {
		e.initOpts = append(e.initOpts, ray.WithObjectStoreMemory(*storeBytes))
	}
	if !*taskEvents {
		e.initOpts = append(e.initOpts, ray.WithTaskEvents(-1))
	} else if *taskEventsKept > 0 {
		e.initOpts = append(e.initOpts, ray.WithTaskEvents(*taskEventsKept))
	}
	if *address == "" {
		*address = os.Getenv(ray.AddressEnv)
	}
	e.address = *address
	if *address != "" {
		e.initOpts = append(e.initOpts, ray.WithAddress(*address))
	} else if re == nil {
		// Without a cluster the cross-node metrics have no other node: leave them out
		// unless asked for by name.
		var kept []*metric
		for _, m := range selected {
			if !strings.HasPrefix(m.name, "cross_node_") {
				kept = append(kept, m)
			}
		}
		selected = kept
	}
	logf("GOMAXPROCS %d, NumCPU %d, %s; warm-up %v, %d trials of >= %v; load %s",
		runtime.GOMAXPROCS(0), runtime.NumCPU(), runtime.Version(), t.warmup, t.trials, t.trialDur, LoadAvg())
	if needRuntime {
		start := time.Now()
		ctx, err := ray.Init(context.Background(), e.initOpts...)
		if err != nil {
			logf("init: %v", err)
			return 1
		}
		e.ctx = ctx
		defer func() {
			start := time.Now()
			if err := ray.Shutdown(ctx); err != nil {
				logf("shutdown: %v", err)
			}
			logf("shutdown took %v", time.Since(start).Round(time.Millisecond))
		}()
		logf("ray.Init took %v", time.Since(start).Round(time.Millisecond))
	}

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			logf("-cpuprofile: %v", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			logf("-cpuprofile: %v", err)
			return 1
		}
	}
	if *mutexProfile != "" {
		runtime.SetMutexProfileFraction(1)
	}
	if *traceFile != "" {
		f, err := os.Create(*traceFile)
		if err != nil {
			logf("-trace: %v", err)
			return 1
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			logf("-trace: %v", err)
			return 1
		}
	}
	var results []result
	failed := 0
	for _, m := range selected {
		st, err := measure(e, t, m)
		if err != nil {
			logf("%s: FAILED: %v", m.name, err)
			failed++
			continue
		}
		results = append(results, result{name: m.name, unit: m.unit, anchor: m.anchor, sub: m.substrate, st: st})
	}
	if *cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if *traceFile != "" {
		trace.Stop()
	}
	if *mutexProfile != "" {
		if err := WriteProfile("mutex", *mutexProfile); err != nil {
			logf("-mutexprofile: %v", err)
		}
		runtime.SetMutexProfileFraction(0)
	}
	if *memProfile != "" {
		if err := writeHeapProfile(*memProfile); err != nil {
			logf("-memprofile: %v", err)
		}
	}
	results = addDerived(results)

	if *asJSON {
		if err := writeJSON(os.Stdout, results); err != nil {
			logf("json: %v", err)
			return 1
		}
	} else {
		writeTable(os.Stdout, results)
	}
	logf("done in %v; load %s", time.Since(wallStart).Round(time.Millisecond), LoadAvg())
	if failed > 0 {
		logf("%d metric(s) failed", failed)
		return 1
	}
	return 0
}

// measure prepares one metric, times it and undoes its setup.
func measure(e *env, t timing, m *metric) (stat, error) {
	runtime.GC() // garbage of the previous metric (big puts) is not charged to this one
	start := time.Now()
	b, err := m.setup(e)
	if err != nil {
		return stat{}, fmt.Errorf("setup: %w", err)
	}
	if b.cleanup != nil {
		defer b.cleanup()
	}
	allocs0, bytes0 := heapAllocs()
	cpu0, wall0, wait0, msgs0 := ProcessCPU(), time.Now(), mutexWait(), messages(e)
	st, err := timeit(t, b.multiplier, b.run)
	if err != nil {
		return stat{}, err
	}
	if ops := float64(st.Bodies+st.WarmupBodies) * b.multiplier; ops > 0 {
		// Counted over the warm-up and the trials, divided by their operations (the
		// warm-up ran the same body).
		st.MutexWaitPerOp = float64(mutexWait()-wait0) / ops
		allocs, bytes := heapAllocs()
		st.AllocsPerOp, st.BytesPerOp = float64(allocs-allocs0)/ops, float64(bytes-bytes0)/ops
		st.MessagesPerOp = float64(messages(e)-msgs0) / ops
	}
	// How many of the machine's cores this process got while timing: well under
	// GOMAXPROCS for a CPU-bound body means neighbours took the rest.
	cores := (ProcessCPU() - cpu0).Seconds() / time.Since(wall0).Seconds()
	trials := make([]string, len(st.Trials))
	for i, x := range st.Trials {
		trials[i] = format(x)
	}
	logf("%-42s %12s ± %-10s %-14s trials [%s], %d bodies, step %d, %.1fs, %.2f cores used, %.1f allocs/op, %.0f B/op, %.2f messages/op, load %s",
		m.name, format(st.Mean), format(st.SD), m.unit, strings.Join(trials, " "), st.Bodies, st.Step,
		time.Since(start).Seconds(), cores, st.AllocsPerOp, st.BytesPerOp, st.MessagesPerOp, LoadAvg())
	return st, nil
}

// addDerived appends lineage_overhead_ratio when both of its inputs were measured: the
// lineage-on and lineage-off runs on fresh runtimes, measured one after the other.
func addDerived(rs []result) []result {
	var on, off float64
	for _, r := range rs {
		switch r.name {
		case "single_client_tasks_async_fresh":
			on = r.st.Mean
		case "single_client_tasks_async_no_lineage":
			off = r.st.Mean
		}
	}
	if on > 0 && off > 0 {
		rs = append(rs, result{name: lineageRatio, unit: "ratio", derived: true, st: stat{Mean: on / off}})
	}
	means := map[string]float64{}
	for _, r := range rs {
		means[r.name] = r.st.Mean
	}
	if tasks, rc := means["single_client_tasks_async"], means["reference_counting_ops"]; tasks > 0 && rc > 0 {
		// time per task spent on reference counting / time per task
		rs = append(rs, result{name: refcountRatio, unit: "ratio", derived: true, st: stat{Mean: tasks / rc}})
	}
	for _, m := range exactlyOnceRatios {
		if amo, eo := means[m], means[m+"_exactly_once"]; amo > 0 && eo > 0 {
			rs = append(rs, result{name: m + "_exactly_once_ratio", unit: "ratio", derived: true, st: stat{Mean: eo / amo}})
		}
	}
	return rs
}

func writeHeapProfile(path string) error {
	runtime.GC() // up-to-date in-use figures
	return WriteProfile("heap", path)
}

// WriteProfile writes the named runtime/pprof profile to path.
func WriteProfile(name, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeJSON prints {"metric": {"mean": x, "sd": y}, ...} in run order.
func writeJSON(w io.Writer, rs []result) error {
	var b strings.Builder
	b.WriteString("{\n")
	for i, r := range rs {
		k, err := json.Marshal(r.name)
		if err != nil {
			return err
		}
		v, err := json.Marshal(struct {
			Mean           float64 `json:"mean"`
			SD             float64 `json:"sd"`
			MutexWaitPerOp float64 `json:"mutex_wait_ns_per_op,omitempty"`
			AllocsPerOp    float64 `json:"allocs_per_op,omitempty"`
			BytesPerOp     float64 `json:"bytes_per_op,omitempty"`
			MessagesPerOp  float64 `json:"messages_per_op,omitempty"`
		}{finite(r.st.Mean), finite(r.st.SD), finite(r.st.MutexWaitPerOp), finite(r.st.AllocsPerOp), finite(r.st.BytesPerOp), finite(r.st.MessagesPerOp)})
		if err != nil {
			return err
		}
		sep := ","
		if i == len(rs)-1 {
			sep = ""
		}
		fmt.Fprintf(&b, "  %s: %s%s\n", k, v, sep)
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}

// writeTable prints the core metrics against Ray 2.48 and the substrate figures against
// BENCHMARKS.md's anchors.
func writeTable(w io.Writer, rs []result) {
	const row = "%-42s %12s %10s %-11s %10s %9s\n"
	var core, sub []result
	for _, r := range rs {
		if r.sub {
			sub = append(sub, r)
		} else {
			core = append(core, r)
		}
	}
	if len(core) > 0 {
		fmt.Fprintf(w, row, "metric", "mean", "sd", "unit", "Ray 2.48", "ours/Ray")
		for _, r := range core {
			rv, ratio := "-", "-"
			if v, ok := rayValues[r.name]; ok {
				rv, ratio = format(v), fmt.Sprintf("%.2f", r.st.Mean/v)
			}
			sd := format(r.st.SD)
			if r.derived {
				sd = "-"
			}
			fmt.Fprintf(w, row, r.name, format(r.st.Mean), sd, r.unit, rv, ratio)
		}
	}
	if len(sub) > 0 {
		if len(core) > 0 {
			fmt.Fprintln(w)
		}
		const srow = "%-42s %12s %10s %-14s %s\n"
		fmt.Fprintf(w, srow, "substrate (same run)", "mean", "sd", "unit", "BENCHMARKS.md anchor")
		for _, r := range sub {
			fmt.Fprintf(w, srow, r.name, format(r.st.Mean), format(r.st.SD), r.unit, r.anchor)
		}
	}
}

// format prints a rate with about four significant digits.
func format(x float64) string {
	switch ax := math.Abs(x); {
	case ax >= 1000:
		return fmt.Sprintf("%.0f", x)
	case ax >= 100:
		return fmt.Sprintf("%.1f", x)
	case ax >= 10:
		return fmt.Sprintf("%.2f", x)
	default:
		return fmt.Sprintf("%.3f", x)
	}
}

// messages is how many messages the runtime's actors handled so far (0 without one).
func messages(e *env) int64 {
	if e.ctx == nil {
		return 0
	}
	st, err := ray.Stats(e.ctx)
	if err != nil {
		return 0
	}
	return st.MessagesHandled
}
