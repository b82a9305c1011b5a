package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ray-go/ray/benchmarks/internal/perf"
)

// nodesFlags are the flags of the -nodes benchmark (issue 20).
type nodesFlags struct {
	on                        *bool
	counts, simCounts, rayctl *string
	cpus                      *float64
	tasks, rounds, simTasks   *int
	simRate                   *float64
	gomaxprocs                *string
	simHeap                   *string
	simWorkloads              *string
}

func defineNodesFlags() nodesFlags {
	return nodesFlags{
		on: flag.Bool("nodes", false, "instead of the cores benchmark: N real node processes on 127.0.0.1 (-node-counts) with a submitter each against one node "+
			"of the same total CPUs, then a simulated control plane of N in-process nodes (-sim-counts) counting messages and GCS bytes per task"),
		counts:     flag.String("node-counts", "1,2,4,8", "-nodes: node counts of the real clusters (\"\": skip them)"),
		cpus:       flag.Float64("node-cpus", 2, "-nodes: CPUs of each node (the baseline node has N times as many)"),
		tasks:      flag.Int("node-tasks", 80000, "-nodes: empty tasks per round, split evenly over the N submitters"),
		rounds:     flag.Int("node-rounds", 5, "-nodes: timed rounds per cluster (medians)"),
		gomaxprocs: flag.String("node-gomaxprocs", "default", "-nodes: GOMAXPROCS of each node's processes: default (Go's: all cores) or share (max(1, cores/N) with N nodes)"),
		rayctl:     flag.String("rayctl", "", "-nodes: the rayctl binary (default: go build github.com/ray-go/ray/cli/rayctl)"),
		simCounts:  flag.String("sim-counts", "1,2,4,8,16,32,64", "-nodes: node counts of the simulated control plane (\"\": skip it)"),
		simTasks:   flag.Int("sim-tasks", 20000, "-nodes: empty tasks each in-process node submits per workload"),
		simRate: flag.Float64("sim-rate", 0, "-nodes: pace each in-process node's submitter at this many tasks/s (0: as fast as it can). "+
			"Paced, every node runs the same task rate at every node count, so that per-task counts do not grow only because N nodes share this machine's cores"),
		simWorkloads: flag.String("sim-workloads", "local,remote", "-nodes: workloads of the simulated control plane: local (tasks pinned to the submitter's node), "+
			"remote (pinned to the next node), default (placed by the policy: every view follows the load reports)"),
		simHeap: flag.String("sim-heap-profiles", "", "-nodes: write a heap profile of the simulated cluster at each node count into this directory"),
	}
}

// parseNodeCounts parses a comma-separated list of node counts from 1 to limit.
func parseNodeCounts(name, list string, limit int) ([]int, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(list, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k < 1 || k > limit {
			return nil, fmt.Errorf("%s: %q: want node counts from 1 to %d", name, f, limit)
		}
		out = append(out, k)
	}
	sort.Ints(out)
	return slices.Compact(out), nil
}

// parseSimWorkloads parses -sim-workloads: a comma-separated list of local, remote and
// default, each at most once.
func parseSimWorkloads(list string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(list, ",") {
		w := strings.TrimSpace(f)
		switch {
		case w != "local" && w != "remote" && w != "default":
			return nil, fmt.Errorf("-sim-workloads: %q: want local, remote or default", w)
		case slices.Contains(out, w):
			return nil, fmt.Errorf("-sim-workloads: %q twice", w)
		}
		out = append(out, w)
	}
	return out, nil
}

// nodesOutput is the -nodes report.
type nodesOutput struct {
	Real    *nodesReport `json:"real,omitempty"`
	Sim     *simReport   `json:"simulated,omitempty"`
	Machine machine      `json:"machine"`
}

