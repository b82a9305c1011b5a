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
