package shard

import (
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/ids"
	"github.com/ray-go/ray/internal/pb"
)

type table struct {
	mu   sync.Mutex
	recs map[ids.ObjectID][]byte
}

func (t *table) Record(id ids.ObjectID, e []byte) { t.mu.Lock(); t.recs[id] = e; t.mu.Unlock() }
func (t *table) Drop(id ids.ObjectID)             { t.mu.Lock(); delete(t.recs, id); t.mu.Unlock() }
func (t *table) len() int                         { t.mu.Lock(); defer t.mu.Unlock(); return len(t.recs) }

func TestShard(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	defer sys.Shutdown()
	tab := &table{recs: map[ids.ObjectID][]byte{}}
	pid := sys.Root.Spawn(Props(Config{Node: "n1", Table: tab}))
	ask := func(m any) any {
		t.Helper()
		res, err := sys.Root.RequestFuture(pid, m, 5*time.Second).Result()
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	root := ids.NewRootTaskID()
	a, b := ids.PutID(root, 1), ids.PutID(root, 2)

	if ack := ask(&pb.PutObject{ObjectId: a[:], Data: []byte("first")}).(*pb.PutObjectAck); ack.Error != "" {
		t.Fatal(ack.Error)
	}
	sys.Root.Send(pid, &pb.PutObject{ObjectId: a[:], Data: []byte("second")}) // immutable: ignored
	sys.Root.Send(pid, &pb.PutObject{ObjectId: b[:], Data: []byte("bb")})
	if r := ask(&pb.GetObject{ObjectId: a[:]}).(*pb.GetObjectReply); !r.Found || string(r.Data) != "first" {
		t.Fatalf("get a: %v %q", r.Found, r.Data)
	}
	if st := ask(&pb.StoreStats{}).(*pb.StoreStatsReply); st.Objects != 2 || st.Bytes != 7 {
		t.Fatalf("stats %+v, want 2 objects of 7 bytes", st)
	}
	if tab.len() != 2 {
		t.Fatalf("%d object table records, want 2", tab.len())
	}
	if ack := ask(&pb.PutObject{ObjectId: []byte("short")}).(*pb.PutObjectAck); ack.Error == "" {
		t.Fatal("a malformed object ID was accepted")
	}
	sys.Root.Send(pid, &pb.FreeObjects{ObjectIds: [][]byte{a[:], b[:]}})
	if r := ask(&pb.GetObject{ObjectId: a[:]}).(*pb.GetObjectReply); r.Found {
		t.Fatal("freed object still served")
	}
	if st := ask(&pb.StoreStats{}).(*pb.StoreStatsReply); st.Objects != 0 || st.Bytes != 0 || tab.len() != 0 {
		t.Fatalf("after free: %+v, %d records", st, tab.len())
	}
}
