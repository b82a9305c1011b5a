package clusterstate

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/gcstest"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
	"github.com/ray-go/ray/internal/base/pb"
)

// TestRead: alive nodes first and summed (resources in use from their worker processes'
// load reports), dead ones counted, the alive head's dashboard URL, jobs newest first,
// actors by ID with Ray's state names; records that do not decode are left out.
func TestRead(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(memstore.Options{})
	defer s.Close()
	put := func(key string, m proto.Message) { gcstest.PutProto(t, s, key, m) }
	now := time.Now().UnixMilli()
	cpu := func(n int64) []*pb.ResourceQty { return []*pb.ResourceQty{{Name: "CPU", Amount: n * 10000}} }
	put(gcs.AgentKey("head"), &pb.AgentInfo{AgentId: "head", Head: true, Total: cpu(4), ObjectStoreBytes: 100, StartedUnixMs: now,
		MetricsAddress: "127.0.0.1:1", DashboardAddress: "127.0.0.1:2"})
	put(gcs.AgentKey("gone"), &pb.AgentInfo{AgentId: "gone", Total: cpu(8), ObjectStoreBytes: 100, StartedUnixMs: now - 1000})
	if _, err := s.Put(ctx, gcs.AgentAliveKey("head"), []byte("h"), 0); err != nil {
		t.Fatal(err)
	}
	put(gcs.NodeKey("w1"), &pb.NodeInfo{NodeId: "w1", AgentId: "head", Total: cpu(4)})
	put(gcs.LoadKey("w1"), &pb.NodeLoad{NodeId: "w1", Available: cpu(1), StoreInMemory: 30})
	put(gcs.JobKey("01"), &pb.JobInfo{JobId: "01", State: pb.JobInfo_SUCCEEDED, StartUnixMs: now - 5000, EndUnixMs: now - 4000})
	put(gcs.JobKey("02"), &pb.JobInfo{JobId: "02", State: pb.JobInfo_RUNNING, StartUnixMs: now})
	put(gcs.ActorKey("b"), &pb.ActorInfo{ActorId: []byte{2}, Class: "C", Name: "n2", Phase: int32(lifecycle.Dead)})
	put(gcs.ActorKey("a"), &pb.ActorInfo{ActorId: []byte{1}, Class: "C", Name: "n1", Phase: int32(lifecycle.Alive)})
	if _, err := s.Put(ctx, gcs.ActorKey("junk"), []byte{0xff, 0xff}, 0); err != nil {
		t.Fatal(err)
	}

	st, err := Read(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Nodes) != 2 || st.Nodes[0].AgentID != "head" || !st.Nodes[0].Alive || st.Nodes[1].Alive {
		t.Fatalf("nodes %+v", st.Nodes)
	}
	h := st.Nodes[0]
	if h.InUse["CPU"] != 3 || h.ObjectStoreUsed != 30 || h.Workers != 1 || h.MetricsAddress != "127.0.0.1:1" {
		t.Fatalf("head %+v", h)
	}
	c := st.Cluster
	if c.AliveNodes != 1 || c.DeadNodes != 1 || c.Total["CPU"] != 4 || c.InUse["CPU"] != 3 || c.RunningJobs != 1 || c.ObjectStoreBudget != 100 {
		t.Fatalf("cluster %+v", c)
	}
	if st.Dashboard != "http://127.0.0.1:2/" {
		t.Fatalf("dashboard %q", st.Dashboard)
	}
	if len(st.Jobs) != 2 || st.Jobs[0].JobID != "02" || st.Jobs[0].State != "RUNNING" || st.Jobs[1].End == "" {
		t.Fatalf("jobs %+v", st.Jobs)
	}
	actors, err := ReadActors(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(actors) != 2 || actors[0].Name != "n1" || actors[0].State != "ALIVE" || actors[1].State != "DEAD" || actors[0].ActorID != "01" {
		t.Fatalf("actors %+v", actors)
	}
}

// TestReadStoreTotals: the cluster's object store figures count every store that
// reports, as rayctl memory totals them: an agent's worker processes', a node's that no
// agent runs (a local node), and a joined driver's (driverload/); the driver's budget too.
func TestReadStoreTotals(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(memstore.Options{})
	defer s.Close()
	put := func(key string, m proto.Message) { gcstest.PutProto(t, s, key, m) }
	now := time.Now().UnixMilli()
	put(gcs.AgentKey("head"), &pb.AgentInfo{AgentId: "head", Head: true, ObjectStoreBytes: 1000, StartedUnixMs: now})
	if _, err := s.Put(ctx, gcs.AgentAliveKey("head"), []byte("h"), 0); err != nil {
		t.Fatal(err)
	}
	put(gcs.NodeKey("w1"), &pb.NodeInfo{NodeId: "w1", AgentId: "head", Role: "worker", JobId: "01"})
	put(gcs.LoadKey("w1"), &pb.NodeLoad{NodeId: "w1", StoreInMemory: 30})
	put(gcs.NodeKey("l1"), &pb.NodeInfo{NodeId: "l1", Role: "local"})
	put(gcs.LoadKey("l1"), &pb.NodeLoad{NodeId: "l1", StoreInMemory: 5})
	put(gcs.NodeKey("d1"), &pb.NodeInfo{NodeId: "d1", Role: driverRole, JobId: "01", ObjectStoreBytes: 500})
	put(gcs.DriverLoadKey("d1"), &pb.NodeLoad{NodeId: "d1", StoreInMemory: 8 << 20, StoreBudget: 500})
	put(gcs.JobKey("01"), &pb.JobInfo{JobId: "01", State: pb.JobInfo_RUNNING, StartUnixMs: now, DriverNode: "d1"})

	st, err := Read(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.Cluster.ObjectStoreUsed, int64(30+5+8<<20); got != want {
		t.Errorf("cluster object store used %d, want %d (workers' 30, the local node's 5, the driver's 8 MiB)", got, want)
	}
	if got, want := st.Cluster.ObjectStoreBudget, int64(1000+500); got != want {
		t.Errorf("cluster object store budget %d, want %d (the head's and the driver's)", got, want)
	}
	if len(st.Nodes) != 1 || st.Nodes[0].ObjectStoreUsed != 30 {
		t.Errorf("nodes %+v: the head's row counts its worker process's 30 bytes", st.Nodes)
	}
	if len(st.Drivers) != 1 || st.Drivers[0].ObjectStoreUsed != 8<<20 {
		t.Errorf("drivers %+v: the driver's row has its 8 MiB", st.Drivers)
	}
}

// TestReadActorsMachine: an actor's node is its job's worker process; its record also
// names that worker process's machine (agent), the node ID rayctl list nodes shows, while
// the worker process runs.
func TestReadActorsMachine(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(memstore.Options{})
	defer s.Close()
	put := func(key string, m proto.Message) { gcstest.PutProto(t, s, key, m) }
	put(gcs.NodeKey("w1"), &pb.NodeInfo{NodeId: "w1", AgentId: "agent1", Role: "worker", JobId: "01"})
	put(gcs.ActorKey("a"), &pb.ActorInfo{ActorId: []byte{1}, Class: "C", Phase: int32(lifecycle.Alive), Node: "w1"})
	put(gcs.ActorKey("b"), &pb.ActorInfo{ActorId: []byte{2}, Class: "C", Phase: int32(lifecycle.Dead), Node: "gone"})
	actors, err := ReadActors(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(actors) != 2 || actors[0].Node != "w1" || actors[0].AgentID != "agent1" || actors[1].AgentID != "" {
		t.Fatalf("actors %+v: want the first on w1 of agent1, the second's machine unknown", actors)
	}
}
