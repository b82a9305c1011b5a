package main

// The -nodes benchmark, part one: real node processes on 127.0.0.1 (issue 20).
//
// For each node count N the parent starts a cluster with rayctl (a head and N-1 agents, C
// CPUs each, every agent in a session directory of its own), runs this program as the
// job's driver (nodesDriverFlag) and stops the cluster; then, for the baseline, a cluster of
// one node with N*C CPUs. Each agent starts one worker process of the driver's binary (this
// program, which calls ray.Init first thing in nodesDriver, so that a worker process
// joins and never returns). The driver places one submitter task on each node
// (NodeAffinity, 0 CPUs: it only waits), which submits M empty tasks to its own node and
// waits for them; in the baseline the N submitters all run on the one node. Every
// configuration runs the same total T per round (M = T/N); aggregate throughput is T over
// the driver's wall time from the first submitter's submission to the last one's return.
// With -node-gomaxprocs share, the agents of a cluster of N nodes (and so their worker
// processes) run with GOMAXPROCS = max(1, cores/N): N nodes share the cores as N machines'
// worth of a smaller machine would, instead of N Go schedulers each spinning on all of them.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	ray "github.com/ray-go/ray"
	"github.com/ray-go/ray/benchmarks/internal/perf"
	"github.com/ray-go/ray/internal/base/netx"
)

// nodesDriverFlag makes the program the driver of one -nodes cluster (and, through the
// same arguments, its worker processes).
const nodesDriverFlag = "-scale-nodes-driver"

var (
	// nodesEmpty is the empty task: what every submitter submits.
	nodesEmpty = ray.Task0("scale.empty", func(context.Context) (int, error) { return 0, nil })
	// nodesSubmit is a submitter: m empty tasks pinned to its own node, then waits for all.
	nodesSubmit = ray.Task1("scale.submit", func(ctx context.Context, m int) (int, error) {
		self, err := ray.NodeID(ctx)
		if err != nil {
			return 0, err
		}
		opt := ray.NodeAffinity(self, false)
		refs := make([]ray.ObjectRef[int], m)
		for i := range refs {
			refs[i] = nodesEmpty.Options(opt).Remote(ctx)
		}
		_, err = ray.GetAll(ctx, refs)
		for _, r := range refs {
			r.Release()
		}
		return m, err
	})
)

// driverResult is what a driver prints: one figure per timed round.
type driverResult struct {
	Nodes      int       `json:"nodes"`
	Submitters int       `json:"submitters"`
	Tasks      int       `json:"tasks_per_submitter"`
	TasksPerS  []float64 `json:"tasks_per_s"`
	Failed     []string  `json:"failed_rounds,omitempty"` // rounds run again, and why
}

// nodesDriver is the driver (and worker process) of one cluster. Its worker processes run
// it too, up to ray.Init, which they never return from: nothing before it has effects.
func nodesDriver(args []string) int {
	fs := flag.NewFlagSet("scale driver", flag.ContinueOnError)
	want := fs.Int("want-nodes", 1, "wait until the job has this many nodes")
	submitters := fs.Int("submitters", 1, "submitter tasks, spread over the nodes in turn")
	tasks := fs.Int("tasks", 10000, "empty tasks per submitter")
	rounds := fs.Int("rounds", 3, "timed rounds (after one warm-up round of a tenth of the tasks)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, err := ray.Init(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale driver:", err)
		return 1
	}
	res, err := driveRounds(ctx, *want, *submitters, *tasks, *rounds)
	if serr := ray.Shutdown(ctx); err == nil {
		err = serr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale driver:", err)
		return 1
	}
	b, _ := json.Marshal(res)
	fmt.Println(string(b))
	return 0
}

