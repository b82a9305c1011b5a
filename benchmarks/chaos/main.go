// Command chaos is ray-go's fault-tolerance chaos suite. It builds rayctl and the chaos
// driver (./driver), starts a cluster of node agents on 127.0.0.1 (a head and -nodes - 1
// agents that join it), runs the driver once without faults (the reference) and once
// killing one worker process per round, prints per-round lines and a summary (wrong
// results, hangs, recovery times, re-executed tasks, overhead), stops the cluster and
// checks that no process it started is left. It exits non-zero on any wrong result, hang,
// error or leaked process.
//
//	go run ./benchmarks/chaos -rounds 100
//
// See README.md for what each figure means.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	var cfg Config
	flag.StringVar(&cfg.Rayctl, "rayctl", "", "rayctl binary (default: go build github.com/ray-go/ray/cli/rayctl into a temp dir)")
	flag.StringVar(&cfg.Driver, "driver", "", "chaos driver binary (default: go build ./benchmarks/chaos/driver into a temp dir)")
	flag.IntVar(&cfg.Nodes, "nodes", 3, "node agents, the head included (each runs one worker process of the job: one node)")
	flag.IntVar(&cfg.CPUs, "num-cpus", 2, "--num-cpus of each agent")
	flag.StringVar(&cfg.ObjectStore, "object-store-memory", "512MiB", "--object-store-memory of each agent")
	flag.IntVar(&cfg.Rounds, "rounds", 20, "rounds of the killed run (one node killed per round)")
	flag.IntVar(&cfg.RefRounds, "reference-rounds", -1, "rounds of the fault-free reference run (-1: as many as -rounds; 0: none)")
	flag.Int64Var(&cfg.Seed, "seed", 1, "seed of the data, the kill times and the victims (both runs)")
	flag.DurationVar(&cfg.RoundTimeout, "round-timeout", 60*time.Second, "a round that takes longer is a hang")
	flag.DurationVar(&cfg.Settle, "settle", 0, "after each killed round, wait until this long after the kill (spaces the kills out)")
	flag.BoolVar(&cfg.Keep, "keep", false, "keep the session dir (logs) even when the run passes")
	flag.BoolVar(&cfg.Insecure, "insecure", false, "start the cluster with --insecure (no TLS, no token): the baseline of what security costs")
	jsonOut := flag.String("json", "", "also write the summary as JSON to this file (- for stdout)")
	flag.Parse()
	if cfg.RefRounds < 0 {
		cfg.RefRounds = cfg.Rounds
	}
	if cfg.Rounds < 1 || cfg.RoundTimeout <= 0 {
		fmt.Fprintln(os.Stderr, "chaos: want -rounds >= 1 and -round-timeout > 0")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	fmt.Printf("$ %s\n", strings.Join(os.Args, " "))
	sum, err := Run(ctx, cfg, os.Stdout)
	printSummary(sum, err)
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(sum, "", "  ")
		if *jsonOut == "-" {
			fmt.Println(string(b))
		} else if werr := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); werr != nil {
			fmt.Fprintln(os.Stderr, "chaos:", werr)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
	if len(sum.Failures) > 0 {
		os.Exit(1)
	}
}

// printSummary prints the summary, and PASS only if the run ended without err and without
// failures (a run that could not start, e.g. rayctl failed to build, checked nothing).
func printSummary(s *Summary, err error) {
	fmt.Printf("\nsummary (seed %d, %d nodes", s.Seed, s.Nodes)
	if s.Settle != "" {
		fmt.Printf(", settle %s", s.Settle)
	}
	fmt.Printf(", %.0f s)\n", s.ElapsedSeconds)
	fmt.Printf("  rounds           %d (%d with a node killed, %d finished before the kill time)\n", s.Rounds, s.Killed, s.KillSkipped)
	fmt.Printf("  results          %d checked, %d completed, %d wrong, %d errors, %d hangs\n", s.Results, s.Completed, s.Wrong, s.Errors, s.Hangs)
	fmt.Printf("  recovery         median %.0f ms, p90 %.0f ms, max %.0f ms (kill -> last result outstanding at the kill)\n",
		s.RecoveryMedianMS, s.RecoveryP90MS, s.RecoveryMaxMS)
	fmt.Printf("  rejoin           median %.0f ms, max %.0f ms (kill -> replacement node in the job)\n", s.RejoinMedianMS, s.RejoinMaxMS)
	fmt.Printf("  re-executed      %d task retries, %d objects reconstructed (driver-owned)\n", s.TasksRetried, s.ObjectsReconstructed)
	if s.RefRounds > 0 {
		fmt.Printf("  round duration   median %.0f ms killed, %.0f ms fault-free (%d rounds): overhead %.2fx\n",
			s.KilledMedianMS, s.RefMedianMS, s.RefRounds, s.Overhead)
	} else {
		fmt.Printf("  round duration   median %.0f ms killed (no reference run)\n", s.KilledMedianMS)
	}
	fmt.Printf("  leaked processes %d\n", len(s.Leaked))
	if err != nil {
		fmt.Printf("FAIL: the run ended early: %v\n", err)
		return
	}
	if len(s.Failures) == 0 {
		fmt.Println("PASS")
		return
	}
	fmt.Printf("FAIL (%d):\n", len(s.Failures))
	for i, f := range s.Failures {
		if i == 20 {
			fmt.Printf("  ... and %d more\n", len(s.Failures)-20)
			break
		}
		fmt.Println("  " + f)
	}
}
