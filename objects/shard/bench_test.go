package shard

import (
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// spillData is 8 MiB of int64s counting up: numbers as objects often hold them.
func spillData() []byte {
	b := make([]byte, 8<<20)
	for i := 0; i < len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], uint64(i/8))
	}
	return b
}

// spillKinds are the two kinds of data of the benchmark: compressible numbers
// (counting int64s) and random bytes.
var spillKinds = []struct {
	name string
	data func() []byte
}{
	{"numbers", spillData},
	{"random", func() []byte {
		b := make([]byte, 8<<20)
		x := uint64(0x9E3779B97F4A7C15)
		for i := 0; i+8 <= len(b); i += 8 {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			for k := range 8 {
				b[i+k] = byte(x >> (8 * k))
			}
		}
		return b
	}},
}

// benchID is the object the spill benchmarks write and read.
var benchID = ids.PutID(ids.NewRootTaskID(), 1)

func BenchmarkSpillWrite(b *testing.B) {
	for _, k := range spillKinds {
		b.Run(k.name, func(b *testing.B) {
			data := k.data()
			path := filepath.Join(b.TempDir(), "x.zst")
			b.SetBytes(int64(len(data)))
			var n int64
			for b.Loop() {
				var err error
				if n, _, err = writeSpill(path, benchID, data); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(data))/float64(n), "ratio")
		})
	}
}

func BenchmarkSpillRead(b *testing.B) {
	for _, k := range spillKinds {
		b.Run(k.name, func(b *testing.B) {
			data := k.data()
			path := filepath.Join(b.TempDir(), "x.zst")
			_, sum, err := writeSpill(path, benchID, data)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := readSpill(spillRecord{path: path, id: benchID, size: int64(len(data)), sum: sum}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// shardSpillObjects is how many 8 MiB objects the shard benchmarks put into a store whose
// budget holds two of them.
const (
	shardSpillObjects = 12
	shardSpillBudget  = 16 << 20
)

// benchShard spawns a shard for a benchmark and returns an ask function and its stop.
func benchShard(b *testing.B, dir string, workers int) (ask func(m any) any, stop func()) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	pid := sys.Root.Spawn(Props(Config{Node: "n1", Budget: shardSpillBudget, SpillDir: dir, SpillWorkers: workers, Logger: quiet}))
	return func(m any) any {
		res, err := sys.Root.RequestFuture(pid, m, time.Minute).Result()
		if err != nil {
			b.Fatal(err)
		}
		return res
	}, sys.Shutdown
}

// waitSpilled waits until the shard holds at most its budget in memory, hence at most two
// of the objects (the store spills only once over its budget): the others are on disk.
func waitSpilled(ask func(m any) any) {
	for {
		st := ask(&pb.StoreStats{}).(*pb.StoreStatsReply)
		if st.MemoryBytes <= shardSpillBudget && st.SpilledObjects >= shardSpillObjects-2 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkShardSpill: 12 objects of 8 MiB put one after the other (each put waits for
// its acknowledgement, held back while the store is over budget) into a shard whose budget
// holds two; timed until all but two are on disk. Bytes are those put.
func BenchmarkShardSpill(b *testing.B) {
	for _, k := range spillKinds {
		for _, w := range []int{1, 0} {
			b.Run(fmt.Sprintf("%s/workers=%d", k.name, w), func(b *testing.B) { benchSpill(b, k.data, w) })
		}
	}
}

// benchSpill is BenchmarkShardSpill with data and SpillWorkers w (0: GOMAXPROCS).
func benchSpill(b *testing.B, kind func() []byte, w int) {
	data := kind()
	b.SetBytes(int64(len(data)) * shardSpillObjects)
	for b.Loop() {
		b.StopTimer()
		dir := filepath.Join(b.TempDir(), "spill")
		ask, stop := benchShard(b, dir, w)
		root := ids.NewRootTaskID()
		b.StartTimer()
		for i := range shardSpillObjects {
			id := ids.PutID(root, uint32(i+1))
			if ack := ask(&pb.PutObject{ObjectId: id[:], Data: data}).(*pb.PutObjectAck); ack.Error != "" {
				b.Fatal(ack.Error)
			}
		}
		waitSpilled(ask)
		b.StopTimer()
		stop()
		os.RemoveAll(dir)
		b.StartTimer()
	}
}

// BenchmarkShardRestore: Gets of 12 spilled objects of 8 MiB, 8 askers at a time (as
// several tasks reading their arguments). Bytes are those read.
func BenchmarkShardRestore(b *testing.B) {
	for _, k := range spillKinds {
		b.Run(k.name, func(b *testing.B) {
			data := k.data()
			dir := filepath.Join(b.TempDir(), "spill")
			ask, stop := benchShard(b, dir, 0)
			defer stop()
			root := ids.NewRootTaskID()
			var objs []ids.ObjectID
			for i := range shardSpillObjects {
				id := ids.PutID(root, uint32(i+1))
				objs = append(objs, id)
				ask(&pb.PutObject{ObjectId: id[:], Data: data})
			}
			waitSpilled(ask)
			b.SetBytes(int64(len(data)) * shardSpillObjects)
			for b.Loop() {
				var wg sync.WaitGroup
				next := make(chan ids.ObjectID, len(objs))
				for _, id := range objs {
					next <- id
				}
				close(next)
				for range 8 {
					wg.Go(func() {
						for id := range next {
							r := ask(&pb.GetObject{ObjectId: id[:]}).(*pb.GetObjectReply)
							if !r.Found || len(r.Data) != len(data) {
								b.Errorf("object %s: found %v, error %q", id, r.Found, r.Error)
							}
						}
					})
				}
				wg.Wait()
			}
		})
	}
}

// BenchmarkShardPutGet is a store's hot path: a put of a 64 KiB object, a get of it and
// its free, each through the shard's mailbox, with a budget of its own ("budget") and
// with a grant of a shared budget ("grant": after the first chunk, a put costs the same
// comparison against the grant; the grant is taken and given back only across chunks).
func BenchmarkShardPutGet(b *testing.B) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, mode := range []string{"budget", "grant"} {
		b.Run(mode, func(b *testing.B) {
			cfg := Config{Node: "n1", Budget: 1 << 30, SpillDir: b.TempDir(), Logger: quiet}
			p := &pool{free: 1 << 30, held: map[*poolGrant]int64{}}
			if mode == "grant" {
				cfg.Grant = &poolGrant{p}
			}
			sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
			defer sys.Shutdown()
			pid := sys.Root.Spawn(Props(cfg))
			data := make([]byte, 64<<10)
			root := ids.NewRootTaskID()
			i := uint32(0)
			for b.Loop() {
				i++
				id := ids.PutID(root, i)
				if _, err := sys.Root.RequestFuture(pid, &pb.PutObject{ObjectId: id[:], Data: data}, 5*time.Second).Result(); err != nil {
					b.Fatal(err)
				}
				r, err := sys.Root.RequestFuture(pid, &pb.GetObject{ObjectId: id[:]}, 5*time.Second).Result()
				if err != nil || !r.(*pb.GetObjectReply).Found {
					b.Fatal(err)
				}
				sys.Root.Send(pid, &pb.FreeObjects{ObjectIds: [][]byte{id[:]}})
			}
			p.mu.Lock()
			b.ReportMetric(float64(p.takes)/float64(b.N), "grant-asks/op")
			p.mu.Unlock()
		})
	}
}