func driveRounds(ctx context.Context, want, submitters, tasks, rounds int) (driverResult, error) {
	res := driverResult{Nodes: want, Submitters: submitters, Tasks: tasks}
	// The job's nodes, listed again before every round: a worker process that died (and
	// was restarted by its agent as a new node) is replaced in the list.
	listNodes := func() ([]ray.Node, error) {
		deadline := time.Now().Add(time.Minute)
		for {
			all, err := ray.Nodes(ctx)
			if err != nil {
				return nil, err
			}
			nodes := all.Alive()
			if len(nodes) == want {
				sort.Slice(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
				return nodes, nil
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("the job has %d nodes after a minute, want %d", len(nodes), want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	round := func(m int) (float64, error) {
		nodes, err := listNodes()
		if err != nil {
			return 0, err
		}
		start := time.Now()
		refs := make([]ray.ObjectRef[int], submitters)
		for i := range refs {
			refs[i] = nodesSubmit.Options(ray.NodeAffinity(nodes[i%len(nodes)].ID, false), ray.NumCPUs(0)).Remote(ctx, ray.V(m))
		}
		done, err := ray.GetAll(ctx, refs)
		for _, r := range refs {
			r.Release()
		}
		wall := time.Since(start)
		if err != nil {
			return 0, err
		}
		total := 0
		for _, d := range done {
			total += d
		}
		if total != submitters*m {
			return 0, fmt.Errorf("the submitters ran %d tasks, want %d", total, submitters*m)
		}
		return float64(total) / wall.Seconds(), nil
	}
	// A round that fails (a node lost in the middle) is said on stderr and run again,
	// at most twice per run.
	failures := 0
	retry := func(what string, err error) error {
		failures++
		res.Failed = append(res.Failed, fmt.Sprintf("%s: %v", what, err))
		fmt.Fprintf(os.Stderr, "scale driver: %s failed (%v); again\n", what, err)
		if failures > 2 {
			return fmt.Errorf("%s: %w (the third failed round)", what, err)
		}
		return nil
	}
	for {
		_, err := round(max(tasks/10, 1))
		if err == nil {
			break
		}
		if err := retry("warm-up", err); err != nil {
			return res, err
		}
	}
	for r := 1; r <= rounds; {
		tps, err := round(tasks)
		if err != nil {
			if err := retry(fmt.Sprintf("round %d", r), err); err != nil {
				return res, err
			}
			continue
		}
		res.TasksPerS = append(res.TasksPerS, tps)
		r++
	}
	return res, nil
}

// nodesConfig is the -nodes benchmark's part on real processes.
type nodesConfig struct {
	counts []int   // node counts
	cpus   float64 // per node
	tasks  int     // per round, all submitters together
	rounds int
	rayctl string // "" builds it
	share  bool   // GOMAXPROCS of a node's processes: cores/N (else Go's default)
	cores  int
}

// nodesReport is that part's report.
type nodesReport struct {
	CPUsPerNode float64 `json:"cpus_per_node"`
	Tasks       int     `json:"tasks_per_round"`
	Rounds      int     `json:"rounds"`
	GOMAXPROCS  string  `json:"node_gomaxprocs"`
	// Cluster and Baseline: median aggregate tasks/s by node count: N nodes of C CPUs with a
	// submitter each, and one node of N*C CPUs with N submitters.
	Cluster  map[string]float64 `json:"cluster_tasks_per_s"`
	Baseline map[string]float64 `json:"baseline_tasks_per_s"`
	Ratio    map[string]float64 `json:"ratio"`
	// Samples are every round's figure, for the record.
	Samples map[string][]float64 `json:"samples"`
	// Failures: clusters that failed and were started again, and rounds run again, and why.
	Failures []string   `json:"failures,omitempty"`
	Goal     *nodesGoal `json:"goal,omitempty"`
	Note     string     `json:"note"`
}

type nodesGoal struct {
	Nodes    int     `json:"nodes"`
	MinRatio float64 `json:"min_ratio"`
	Ratio    float64 `json:"ratio"`
	Met      bool    `json:"met"`
}

// runNodes runs every node count's cluster and baseline.
func runNodes(ctx context.Context, cfg nodesConfig) (*nodesReport, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this program: %w", err)
	}
	dir, err := os.MkdirTemp("", "ray-go-scale-nodes-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	rayctl := cfg.rayctl
	if rayctl == "" {
		rayctl = filepath.Join(dir, "rayctl")
		logf("building rayctl (go build github.com/ray-go/ray/cli/rayctl; -rayctl PATH uses a built one)")
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", rayctl, "github.com/ray-go/ray/cli/rayctl").CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build rayctl: %v\n%s", err, out)
		}
	}
	rep := &nodesReport{CPUsPerNode: cfg.cpus, Tasks: cfg.tasks, Rounds: cfg.rounds, GOMAXPROCS: "default (all cores)",
		Cluster: map[string]float64{}, Baseline: map[string]float64{}, Ratio: map[string]float64{}, Samples: map[string][]float64{},
		Note: "all node processes share this machine's cores: the ratio measures the cost of N processes (and their messages) against one, not scale-out"}
	if cfg.share {
		rep.GOMAXPROCS = "share: max(1, cores/N) in a cluster of N nodes"
	}
	for _, n := range cfg.counts {
		k := strconv.Itoa(n)
		res, err := clusterRetry(ctx, rayctl, self, dir, n, cfg.cpus, n, cfg, rep)
		if err != nil {
			return nil, fmt.Errorf("%d node(s): %w", n, err)
		}
		rep.Cluster[k] = median(res.TasksPerS)
		rep.Samples["cluster_"+k] = res.TasksPerS
		logf("%d node(s) of %g CPUs, %d submitter(s): %v tasks/s (median %.0f); load %s", n, cfg.cpus, n, roundAll(res.TasksPerS), rep.Cluster[k], perf.LoadAvg())
		base := res
		if n > 1 {
			if base, err = clusterRetry(ctx, rayctl, self, dir, 1, cfg.cpus*float64(n), n, cfg, rep); err != nil {
				return nil, fmt.Errorf("baseline of %d node(s): %w", n, err)
			}
			logf("1 node of %g CPUs, %d submitter(s): %v tasks/s (median %.0f); load %s", cfg.cpus*float64(n), n, roundAll(base.TasksPerS), median(base.TasksPerS), perf.LoadAvg())
		}
		rep.Baseline[k] = median(base.TasksPerS)
		rep.Samples["baseline_"+k] = base.TasksPerS
		if rep.Baseline[k] > 0 {
			rep.Ratio[k] = rep.Cluster[k] / rep.Baseline[k]
		}
	}
	if top := cfg.counts[len(cfg.counts)-1]; top > 1 {
		r := rep.Ratio[strconv.Itoa(top)]
		rep.Goal = &nodesGoal{Nodes: top, MinRatio: 0.8, Ratio: r, Met: r >= 0.8}
	}
	return rep, nil
}

func roundAll(xs []float64) []int {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = int(x + 0.5)
	}
	return out
}

// clusterRetry is clusterRun, once more on a fresh cluster when it fails (e.g. a worker
// process that kept crashing at start); failures go into the report.
func clusterRetry(ctx context.Context, rayctl, self, dir string, n int, cpus float64, submitters int, cfg nodesConfig, rep *nodesReport) (driverResult, error) {
	what := fmt.Sprintf("%d node(s) of %g CPUs, %d submitter(s)", n, cpus, submitters)
	for attempt := 1; ; attempt++ {
		res, err := clusterRun(ctx, rayctl, self, dir, n, cpus, submitters, cfg)
		for _, f := range res.Failed {
			rep.Failures = append(rep.Failures, what+": "+f)
		}
		if err == nil || attempt == 2 || ctx.Err() != nil {
			return res, err
		}
		rep.Failures = append(rep.Failures, fmt.Sprintf("%s: cluster failed, started again: %v", what, err))
		logf("%s: %v; once more on a fresh cluster", what, err)
	}
}

// clusterRun starts a cluster of n nodes of cpus CPUs each, runs the driver with the given
// number of submitters, and stops the cluster (always, also on failure).
func clusterRun(ctx context.Context, rayctl, self, dir string, n int, cpus float64, submitters int, cfg nodesConfig) (res driverResult, err error) {
	port, err := netx.FreePorts("127.0.0.1", 2)
	if err != nil {
		return res, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	base, err := os.MkdirTemp(dir, fmt.Sprintf("c%d-", n))
	if err != nil {
		return res, err
	}
	var sessions []string
	defer func() {
		// Agents first, the head last; each stop is bounded, and every one is tried.
		for i := len(sessions) - 1; i >= 0; i-- {
			sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			out, serr := exec.CommandContext(sctx, rayctl, "stop", "--force", "--session-dir", sessions[i]).CombinedOutput()
			cancel()
			if serr != nil {
				err = errors.Join(err, fmt.Errorf("rayctl stop --session-dir %s: %v\n%s", sessions[i], serr, out))
			}
		}
	}()
	cpuArg := strconv.FormatFloat(cpus, 'f', -1, 64)
	start := func(env []string, args ...string) (string, error) {
		sctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(sctx, rayctl, append([]string{"start", "--num-cpus", cpuArg, "--object-store-memory", "256MiB", "--metrics-port", "-1"}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		if cfg.share {
			cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(max(1, cfg.cores/n)))
		}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("rayctl start %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		return stdout.String(), nil
	}
	head := filepath.Join(base, "head")
	sessions = append(sessions, head)
	if _, err := start(nil, "--head", "--port", strconv.Itoa(port), "--dashboard-port", "-1", "--session-dir", head); err != nil {
		return res, err
	}
	tctx, cancel := context.WithTimeout(ctx, time.Minute)
	tok, err := exec.CommandContext(tctx, rayctl, "token", "show", "--session-dir", head).Output()
	cancel()
	if err != nil {
		return res, fmt.Errorf("rayctl token show: %w", err)
	}
	env := []string{"RAY_GO_TOKEN=" + strings.TrimSpace(string(tok))}
	for i := 1; i < n; i++ {
		s := filepath.Join(base, fmt.Sprintf("agent%d", i))
		sessions = append(sessions, s)
		if _, err := start(env, "--address", addr, "--session-dir", s); err != nil {
			return res, err
		}
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(dctx, self, nodesDriverFlag, "-want-nodes", strconv.Itoa(n), "-submitters", strconv.Itoa(submitters),
		"-tasks", strconv.Itoa(max(cfg.tasks/submitters, 1)), "-rounds", strconv.Itoa(cfg.rounds))
	cmd.Env = append(os.Environ(), append(env, "RAY_ADDRESS="+addr)...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = prefixWriter{w: os.Stderr, prefix: fmt.Sprintf("  [driver, %d node(s)] ", n)}
	if err := cmd.Run(); err != nil {
		return res, fmt.Errorf("the driver: %w%s", err, workerPanics(base))
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		return res, fmt.Errorf("the driver's report: %w (%q)", err, stdout.String())
	}
	if len(res.TasksPerS) != cfg.rounds {
		return res, fmt.Errorf("the driver reported %d rounds, want %d", len(res.TasksPerS), cfg.rounds)
	}
	return res, nil
}

// workerPanics returns the panics in the worker process logs under dir (each with the
// lines after it), for the error of a driver that failed.
func workerPanics(dir string) string {
	logs, _ := filepath.Glob(filepath.Join(dir, "*", "agent-*", "logs", "worker-*.log"))
	var sb strings.Builder
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		lines := strings.Split(string(b), "\n")
		for i, line := range lines {
			if strings.HasPrefix(line, "panic:") || strings.HasPrefix(line, "fatal error:") {
				fmt.Fprintf(&sb, "\n%s:\n%s", l, strings.Join(lines[i:min(i+16, len(lines))], "\n"))
				break
			}
		}
	}
	if sb.Len() == 0 {
		return " (no panic in the worker processes' logs)"
	}
	return "; worker processes panicked:" + sb.String()
}
