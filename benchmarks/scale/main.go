// Command scale measures how ray-go's throughput grows with cores: it runs workloads of
// the microbenchmark (benchmarks/internal/perf, the bodies of benchmarks/microbench) at 1,
// 2, 4, ... up to all of the machine's cores, each core count in a child process pinned to
// that many cores (sched_setaffinity, GOMAXPROCS to match), and prints one JSON object:
//
//	{"cores": {"<metric>": {"1": ops/s, "2": ops/s, ...}},
//	 "speedup": {"<metric>": ops/s at all cores / ops/s at 1 core},
//	 "mutex_wait_ns_per_op": {"<metric>": at all cores},
//	 "goals": [...], "machine": {...}}
//
//	go run ./benchmarks/scale -quick -json      # CI-sized, under 3 minutes on 2 cores
//	go run ./benchmarks/scale                   # the full method of each metric
//	go run ./benchmarks/scale -runs 5           # 5 rounds, medians (noisy machines)
//	go run ./benchmarks/scale -profiles DIR     # CPU and mutex profiles at all cores
//
// Mutex wait is the runtime's own count of time goroutines spent blocked on mutexes
// (runtime/metrics /sync/mutex/wait/total), per operation; -profiles writes the pprof
// mutex and CPU profiles of the all-cores child, per round, for `go tool pprof`.
// The same program runs unchanged on any machine: a 64-core user sees their own curve.
//
// With -nodes it measures nodes instead of cores (issue 20; nodes.go, simcp.go): real
// clusters of 1, 2, 4, 8 node processes started with rayctl on 127.0.0.1, one submitter per
// node, against one node with the same total CPUs; then N nodes in this process
// (internal/assembly/testcluster) counting messages (also by type) and GCS bytes per task:
//
//	go run ./benchmarks/scale -nodes -json                      # both parts, about 3-6 minutes here
//	go run ./benchmarks/scale -nodes -sim-counts ""             # the real clusters only
//	go run ./benchmarks/scale -nodes -node-counts "" -sim-counts 1,4,16 -sim-heap-profiles DIR
//	go run ./benchmarks/scale -nodes -node-counts "" -sim-counts 1,4,16,32 -sim-tasks 3000 -sim-rate 600  # paced
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ray-go/ray/benchmarks/internal/perf"
)

// childFlag makes the program the child of one core count: the microbenchmark itself.
const childFlag = "-scale-child"

// defaultMetrics are the workloads of the scale issue.
var defaultMetrics = []string{
	"single_client_tasks_async",
	"multi_client_tasks_async",
	"n_n_actor_calls_async",
	"1_n_actor_calls_async",
	"multi_client_put_calls_Plasma_Store",
	"substrate_go_pipeline", // the machine's ceiling for multi_client_tasks_async's shape, in plain Go
	"substrate_go_single",   // the same for single_client_tasks_async's shape
	"substrate_go_nn",       // the same for n_n_actor_calls_async's shape
}

// goal is a speedup the program checks (on a machine with this many cores).
type goal struct {
	Metric  string  `json:"metric"`
	Cores   int     `json:"cores"`
	Speedup float64 `json:"min_speedup"`
	Got     float64 `json:"speedup"`
	Met     bool    `json:"met"`
	// Ceiling is the plain-Go metric of the same shape and per-task CPU, if there is one:
	// its speedup in the same run (CeilingGot) is what this machine allows that shape.
	Ceiling    string  `json:"ceiling_metric,omitempty"`
	CeilingGot float64 `json:"ceiling_speedup,omitempty"`
}

// goals: at 2 cores (the machine of the scale issue) and at 16.
var goals = []goal{
	{Metric: "multi_client_tasks_async", Cores: 2, Speedup: 1.8, Ceiling: "substrate_go_pipeline"},
	{Metric: "n_n_actor_calls_async", Cores: 2, Speedup: 1.8, Ceiling: "substrate_go_nn"},
	{Metric: "single_client_tasks_async", Cores: 2, Speedup: 1.5, Ceiling: "substrate_go_single"},
}

type childResult struct {
	Mean           float64 `json:"mean"`
	SD             float64 `json:"sd"`
	MutexWaitPerOp float64 `json:"mutex_wait_ns_per_op"`
}

type report struct {
	Cores     map[string]map[string]float64 `json:"cores"`
	Speedup   map[string]float64            `json:"speedup"`
	MutexWait map[string]float64            `json:"mutex_wait_ns_per_op"`
	Goals     []goal                        `json:"goals,omitempty"`
	Runs      int                           `json:"runs"`
	Machine   machine                       `json:"machine"`
}

