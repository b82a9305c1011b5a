package shard

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/klauspost/compress/s2"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// TestPullChunks speaks PullObject to a shard directly: validation, chunk bounds, the
// whole object's size and checksum on every chunk, s2 only when it pays.
func TestPullChunks(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	defer sys.Shutdown()
	pid := sys.Root.Spawn(Props(Config{Node: "n1", Logger: quiet}))
	ask := func(m any) any {
		t.Helper()
		res, err := sys.Root.RequestFuture(pid, m, 5*time.Second).Result()
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	pull := func(id ids.ObjectID, off int64, n int32, s2 bool) *pb.PullObjectReply {
		t.Helper()
		return ask(&pb.PullObject{ObjectId: id[:], Offset: off, Length: n, AllowS2: s2}).(*pb.PullObjectReply)
	}
	root := ids.NewRootTaskID()
	numbers, random, empty, small := ids.PutID(root, 1), ids.PutID(root, 2), ids.PutID(root, 3), ids.PutID(root, 4)
	nums := make([]byte, 3<<20+5) // int64s counting up: s2 halves them
	for i := 0; i+8 <= len(nums); i += 8 {
		binary.LittleEndian.PutUint64(nums[i:], uint64(i/8))
	}
	rnd := make([]byte, 2<<20)
	r := rand.NewChaCha8([32]byte{1})
	r.Read(rnd)
	ask(&pb.PutObject{ObjectId: numbers[:], Data: nums})
	ask(&pb.PutObject{ObjectId: random[:], Data: rnd})
	ask(&pb.PutObject{ObjectId: empty[:]}) // nil data: an empty object
	ask(&pb.PutObject{ObjectId: small[:], Data: []byte("hello")})

	// Invalid requests are answered with an error.
	for _, n := range []int32{0, -1, MaxPullChunk + 1} {
		if rep := pull(numbers, 0, n, false); rep.Error == "" || len(rep.Data) != 0 {
			t.Errorf("length %d: %+v, want an error", n, rep)
		}
	}
	for _, off := range []int64{-1, int64(len(nums)) + 1} {
		if rep := pull(numbers, off, 100, false); rep.Error == "" || len(rep.Data) != 0 {
			t.Errorf("offset %d: %+v, want an error", off, rep)
		}
	}
	if rep := pull(ids.PutID(root, 99), 0, 100, false); rep.Found || rep.Error != "" {
		t.Errorf("missing object: %+v, want found=false and no error", rep)
	}

	// Chunks of the numbers: every one names the whole object; s2 when asked and it pays.
	wantCRC := crc32.Checksum(nums, castagnoli)
	var got []byte
	for off := int64(0); off < int64(len(nums)); off += MaxPullChunk {
		rep := pull(numbers, off, MaxPullChunk, true)
		if !rep.Found || rep.Error != "" || rep.Size != int64(len(nums)) || rep.Crc32C != wantCRC || rep.Offset != off {
			t.Fatalf("chunk at %d: found %v error %q size %d crc %08x (want %08x)", off, rep.Found, rep.Error, rep.Size, rep.Crc32C, wantCRC)
		}
		data := rep.Data
		if last := int64(len(nums)) - off; last < minCompress {
			if rep.Compressed || last != int64(len(data)) {
				t.Fatalf("last chunk of %d bytes: compressed %v, %d bytes", last, rep.Compressed, len(data))
			}
		} else {
			if !rep.Compressed || len(data) > MaxPullChunk*7/8 {
				t.Fatalf("chunk at %d of numbers: compressed %v, %d bytes", off, rep.Compressed, len(data))
			}
			var err error
			if data, err = s2.Decode(nil, data); err != nil {
				t.Fatal(err)
			}
		}
		got = append(got, data...)
	}
	if string(got) != string(nums) {
		t.Fatal("numbers reassembled wrong")
	}
	// The same chunk without s2, and a short chunk across the end.
	if rep := pull(numbers, MaxPullChunk, 1000, false); rep.Compressed || string(rep.Data) != string(nums[MaxPullChunk:MaxPullChunk+1000]) {
		t.Fatalf("uncompressed chunk: compressed %v, %d bytes", rep.Compressed, len(rep.Data))
	}
	if rep := pull(numbers, int64(len(nums))-10, MaxPullChunk, true); string(rep.Data) != string(nums[len(nums)-10:]) {
		t.Fatalf("tail: %d bytes", len(rep.Data))
	}
	// Random bytes: s2 does not pay, so they go as they are.
	rep := pull(random, 0, MaxPullChunk, true)
	if rep.Compressed || string(rep.Data) != string(rnd[:MaxPullChunk]) || rep.Crc32C != crc32.Checksum(rnd, castagnoli) {
		t.Fatalf("random chunk: compressed %v, %d bytes", rep.Compressed, len(rep.Data))
	}
	// Empty and small objects.
	if rep := pull(empty, 0, MaxPullChunk, true); !rep.Found || rep.Size != 0 || len(rep.Data) != 0 || rep.Crc32C != 0 || rep.Error != "" {
		t.Fatalf("empty object: %+v", rep)
	}
	if r := ask(&pb.GetObject{ObjectId: empty[:]}).(*pb.GetObjectReply); !r.Found || r.Error != "" || len(r.Data) != 0 {
		t.Fatalf("get of the empty object: %+v", r)
	}
	if rep := pull(small, 0, MaxPullChunk, true); rep.Compressed || string(rep.Data) != "hello" || rep.Size != 5 {
		t.Fatalf("small object: %+v", rep)
	}
	if rep := pull(small, 5, 1, false); !rep.Found || len(rep.Data) != 0 || rep.Size != 5 {
		t.Fatalf("pull at the end: %+v", rep)
	}
}

// TestPullSpilled: a spilled object is read back once for a pull, kept in memory while it
// is pulled, and evicted again (no second write) once its last chunk is served when the
// shard is over budget. A corrupt file is an error, as for GetObject.
func TestPullSpilled(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	defer sys.Shutdown()
	dir := t.TempDir()
	pid := sys.Root.Spawn(Props(Config{Node: "n1", Budget: 1 << 20, SpillDir: dir, Logger: quiet}))
	ask := func(m any) any {
		t.Helper()
		res, err := sys.Root.RequestFuture(pid, m, 10*time.Second).Result()
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	root := ids.NewRootTaskID()
	value := func(i int) []byte {
		b := make([]byte, 3<<20)
		for k := range b {
			b[k] = byte(i*7 + k%253)
		}
		return b
	}
	var objs []ids.ObjectID
	for i := range 3 {
		id := ids.PutID(root, uint32(i+1))
		objs = append(objs, id)
		ask(&pb.PutObject{ObjectId: id[:], Data: value(i)})
	}
	stats := func() *pb.StoreStatsReply { return ask(&pb.StoreStats{}).(*pb.StoreStatsReply) }
	deadline := time.Now().Add(10 * time.Second)
	for stats().SpilledObjects != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("not all spilled: %+v", stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Several chunk requests at once while the file is read: all answered from one read.
	id := objs[1]
	futs := make([]*actor.Future, 3)
	for i := range futs {
		futs[i] = sys.Root.RequestFuture(pid, &pb.PullObject{ObjectId: id[:], Offset: int64(i) * MaxPullChunk, Length: MaxPullChunk}, 10*time.Second)
	}
	want := value(1)
	for i, f := range futs {
		res, err := f.Result()
		if err != nil {
			t.Fatal(err)
		}
		rep := res.(*pb.PullObjectReply)
		if !rep.Found || rep.Error != "" || string(rep.Data) != string(want[i*MaxPullChunk:(i+1)*MaxPullChunk]) || rep.Crc32C != crc32.Checksum(want, castagnoli) {
			t.Fatalf("chunk %d of a spilled object: found %v error %q, %d bytes", i, rep.Found, rep.Error, len(rep.Data))
		}
	}
	// The last chunk was served: the restored copy is evicted again, without a write.
	if st := stats(); st.SpilledObjects != 3 || st.MemoryBytes != 0 || st.Bytes != st.MemoryBytes+st.SpilledBytes || st.SpillErrors != 0 {
		t.Fatalf("after pulling a spilled object: %+v", st)
	}
	// A partly pulled object stays in memory (pinned) over budget.
	ask(&pb.PullObject{ObjectId: objs[0][:], Offset: 0, Length: 1000})
	if st := stats(); st.SpilledObjects != 2 || st.MemoryBytes != 3<<20 || st.Bytes != st.MemoryBytes+st.SpilledBytes {
		t.Fatalf("during a pull of a spilled object: %+v", st)
	}
	// Freeing it removes its file and its memory.
	ask(&pb.FreeObjects{ObjectIds: [][]byte{objs[0][:]}})
	if st := stats(); st.Objects != 2 || st.SpilledObjects != 2 || st.MemoryBytes != 0 || st.Bytes != st.SpilledBytes {
		t.Fatalf("after freeing a restored object: %+v", st)
	}

	// A corrupt spill file: the pull reports the same error as a get.
	path := spillFile(t, dir, objs[2])
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	rep := ask(&pb.PullObject{ObjectId: objs[2][:], Length: MaxPullChunk}).(*pb.PullObjectReply)
	get := ask(&pb.GetObject{ObjectId: objs[2][:]}).(*pb.GetObjectReply)
	if rep.Found || !strings.Contains(rep.Error, "corrupt") || rep.Error != get.Error || len(rep.Data) != 0 {
		t.Fatalf("pull of a corrupt spill file: found %v error %q (get: %q)", rep.Found, rep.Error, get.Error)
	}
	if st := stats(); st.SpilledObjects != 2 || st.MemoryBytes != 0 {
		t.Fatalf("after a failed restore: %+v", st)
	}
}
