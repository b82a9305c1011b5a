// Command rl-es trains a CartPole-v1 policy with OpenAI-ES on ray-go actors (package
// rl/es) and prints a progress line per iteration and the final score.
//
//	go run ./examples/rl-es [-workers 4] [-seed 0] [-tree 0]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/ray-go/ray"
	"github.com/ray-go/ray/rl/es"
)

func main() {
	workers := flag.Int("workers", 4, "rollout actors")
	seed := flag.Uint64("seed", 0, "seed (the run is the same for any -workers and -tree)")
	tree := flag.Int("tree", 0, "aggregation tree fan-out (0: the driver gathers results)")
	flag.Parse()

	ctx, err := ray.Init(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "ray.Init:", err)
		os.Exit(1)
	}
	defer ray.Shutdown(ctx)

	res, err := es.Train(ctx, es.Config{Env: "CartPole-v1", Workers: *workers, Seed: *seed, Tree: *tree,
		Progress: func(it es.Iter) {
			fmt.Printf("iter %3d  steps %8d  episodes %6d  score %6.1f  (batch %6.1f)  %5.2fs\n",
				it.N, it.Steps, it.Episodes, it.Score, it.BatchMean, it.Elapsed.Seconds())
		}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "es:", err)
		ray.Shutdown(ctx)
		os.Exit(1)
	}
	eval, err := es.Evaluate("CartPole-v1", res.Sizes, res.Discrete, res.Params, 100, 10_000)
	if err != nil {
		fmt.Fprintln(os.Stderr, "evaluate:", err)
		ray.Shutdown(ctx)
		os.Exit(1)
	}
	fmt.Printf("\nsolved %v after %d iterations, %d steps, %.2fs (sampling %.2fs, learning %.3fs, sync %.3fs)\n",
		res.Solved, res.Iters, res.Steps, res.Wall.Seconds(), res.Sampling.Seconds(), res.Learning.Seconds(), res.Sync.Seconds())
	fmt.Printf("final score %.1f (mean of the last 100 training episodes; threshold %.0f)\n", res.Score, res.Threshold)
	fmt.Printf("the trained policy over 100 fresh episodes: %.1f\n", eval)
	if !res.Solved {
		ray.Shutdown(ctx)
		os.Exit(1)
	}
}
