package testcluster

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/tasks/sched"
)

// AloneEnv, set in the environment of this package's test binary, makes its TestMain run
// the tests without the shared cluster (failover_test.go): a test that starts nodes of its
// own runs in a child process of its own (runAlone).
const AloneEnv = "RAY_GO_TESTCLUSTER_ALONE"

// runAlone runs test t in a child process of this test binary without the shared cluster,
// and reports whether t is that child (the caller then runs the test's body). Starting a
// node in the shared cluster's process races, under the race detector, with the shared
// nodes' gRPC clients: protoactor's remote.Start writes gRPC's global logger
// (grpclog.SetLoggerV2) while those clients, retrying the nodes other tests stopped, read
// it to log (shuffled -race runs of this package: "race detected during execution of
// test", 1 run of 8).
func runAlone(t *testing.T) bool {
	t.Helper()
	if os.Getenv(AloneEnv) != "" {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), AloneEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("%s in a process of its own: %v\n%s", t.Name(), err, out)
	}
	return false
}

// TestStartFailureStopsTheStartedNodes: a node that cannot start (here node 1's resources
// are invalid, after node 0 has started) makes Start return the error, and the node that
// did start is collected and stopped. Before, the collection dereferenced the nil cluster
// of the error return and the process panicked. (In a process of its own: runAlone.)
func TestStartFailureStopsTheStartedNodes(t *testing.T) {
	if !runAlone(t) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Start(ctx, Config{Nodes: 2, Custom: map[int]map[string]float64{1: {"accel": -1}}})
	if c != nil || !errors.Is(err, sched.ErrInvalidQuantity) {
		t.Fatalf("Start with an invalid node: cluster %v, error %v; want none and ErrInvalidQuantity", c, err)
	}
}
