package testcluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ray-go/ray/tasks/sched"
)

// TestStartFailureStopsTheStartedNodes: a node that cannot start (here node 1's resources
// are invalid, after node 0 has started) makes Start return the error, and the node that
// did start is collected and stopped. Before, the collection dereferenced the nil cluster
// of the error return and the process panicked.
func TestStartFailureStopsTheStartedNodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Start(ctx, Config{Nodes: 2, Custom: map[int]map[string]float64{1: {"accel": -1}}})
	if c != nil || !errors.Is(err, sched.ErrInvalidQuantity) {
		t.Fatalf("Start with an invalid node: cluster %v, error %v; want none and ErrInvalidQuantity", c, err)
	}
}
