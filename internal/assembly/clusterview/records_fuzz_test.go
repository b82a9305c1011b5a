package clusterview

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/fuzzing"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks"
)

func marshal(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

func manyResources(n int) []*pb.ResourceQty {
	out := make([]*pb.ResourceQty, n)
	for i := range out {
		out[i] = &pb.ResourceQty{Name: fmt.Sprintf("r%05d", i), Amount: 10000}
	}
	return out
}

func nodeSeeds() [][]any {
	total := []*pb.ResourceQty{{Name: "CPU", Amount: 80000}, {Name: "GPU", Amount: 10000}, {Name: "memory", Amount: 1 << 34}}
	good := &pb.NodeInfo{NodeId: "n1", Address: "10.0.0.1:4000", Total: total, ObjectStoreBytes: 1 << 30, StartedUnixMs: 1,
		Role: "worker", JobId: "0a0b0c0d", AgentId: "a1", Hostname: "h1", Pid: 77, DataAddress: "10.0.0.1:4001"}
	rec := marshal(good)
	return [][]any{
		{"n1", rec},
		{"n1", marshal(&pb.NodeInfo{NodeId: "n1", Role: "driver"})},
		{"n2", rec}, // another node's record
		{"", marshal(&pb.NodeInfo{})},
		{"n1", marshal(&pb.NodeInfo{NodeId: "n1", Total: []*pb.ResourceQty{{Name: "CPU", Amount: -10000}}})},
		{"n1", marshal(&pb.NodeInfo{NodeId: "n1", Total: []*pb.ResourceQty{{Name: "CPU", Amount: 1}, {Name: "CPU", Amount: 2}}})},
		{"n1", marshal(&pb.NodeInfo{NodeId: "n1", Total: []*pb.ResourceQty{{Amount: 1}}})},
		{"n1", marshal(&pb.NodeInfo{NodeId: "n1", Total: manyResources(MaxResources + 1)})},
		{"n1", marshal(&pb.NodeInfo{NodeId: "n1", DataAddress: "no port"})},
		{"n1", marshal(&pb.NodeInfo{NodeId: "n1", Pid: -1})},
		{"n1", rec[:len(rec)-4]},
		{"n1", []byte{0x1a, 0xff, 0xff, 0xff, 0xff, 0x0f}}, // a resource of 4 GiB
		{"n1", []byte{}},
		{"n1", marshal(&pb.NodeInfo{NodeId: "n1", Total: manyResources(MaxResources)})}, // the most a record may have
	}
}

func TestFuzzNodeRecordCorpus(t *testing.T) { fuzzing.Corpus(t, "FuzzNodeRecord", nodeSeeds()) }

// bareView is a view with no GCS behind it, for feeding records to directly.
func bareView() *View {
	return &View{nodes: map[string]*node{}, data: map[string]string{}, socket: map[string]string{}, jobs: map[string]string{}}
}

// FuzzNodeRecord feeds arbitrary node records (nodes/<id>, written by every node of the
// cluster; each node places tasks by them) to the view. A record must be refused, or be
// its key's node with a bounded list of named, non-negative resources and a host:port data
// address; never panic; the view's work on it (decoding, converting the resources,
// publishing) must allocate in proportion to the record; and it must round-trip.
func FuzzNodeRecord(f *testing.F) {
	_, _ = DecodeNode("n1", nodeSeeds()[0][1].([]byte))
	f.Fuzz(func(t *testing.T, id string, rec []byte) {
		v := bareView()
		var info *pb.NodeInfo
		fuzzing.CheckAlloc(t, 64*uint64(len(rec)+len(id))+256<<10, "putNodeLocked", func() {
			info = v.putNodeLocked(gcs.KV{Key: gcs.NodeKey(id), Value: rec})
			v.publishLocked()
		})
		if info == nil {
			if len(v.load().nodes) != 0 || len(v.load().data) != 0 {
				t.Fatalf("a refused record changed the view: %+v", v.load())
			}
			return
		}
		if info.GetNodeId() != id || len(info.GetTotal()) > MaxResources || info.GetPid() < 0 {
			t.Fatalf("accepted %v for node %q", info, id)
		}
		total := tasks.ResourcesFromPB(info.GetTotal())
		for _, q := range info.GetTotal() {
			if q.GetName() == "" || q.GetAmount() < 0 || int64(total.Get(q.GetName())) != q.GetAmount() {
				t.Fatalf("accepted the resource %v (held as %v)", q, total.Get(q.GetName()))
			}
		}
		again, err := DecodeNode(id, marshal(info))
		if err != nil || !proto.Equal(again, info) {
			t.Fatalf("re-encoded node %v decodes to %v, %v", info, again, err)
		}
	})
}

func loadSeeds() [][]any {
	good := &pb.NodeLoad{NodeId: "n1", Available: []*pb.ResourceQty{{Name: "CPU", Amount: -5000}, {Name: "GPU", Amount: 10000}}, Queued: 3, UnixMs: 1,
		StoreBudget: 1 << 30, StoreInMemory: 1 << 20, StoreSpilled: 0, StoreObjects: 4, InFlightBytes: 10,
		StoreLargest: []*pb.StoredObject{{ObjectId: make([]byte, 20), Size: 1 << 20}}}
	rec := marshal(good)
	return [][]any{
		{"n1", rec},
		{"n1", marshal(&pb.NodeLoad{NodeId: "n1"})},
		{"n2", rec},
		{"n1", marshal(&pb.NodeLoad{NodeId: "n1", Queued: -1})},
		{"n1", marshal(&pb.NodeLoad{NodeId: "n1", Available: []*pb.ResourceQty{{Name: "CPU", Amount: math.MinInt64}}})},
		{"n1", marshal(&pb.NodeLoad{NodeId: "n1", Available: manyResources(MaxResources + 1)})},
		{"n1", rec[:len(rec)-3]},
		{"n1", []byte{}},
	}
}

func TestFuzzLoadReportCorpus(t *testing.T) { fuzzing.Corpus(t, "FuzzLoadReport", loadSeeds()) }

// FuzzLoadReport feeds arbitrary load reports (load/<id>, written by every node) to a view
// that knows node n1: a report must be refused, or be its key's node's with a bounded list
// of named resources and a non-negative queue; never a panic; the view's work on it must
// allocate in proportion to it; and it must round-trip.
func FuzzLoadReport(f *testing.F) {
	_, _ = DecodeLoad("n1", loadSeeds()[0][1].([]byte))
	f.Fuzz(func(t *testing.T, id string, rec []byte) {
		v := bareView()
		if v.putNodeLocked(gcs.KV{Key: gcs.NodeKey("n1"), Value: nodeSeeds()[0][1].([]byte)}) == nil {
			t.Fatal("the node seed is refused")
		}
		var (
			l   *pb.NodeLoad
			err error
		)
		fuzzing.CheckAlloc(t, 64*uint64(len(rec)+len(id))+256<<10, "putLoadLocked", func() {
			l, err = DecodeLoad(id, rec)
			v.putLoadLocked(gcs.KV{Key: gcs.LoadKey(id), Value: rec})
			v.publishLocked()
		})
		n := v.nodes["n1"]
		if err != nil {
			if n.hasLoad {
				t.Fatalf("a refused report was applied: %v", err)
			}
			return
		}
		if l.GetNodeId() != id || l.GetQueued() < 0 || len(l.GetAvailable()) > MaxResources {
			t.Fatalf("accepted %v for node %q", l, id)
		}
		if id == "n1" && (!n.hasLoad || n.queued != int(l.GetQueued())) {
			t.Fatalf("an accepted report was not applied: %v", l)
		}
		again, err := DecodeLoad(id, marshal(l))
		if err != nil || !proto.Equal(again, l) {
			t.Fatalf("re-encoded report %v decodes to %v, %v", l, again, err)
		}
	})
}

// TestRecordErrors: a record the view refuses says why.
func TestRecordErrors(t *testing.T) {
	ns := nodeSeeds()
	for i, want := range map[int]string{2: `names node "n1"`, 3: "without a node ID", 4: `-10000 of resource "CPU"`,
		5: `resource "CPU" twice`, 6: "without a name", 7: "more than 128", 8: `data address "no port"`, 9: "negative pid",
		10: "decode the record", 11: "decode the record"} {
		if _, err := DecodeNode(ns[i][0].(string), ns[i][1].([]byte)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("node seed %d: %v, want an error saying %q", i, err, want)
		}
	}
	ls := loadSeeds()
	for i, want := range map[int]string{2: `names node "n1"`, 3: "-1 tasks queued", 4: "-9223372036854775808 of resource", 5: "more than 128", 6: "decode the load report"} {
		if _, err := DecodeLoad(ls[i][0].(string), ls[i][1].([]byte)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("load seed %d: %v, want an error saying %q", i, err, want)
		}
	}
}
