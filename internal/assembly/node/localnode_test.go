package node

import (
	"context"
	"testing"
	"time"

	"github.com/ray-go/ray/tasks/sched"
)

// startLocalNode starts a local-mode node of one CPU in a directory of the test's, stopped
// when the test ends.
func startLocalNode(t *testing.T) *Node {
	t.Helper()
	res, err := sched.FromMap(map[string]float64{sched.CPU: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := Start(ctx, Config{Resources: res, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop(context.Background()) })
	return n
}
