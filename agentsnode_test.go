package ray

import (
	"testing"

	"github.com/ray-go/ray/internal/base/pb"
)

// TestAgentsNode: an actor's NodeAffinity may name a machine by its agent's ID (as
// `rayctl list nodes` shows it); the job's worker process there is the node.
func TestAgentsNode(t *testing.T) {
	nodes := []*pb.NodeInfo{{NodeId: "w1", AgentId: "m1"}, {NodeId: "w2", AgentId: "m2"}, {NodeId: "local"}}
	for id, want := range map[string]string{"w2": "w2", "m2": "w2", "m1": "w1", "local": "local", "nope": "nope", "": ""} {
		if got := agentsNode(nodes, id); got != want {
			t.Errorf("agentsNode(%q) = %q, want %q", id, got, want)
		}
	}
}
