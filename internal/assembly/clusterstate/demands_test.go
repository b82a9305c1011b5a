package clusterstate

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/gcstest"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
	"github.com/ray-go/ray/internal/base/pb"
)

// TestReadDemands: Status.Demands has the placement groups that wait (PENDING, with how
// long and why; RESCHEDULING, with only its bundles not placed again), not the placed or
// removed ones, and the tasks and actors the nodes' load reports say wait, by shape and
// group: an owner's backlog reported at two nodes counts once (its largest), two owners'
// add up, actors add up, and where they wait is the machines' (agents') IDs.
func TestReadDemands(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(memstore.Options{})
	defer s.Close()
	put := func(key string, m proto.Message) { gcstest.PutProto(t, s, key, m) }
	cpu := func(tenths int64) []*pb.ResourceQty { return []*pb.ResourceQty{{Name: "CPU", Amount: tenths * 1000}} }
	now := time.Now()
	put(gcs.PlacementGroupKey("g1"), &pb.PlacementGroupInfo{Id: "g1", JobId: "01", Strategy: "PACK", State: "PENDING",
		CreatedUnixMs: now.Add(-90 * time.Second).UnixMilli(), Detail: "no node has CPU 8 free",
		Bundles: []*pb.PlacementBundle{{Resources: cpu(80)}, {Resources: cpu(80)}}})
	put(gcs.PlacementGroupKey("g2"), &pb.PlacementGroupInfo{Id: "g2", JobId: "01", Strategy: "SPREAD", State: "RESCHEDULING",
		CreatedUnixMs: now.Add(-time.Hour).UnixMilli(),
		Bundles:       []*pb.PlacementBundle{{Resources: cpu(10), NodeId: "w1"}, {Resources: cpu(20)}}})
	put(gcs.PlacementGroupKey("g3"), &pb.PlacementGroupInfo{Id: "g3", JobId: "01", Strategy: "PACK", State: "CREATED",
		Bundles: []*pb.PlacementBundle{{Resources: cpu(10), NodeId: "w1"}}})
	put(gcs.PlacementGroupKey("g4"), &pb.PlacementGroupInfo{Id: "g4", JobId: "01", Strategy: "PACK", State: "REMOVED",
		Bundles: []*pb.PlacementBundle{{Resources: cpu(10)}}})
	put(gcs.NodeKey("w1"), &pb.NodeInfo{NodeId: "w1", AgentId: "agentA", Role: "worker", JobId: "01"})
	put(gcs.NodeKey("w2"), &pb.NodeInfo{NodeId: "w2", AgentId: "agentB", Role: "worker", JobId: "01"})
	put(gcs.NodeKey("l1"), &pb.NodeInfo{NodeId: "l1", Role: "local"})
	put(gcs.LoadKey("w1"), &pb.NodeLoad{NodeId: "w1", Queued: 12, Demands: []*pb.ResourceDemand{
		{Shape: cpu(10), Owner: "driver/1", Tasks: 10},
		{Shape: cpu(10), Owner: "other/1", Tasks: 3},
		{Shape: cpu(20), Actors: 1},
		{Shape: cpu(10), Owner: "driver/1", PlacementGroup: "g3", Tasks: 2},
		{Shape: cpu(10), Owner: "bad", Tasks: -1},
	}})
	put(gcs.LoadKey("w2"), &pb.NodeLoad{NodeId: "w2", Queued: 8, DemandsOmitted: 5, Demands: []*pb.ResourceDemand{
		{Shape: cpu(10), Owner: "driver/1", Tasks: 8}, // the same owner's backlog, spilled here
		{Shape: cpu(20), Actors: 2},
	}})
	put(gcs.LoadKey("l1"), &pb.NodeLoad{NodeId: "l1", Demands: []*pb.ResourceDemand{{Shape: cpu(5), Owner: "local/1", Tasks: 1}}})

	st, err := Read(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	d := st.Demands
	if len(d.PlacementGroups) != 2 {
		t.Fatalf("placement group demands %+v, want g2 (oldest) and g1", d.PlacementGroups)
	}
	g2, g1 := d.PlacementGroups[0], d.PlacementGroups[1]
	if g1.ID != "g1" || g1.State != "PENDING" || g1.Strategy != "PACK" || len(g1.Bundles) != 2 || g1.Bundles[1]["CPU"] != 8 ||
		g1.PendingSeconds < 89 || g1.PendingSeconds > 3600 || g1.Reason != "no node has CPU 8 free" || g1.JobID != "01" {
		t.Errorf("the pending group %+v", g1)
	}
	if g2.ID != "g2" || g2.State != "RESCHEDULING" || len(g2.Bundles) != 1 || g2.Bundles[0]["CPU"] != 2 || g2.PendingSeconds != 0 {
		t.Errorf("the rescheduling group %+v: want only its bundle not placed (CPU 2), no pending time", g2)
	}
	type row struct {
		cpu           float64
		group         string
		tasks, actors int
		agents        string
	}
	var got []row
	for _, td := range d.Tasks {
		agents := ""
		for _, a := range td.AgentIDs {
			agents += a + " "
		}
		got = append(got, row{td.Shape["CPU"], td.PlacementGroup, td.Tasks, td.Actors, agents})
	}
	want := []row{
		{1, "", 13, 0, "agentA agentB "}, // driver/1: max(10, 8), other/1: 3
		{2, "", 0, 3, "agentA agentB "},
		{1, "g3", 2, 0, "agentA "},
		{0.5, "", 1, 0, "l1 "}, // a node no agent runs: its own ID
	}
	if len(got) != len(want) {
		t.Fatalf("task demands %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("task demand %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if d.Omitted != 5 {
		t.Errorf("omitted %d, want 5", d.Omitted)
	}
}

// TestReadDemandsNone: a cluster where nothing waits has empty (not null) lists.
func TestReadDemandsNone(t *testing.T) {
	s := memstore.New(memstore.Options{})
	defer s.Close()
	gcstest.PutProto(t, s, gcs.LoadKey("w1"), &pb.NodeLoad{NodeId: "w1"})
	st, err := Read(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if st.Demands.PlacementGroups == nil || st.Demands.Tasks == nil || len(st.Demands.PlacementGroups)+len(st.Demands.Tasks) != 0 {
		t.Fatalf("demands %+v, want empty lists", st.Demands)
	}
}
