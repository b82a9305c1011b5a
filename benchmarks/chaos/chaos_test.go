package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// testWriter sends the suite's lines to t.Log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestChaos is the short version of the suite: a head and two agents, one fault-free
// reference round and three rounds that each SIGKILL a worker process. The binaries are
// built without -race (as cli/e2e does), whatever the test runs with.
func TestChaos(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cfg := Config{
		Nodes: 3, CPUs: 2, ObjectStore: "512MiB",
		Rounds: 3, RefRounds: 1, Seed: 1,
		RoundTimeout: 30 * time.Second,
	}
	sum, err := Run(ctx, cfg, testWriter{t})
	if err != nil {
		t.Fatalf("the suite could not run: %v", err)
	}
	t.Logf("seed %d: %d rounds, %d killed, recovery median %.0f ms max %.0f ms, %d retried, %d reconstructed, %.0f s",
		sum.Seed, sum.Rounds, sum.Killed, sum.RecoveryMedianMS, sum.RecoveryMaxMS, sum.TasksRetried, sum.ObjectsReconstructed, sum.ElapsedSeconds)
	if sum.Wrong != 0 {
		t.Errorf("%d wrong results", sum.Wrong)
	}
	if sum.Hangs != 0 {
		t.Errorf("%d rounds hung", sum.Hangs)
	}
	if sum.Errors != 0 {
		t.Errorf("%d errors", sum.Errors)
	}
	if sum.Rounds != cfg.Rounds {
		t.Errorf("%d of %d rounds ran", sum.Rounds, cfg.Rounds)
	}
	for _, r := range sum.PerRound {
		if r.Completed != r.Results || r.Results == 0 {
			t.Errorf("round %d: %d of %d results completed", r.Round, r.Completed, r.Results)
		}
	}
	if sum.Killed == 0 {
		t.Errorf("no round killed a node")
	}
	// The kills must have hit work: a task retried, an object reconstructed, or results
	// outstanding at a kill that then completed right (a task waiting for a lease on the
	// killed node is placed again, not retried: workers hand queued tasks back to their
	// owner when the one before them runs long, so fewer are in flight at a kill).
	outstanding := 0
	for _, r := range sum.PerRound {
		outstanding += r.OutstandingAtKill
	}
	if sum.TasksRetried+sum.ObjectsReconstructed == 0 && outstanding == 0 {
		t.Errorf("no task was retried, no object reconstructed and no result outstanding at a kill over %d killed rounds", sum.Killed)
	}
	if len(sum.Leaked) > 0 {
		t.Errorf("processes left behind: %v", sum.Leaked)
	}
	for _, f := range sum.Failures {
		t.Errorf("failure: %s", f)
	}
}
