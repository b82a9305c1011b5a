package es_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/ray-go/ray"
	"github.com/ray-go/ray/rl/es"
)

var shared context.Context

func TestMain(m *testing.M) {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	shared = ctx
	code := m.Run()
	if err := ray.Shutdown(ctx); err != nil {
		code = 1
	}
	os.Exit(code)
}

// TestSameResultForAnyWorkers: for a seed, the weights after a few iterations are the
// same bit for bit with 1 or 3 workers, flat or through an aggregation tree.
func TestSameResultForAnyWorkers(t *testing.T) {
	base := es.Config{Pairs: 12, MaxIters: 3, Target: math.Inf(1), NoiseSize: 1 << 16, Seed: 7}
	var ref []float64
	for _, v := range []struct{ workers, tree int }{{1, 0}, {3, 0}, {5, 2}} {
		cfg := base
		cfg.Workers, cfg.Tree = v.workers, v.tree
		res, err := es.Train(shared, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.Iters != 3 || res.Episodes != 3*24 {
			t.Fatalf("%+v: %d iterations, %d episodes", v, res.Iters, res.Episodes)
		}
		if ref == nil {
			ref = res.Params
			continue
		}
		for i := range ref {
			if res.Params[i] != ref[i] {
				t.Fatalf("workers %d tree %d: parameter %d is %v, with 1 worker %v", v.workers, v.tree, i, res.Params[i], ref[i])
			}
		}
	}
}

// TestSolvesCartPole: ES reaches CartPole-v1's threshold (475, mean of the last 100
// episodes), and the deterministic policy it returns holds up on fresh episodes.
func TestSolvesCartPole(t *testing.T) {
	res, err := es.Train(shared, es.Config{Seed: 0})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Solved || res.Score < res.Threshold {
		t.Fatalf("not solved: score %.1f after %d steps", res.Score, res.Steps)
	}
	score, err := es.Evaluate("CartPole-v1", res.Sizes, res.Discrete, res.Params, 20, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if score < 400 {
		t.Fatalf("evaluation of the trained policy: %.1f", score)
	}
}

func TestBadConfig(t *testing.T) {
	for _, cfg := range []es.Config{{Env: "NoSuchEnv-v0"}, {Tree: 1}, {NoiseSize: 10}} {
		if _, err := es.Train(shared, cfg); err == nil {
			t.Fatalf("%+v accepted", cfg)
		}
	}
}

func TestCenteredRanks(t *testing.T) {
	got := es.CenteredRanks([]float64{3, 1, 2})
	want := []float64{0.5, -0.5, 0}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("CenteredRanks = %v, want %v", got, want)
		}
	}
}