type machine struct {
	CPUs      []int  `json:"cpus"`
	Pinned    bool   `json:"pinned"`
	Model     string `json:"cpu_model,omitempty"`
	MemoryGiB int    `json:"memory_gib,omitempty"`
	GoVersion string `json:"go"`
	OS        string `json:"os"`
	Load      string `json:"load_before,omitempty"`
	// WakeP50 and WakeP99 (µs): how long a goroutine takes to run on an idle core after a
	// send from a busy one, with all the cores (wakeLatency).
	WakeP50 float64 `json:"wake_us_p50,omitempty"`
	WakeP99 float64 `json:"wake_us_p99,omitempty"`
}

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, "scale: "+format+"\n", args...) }

func main() {
	if len(os.Args) > 1 && os.Args[1] == childFlag {
		os.Exit(perf.Microbench(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == nodesDriverFlag {
		os.Exit(nodesDriver(os.Args[2:]))
	}
	os.Exit(run())
}

func run() int {
	quick := flag.Bool("quick", false, "the microbenchmark's quick method (0.2 s warm-up, 3 trials of 0.3 s, smaller batches)")
	asJSON := flag.Bool("json", false, "print the report as one JSON object on stdout (else a table)")
	only := flag.String("metrics", strings.Join(defaultMetrics, ","), "comma-separated metrics (names as in benchmarks/microbench -list)")
	coreList := flag.String("cores", "", "comma-separated core counts (default 1, 2, 4, ... and all)")
	runs := flag.Int("runs", 1, "rounds over every core count; each figure is the median of its rounds")
	profiles := flag.String("profiles", "", "write the CPU and mutex profiles of the all-cores child to this directory")
	nodes := defineNodesFlags()
	flag.Parse()
	if *nodes.on {
		return nodesMain(nodes, *asJSON)
	}

	cpus, err := allowedCPUs()
	if err != nil || len(cpus) == 0 {
		logf("which CPUs may this process use: %v", err)
		return 1
	}
	counts, err := coreCounts(*coreList, len(cpus))
	if err != nil {
		logf("-cores: %v", err)
		return 2
	}
	metrics := strings.Split(*only, ",")
	for i := range metrics {
		metrics[i] = strings.TrimSpace(metrics[i])
	}
	self, err := os.Executable()
	if err != nil {
		logf("find this program: %v", err)
		return 1
	}
	if *profiles != "" {
		if err := os.MkdirAll(*profiles, 0o755); err != nil {
			logf("-profiles: %v", err)
			return 1
		}
	}
	rep := report{Cores: map[string]map[string]float64{}, Speedup: map[string]float64{}, MutexWait: map[string]float64{},
		Runs: *runs, Machine: describe(cpus)}
	logf("CPUs %v (pinned: %v), core counts %v, %d round(s), metrics %s; load %s", cpus, pinned, counts, *runs, strings.Join(metrics, " "), rep.Machine.Load)
	logf("waking an idle core takes %.0f µs median, %.0f µs at the 99th percentile (a few µs on bare metal; every hand-off to an idle core pays it)", rep.Machine.WakeP50, rep.Machine.WakeP99)
	start := time.Now()
	samples := map[string]map[int][]float64{} // metric -> cores -> per-round ops/s
	waits := map[string][]float64{}           // metric -> per-round mutex wait at all cores
	max := counts[len(counts)-1]
	for round := 1; round <= *runs; round++ {
		for _, k := range counts {
			args := []string{childFlag, "-json", "-only", "^(" + strings.Join(quoteAll(metrics), "|") + ")$"}
			if *quick {
				args = append(args, "-quick")
			}
			if *profiles != "" && k == max {
				args = append(args,
					"-cpuprofile", filepath.Join(*profiles, fmt.Sprintf("cpu-%dcores-round%d.pprof", k, round)),
					"-mutexprofile", filepath.Join(*profiles, fmt.Sprintf("mutex-%dcores-round%d.pprof", k, round)))
			}
			res, err := runChild(self, args, cpus[:k])
			if err != nil {
				logf("%d core(s), round %d: %v", k, round, err)
				return 1
			}
			for _, m := range metrics {
				r, ok := res[m]
				if !ok {
					logf("%d core(s): the child reported no %s (see its errors above)", k, m)
					return 1
				}
				if samples[m] == nil {
					samples[m] = map[int][]float64{}
				}
				samples[m][k] = append(samples[m][k], r.Mean)
				if k == max {
					waits[m] = append(waits[m], r.MutexWaitPerOp)
				}
				logf("round %d, %2d core(s): %-38s %12.0f ops/s  mutex wait %7.1f ns/op", round, k, m, r.Mean, r.MutexWaitPerOp)
			}
		}
	}
	for _, m := range metrics {
		rep.Cores[m] = map[string]float64{}
		for _, k := range counts {
			rep.Cores[m][strconv.Itoa(k)] = median(samples[m][k])
		}
		if one := median(samples[m][counts[0]]); one > 0 {
			rep.Speedup[m] = median(samples[m][max]) / one
		}
		rep.MutexWait[m] = median(waits[m])
	}
	if counts[0] == 1 {
		for _, g := range goals {
			if g.Cores != max {
				continue
			}
			if s, ok := rep.Speedup[g.Metric]; ok {
				g.Got, g.Met = s, s >= g.Speedup
				if c, ok := rep.Speedup[g.Ceiling]; ok {
					g.CeilingGot = c
				} else {
					g.Ceiling = ""
				}
				rep.Goals = append(rep.Goals, g)
			}
		}
	}
	logf("done in %v; load %s", time.Since(start).Round(time.Second), perf.LoadAvg())
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			logf("json: %v", err)
			return 1
		}
		return 0
	}
	writeTable(os.Stdout, rep, metrics, counts)
	return 0
}

// coreCounts parses -cores, or returns 1, 2, 4, ... and n.
func coreCounts(list string, n int) ([]int, error) {
	var out []int
	if list == "" {
		for k := 1; k < n; k *= 2 {
			out = append(out, k)
		}
		return append(out, n), nil
	}
	for _, f := range strings.Split(list, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k < 1 || k > n {
			return nil, fmt.Errorf("%q: want core counts from 1 to %d (the CPUs this process may use)", f, n)
		}
		out = append(out, k)
	}
	sort.Ints(out)
	return slices.Compact(out), nil
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = regexp.QuoteMeta(n)
	}
	return out
}

