package clusterstate

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/gcstest"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
	"github.com/ray-go/ray/internal/base/pb"
)

// TestReadPlacementGroupsMachine: a group's bundles name their nodes (the job's worker
// processes) and those nodes' machines, the agent IDs rayctl status and list nodes show
// ("" for a bundle not placed, or whose worker process is gone).
func TestReadPlacementGroupsMachine(t *testing.T) {
	s := memstore.New(memstore.Options{})
	defer s.Close()
	put := func(key string, m proto.Message) { gcstest.PutProto(t, s, key, m) }
	put(gcs.NodeKey("w1"), &pb.NodeInfo{NodeId: "w1", AgentId: "agentA", Role: "worker", JobId: "01"})
	put(gcs.NodeKey("w2"), &pb.NodeInfo{NodeId: "w2", AgentId: "agentB", Role: "worker", JobId: "01"})
	put(gcs.PlacementGroupKey("g"), &pb.PlacementGroupInfo{Id: "g", JobId: "01", State: "RESCHEDULING", Strategy: "SPREAD",
		Bundles: []*pb.PlacementBundle{{NodeId: "w2"}, {NodeId: "w1"}, {}, {NodeId: "gone"}}})
	groups, err := ReadPlacementGroups(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 1 {
		t.Fatalf("groups %+v", groups)
	}
	g := groups[0]
	want := []string{"agentB", "agentA", "", ""}
	if len(g.AgentIDs) != len(want) || len(g.Nodes) != len(want) || g.Nodes[0] != "w2" {
		t.Fatalf("nodes %q, agents %q; want agents %q", g.Nodes, g.AgentIDs, want)
	}
	for i := range want {
		if g.AgentIDs[i] != want[i] {
			t.Fatalf("nodes %q, agents %q; want agents %q", g.Nodes, g.AgentIDs, want)
		}
	}
}