func nodesMain(f nodesFlags, asJSON bool) int {
	counts, err := parseNodeCounts("-node-counts", *f.counts, 64)
	if err != nil {
		logf("%v", err)
		return 2
	}
	simCounts, err := parseNodeCounts("-sim-counts", *f.simCounts, 256)
	if err != nil {
		logf("%v", err)
		return 2
	}
	if simWorkloads, err = parseSimWorkloads(*f.simWorkloads); err != nil {
		logf("%v", err)
		return 2
	}
	switch {
	case counts == nil && simCounts == nil:
		logf("-nodes: -node-counts and -sim-counts are both empty: nothing to run")
		return 2
	case *f.gomaxprocs != "default" && *f.gomaxprocs != "share":
		logf("-node-gomaxprocs: %q: want default or share", *f.gomaxprocs)
		return 2
	case *f.cpus <= 0 || *f.tasks < 1 || *f.rounds < 1 || *f.simTasks < 1 || *f.simRate < 0:
		logf("-nodes: -node-cpus must be > 0, -node-tasks, -node-rounds and -sim-tasks >= 1, -sim-rate >= 0")
		return 2
	}
	cpus, err := allowedCPUs()
	if err != nil || len(cpus) == 0 {
		logf("which CPUs may this process use: %v", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	out := nodesOutput{Machine: describe(cpus)}
	start := time.Now()
	logf("-nodes on %d CPU(s); load %s", len(cpus), out.Machine.Load)
	if counts != nil {
		if out.Real, err = runNodes(ctx, nodesConfig{counts: counts, cpus: *f.cpus, tasks: *f.tasks, rounds: *f.rounds, rayctl: *f.rayctl,
			share: *f.gomaxprocs == "share", cores: len(cpus)}); err != nil {
			logf("real nodes: %v", err)
			return 1
		}
		logf("real nodes done after %v; load %s", time.Since(start).Round(time.Second), perf.LoadAvg())
	}
	if simCounts != nil {
		if out.Sim, err = runSim(ctx, simConfig{counts: simCounts, tasks: *f.simTasks, rate: *f.simRate, cpus: *f.cpus, heap: *f.simHeap}); err != nil {
			logf("simulated control plane: %v", err)
			return 1
		}
	}
	logf("done in %v; load %s", time.Since(start).Round(time.Second), perf.LoadAvg())
	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			logf("json: %v", err)
			return 1
		}
		return 0
	}
	writeNodesTable(os.Stdout, out, counts, simCounts)
	return 0
}

func writeNodesTable(w io.Writer, out nodesOutput, counts, simCounts []int) {
	if r := out.Real; r != nil {
		fmt.Fprintf(w, "real nodes (%g CPUs each, %d tasks a round over the submitters, median of %d rounds, GOMAXPROCS %s)\n", r.CPUsPerNode, r.Tasks, r.Rounds, r.GOMAXPROCS)
		fmt.Fprintf(w, "%6s %16s %16s %7s\n", "nodes", "cluster tasks/s", "1-node tasks/s", "ratio")
		for _, n := range counts {
			k := strconv.Itoa(n)
			fmt.Fprintf(w, "%6d %16.0f %16.0f %7.2f\n", n, r.Cluster[k], r.Baseline[k], r.Ratio[k])
		}
		if g := r.Goal; g != nil {
			fmt.Fprintf(w, "goal: ratio >= %.1f at %d nodes: %.2f, %s\n", g.MinRatio, g.Nodes, g.Ratio, verdict(g.Met))
		}
		fmt.Fprintln(w, r.Note)
	}
	if s := out.Sim; s != nil {
		pace := "as fast as they go"
		if s.RatePerNode > 0 {
			pace = fmt.Sprintf("paced at %.0f tasks/s per node", s.RatePerNode)
		}
		fmt.Fprintf(w, "simulated control plane (%d tasks per node and workload, %s)\n", s.TasksPerNode, pace)
		fmt.Fprintf(w, "%6s %-7s %10s %10s %12s %12s %12s %14s %14s\n", "nodes", "tasks", "msgs/task", "GCS wr/task", "GCS B/task", "msgs net", "GCS B net", "idle msgs/s", "idle GCS B/s")
		for _, n := range simCounts {
			c, ok := s.Counts[strconv.Itoa(n)]
			if !ok {
				continue
			}
			for _, wl := range simWorkloads {
				p := c.Workloads[wl]
				fmt.Fprintf(w, "%6d %-7s %10.3f %10.4f %12.2f %12.3f %12.2f %14.0f %14.0f\n", n, wl, p.Messages, p.GCSWrites, p.GCSBytes, p.MessagesNet, p.GCSBytesNet, c.IdleMessagesPerS, c.IdleGCSBytesPerS)
			}
		}
		for _, g := range s.Goal {
			fmt.Fprintf(w, "goal (%s): per-task messages and GCS bytes at %d nodes <= %.1fx those at %d: messages %.2fx, GCS bytes %.2fx, %s\n",
				g.Workload, g.ToNodes, g.MaxRatio, g.FromNodes, s.Ratio[g.Workload]["messages_per_task"], s.Ratio[g.Workload]["gcs_bytes_per_task"], verdict(g.Met))
		}
		if s.Stopped != "" {
			fmt.Fprintf(w, "stopped %s\n", s.Stopped)
		}
	}
}

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "NOT MET"
}