// runChild runs the microbenchmark pinned to cpus and returns its JSON report.
func runChild(self string, args []string, cpus []int) (map[string]childResult, error) {
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(len(cpus)))
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = prefixWriter{w: os.Stderr, prefix: fmt.Sprintf("  [%d core(s)] ", len(cpus))}
	if err := startPinned(cmd, cpus); err != nil {
		return nil, fmt.Errorf("start the child: %w", err)
	}
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("the child failed: %w", err)
	}
	res := map[string]childResult{}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return nil, fmt.Errorf("the child's report: %w (%q)", err, out.String())
	}
	return res, nil
}

// prefixWriter prefixes each line written through it (a child's diagnostics).
type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (p prefixWriter) Write(b []byte) (int, error) {
	lines := strings.SplitAfter(string(b), "\n")
	var sb strings.Builder
	for _, l := range lines {
		if l != "" {
			sb.WriteString(p.prefix + l)
		}
	}
	if _, err := io.WriteString(p.w, sb.String()); err != nil {
		return 0, err
	}
	return len(b), nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func writeTable(w io.Writer, rep report, metrics []string, counts []int) {
	fmt.Fprintf(w, "%-38s", "metric (ops/s)")
	for _, k := range counts {
		fmt.Fprintf(w, " %11s", fmt.Sprintf("%d core(s)", k))
	}
	fmt.Fprintf(w, " %8s %14s\n", "speedup", "mutex ns/op")
	for _, m := range metrics {
		fmt.Fprintf(w, "%-38s", m)
		for _, k := range counts {
			fmt.Fprintf(w, " %11.0f", rep.Cores[m][strconv.Itoa(k)])
		}
		fmt.Fprintf(w, " %8.2f %14.1f\n", rep.Speedup[m], rep.MutexWait[m])
	}
	for _, g := range rep.Goals {
		verdict := "NOT MET"
		if g.Met {
			verdict = "met"
		}
		fmt.Fprintf(w, "goal: %s speedup >= %.1f at %d cores: %.2f, %s", g.Metric, g.Speedup, g.Cores, g.Got, verdict)
		if g.Ceiling != "" {
			fmt.Fprintf(w, " (plain Go of its shape here, %s: %.2f)", g.Ceiling, g.CeilingGot)
		}
		fmt.Fprintln(w)
	}
}

// describe reads what the report says of the machine.
func describe(cpus []int) machine {
	m := machine{CPUs: cpus, Pinned: pinned, GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH, Load: perf.LoadAvg()}
	p50, p99 := wakeLatency(600)
	m.WakeP50, m.WakeP99 = float64(p50.Nanoseconds())/1e3, float64(p99.Nanoseconds())/1e3
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.Model = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.Atoi(f[1])
				m.MemoryGiB = (kb + 1<<19) >> 20
			}
		}
	}
	return m
}
