// Command rl-ppo trains CartPole-v1 with PPO on ray-go rollout actors (package rl/ppo) and
// prints a progress line per update and the final score.
//
//	go run ./examples/rl-ppo [-workers 4] [-seed 0] [-env CartPole-v1] [-async]
//
// By default the workers sample in synchronous rounds, so a seed fixes the run; -async
// runs the Ray paper's asynchronous scatter-gather instead (see package rl/ppo).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/ray-go/ray"
	"github.com/ray-go/ray/rl/ppo"
)

func main() {
	workers := flag.Int("workers", 4, "rollout actors")
	seed := flag.Uint64("seed", 0, "seed")
	env := flag.String("env", "CartPole-v1", "Gymnasium id")
	every := flag.Int("every", 10, "print every n-th update")
	async := flag.Bool("async", false, "asynchronous scatter-gather (a run then depends on the order fragments arrive in, not on the seed alone)")
	flag.Parse()

	ctx, err := ray.Init(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "ray.Init:", err)
		os.Exit(1)
	}
	defer ray.Shutdown(ctx)

	res, err := ppo.Train(ctx, ppo.Config{Env: *env, Workers: *workers, Seed: *seed, Async: *async,
		Progress: func(u ppo.Update) {
			if u.N%*every == 0 {
				fmt.Printf("update %4d  steps %7d  episodes %5d  score %6.1f  kl %.4f  clip %.3f  entropy %.3f  stale %.2f  %5.1fs\n",
					u.N, u.Steps, u.Episodes, u.Score, u.ApproxKL, u.ClipFrac, u.Entropy, u.Stale, u.Elapsed.Seconds())
			}
		}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "ppo:", err)
		ray.Shutdown(ctx)
		os.Exit(1)
	}
	fmt.Printf("\nsolved %v after %d updates, %d steps, %.1fs (sampling %.2fs, learning %.2fs, sync %.2fs)\n",
		res.Solved, res.Updates, res.Steps, res.Wall.Seconds(), res.Sampling.Seconds(), res.Learning.Seconds(), res.Sync.Seconds())
	fmt.Printf("final score %.1f (mean of the last 100 episodes; threshold %.0f)\n", res.Score, res.Threshold)
	if !res.Solved {
		ray.Shutdown(ctx)
		os.Exit(1)
	}
}
