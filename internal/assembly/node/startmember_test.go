package node

import (
	"context"
	"testing"
	"time"

	"github.com/ray-go/ray/tasks/sched"
)

// TestStartDoesNotWaitForTheMembersSleep: protoactor-go's cluster.StartMember sleeps a
// fixed second after the provider registered the member; the node goes on once the
// provider returned (returnedProvider), and works: its raylet grain answers. The sleeping
// goroutine ends on its own.
func TestStartDoesNotWaitForTheMembersSleep(t *testing.T) {
	n := startLocalNode(t)
	if !n.wentOn {
		t.Errorf("the node waited for cluster.StartMember's sleep before it went on")
	}
	if _, _, ok := n.ownResources(); !ok {
		t.Errorf("the node's raylet does not answer")
	}
	select {
	case <-n.memberDone:
	case <-time.After(30 * time.Second):
		t.Fatal("cluster.StartMember did not return within 30 s")
	}
}

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
