package transfer

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/objects/shard"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func newSystem(t testing.TB) *actor.ActorSystem {
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	t.Cleanup(sys.Shutdown)
	return sys
}

func put(t testing.TB, sys *actor.ActorSystem, store *actor.PID, id ids.ObjectID, data []byte) {
	t.Helper()
	res, err := sys.Root.RequestFuture(store, &pb.PutObject{ObjectId: id[:], Data: data}, 10*time.Second).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ack := res.(*pb.PutObjectAck); ack.Error != "" {
		t.Fatal(ack.Error)
	}
}

func randomBytes(n int, seed byte) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{seed}).Read(b)
	return b
}

// numbers are int64s counting up, as objects often hold them: s2 about halves them.
func numbers(n int) []byte {
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], uint64(i/8))
	}
	return b
}

func TestPull(t *testing.T) {
	sys := newSystem(t)
	store := sys.Root.Spawn(shard.Props(shard.Config{Node: "n1", Logger: quiet}))
	root := ids.NewRootTaskID()
	cases := []struct {
		name string
		data []byte
		opt  Options
	}{
		{"empty", nil, Options{}},
		{"1 byte", randomBytes(1, 1), Options{}},
		{"1 MiB-1", randomBytes(MaxChunk-1, 2), Options{}},
		{"1 MiB", randomBytes(MaxChunk, 3), Options{}},
		{"1 MiB+1", randomBytes(MaxChunk+1, 4), Options{}},
		{"5.5 MiB random", randomBytes(11<<19, 5), Options{}},
		{"5.5 MiB random s2", randomBytes(11<<19, 6), Options{S2: true}},
		{"5 MiB numbers", numbers(5 << 20), Options{}},
		{"5 MiB numbers s2", numbers(5<<20 + 8), Options{S2: true}},
		{"small chunks", randomBytes(1<<20+3, 7), Options{ChunkBytes: 64 << 10, InFlight: 2}},
		{"small chunks, numbers s2, 1 in flight", numbers(1<<20 + 3), Options{ChunkBytes: 100 << 10, InFlight: 1, S2: true}},
		{"oversized chunks", randomBytes(3<<20, 8), Options{ChunkBytes: 8 << 20, InFlight: 100}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := ids.PutID(root, uint32(i+1))
			put(t, sys, store, id, c.data)
			st := &stats{}
			got, err := pull(context.Background(), sys.Root, store, id, c.opt, st)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.data) || string(got) != string(c.data) {
				t.Fatalf("pulled %d bytes, differing from the %d put", len(got), len(c.data))
			}
			chunk := c.opt.withDefaults().ChunkBytes
			if want := max(1, (len(c.data)+chunk-1)/chunk); st.chunks != want {
				t.Errorf("%d chunks, want %d", st.chunks, want)
			}
			switch {
			case !c.opt.S2 && st.compressed != 0:
				t.Errorf("%d chunks compressed without S2", st.compressed)
			case c.opt.S2 && strings.Contains(c.name, "numbers"):
				// Every chunk of 4 KiB or more compresses.
				want := len(c.data) / chunk
				if len(c.data)%chunk >= 4<<10 {
					want++
				}
				if st.compressed != want || st.wire > int64(len(c.data))*7/8 {
					t.Errorf("numbers: %d of %d chunks compressed, %d bytes on the wire for %d", st.compressed, st.chunks, st.wire, len(c.data))
				}
			case c.opt.S2 && st.compressed != 0:
				t.Errorf("random bytes: %d chunks compressed", st.compressed)
			}
		})
	}
}

// TestPullConcurrent: pullers of one object at once (its checksum is computed once,
// the first pulls waiting for it), each getting the whole object.
func TestPullConcurrent(t *testing.T) {
	sys := newSystem(t)
	store := sys.Root.Spawn(shard.Props(shard.Config{Node: "n1", Logger: quiet}))
	id := ids.PutID(ids.NewRootTaskID(), 1)
	data := numbers(6<<20 + 77)
	put(t, sys, store, id, data)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			got, err := Pull(context.Background(), sys.Root, store, id, Options{S2: i%2 == 0, ChunkBytes: (i + 1) * 100 << 10})
			if err == nil && string(got) != string(data) {
				err = fmt.Errorf("puller %d: wrong bytes", i)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestPullNotFound(t *testing.T) {
	sys := newSystem(t)
	store := sys.Root.Spawn(shard.Props(shard.Config{Node: "n1", Logger: quiet}))
	id := ids.PutID(ids.NewRootTaskID(), 1)
	_, err := Pull(context.Background(), sys.Root, store, id, Options{})
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), id.String()) {
		t.Fatalf("missing object: %v", err)
	}
	// Freed between chunks: a later chunk is not found.
	put(t, sys, store, id, randomBytes(3<<20, 1))
	fake := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if m, ok := c.Message().(*pb.PullObject); ok {
			if m.Offset > 0 {
				c.Send(store, &pb.FreeObjects{ObjectIds: [][]byte{id[:]}})
			}
			c.Forward(store)
		}
	}))
	if _, err := Pull(context.Background(), sys.Root, fake, id, Options{InFlight: 1}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("object freed during the pull: %v", err)
	}
}

// TestPullSpilled: objects spilled to disk are pulled back exactly; a spill file altered
// on disk is ErrUnreadable carrying the shard's error (the one GetObject reports).
func TestPullSpilled(t *testing.T) {
	sys := newSystem(t)
	dir := t.TempDir()
	store := sys.Root.Spawn(shard.Props(shard.Config{Node: "n1", Budget: 1 << 20, SpillDir: dir, Logger: quiet}))
	root := ids.NewRootTaskID()
	var objs []ids.ObjectID
	var vals [][]byte
	for i := range 4 {
		id := ids.PutID(root, uint32(i+1))
		v := randomBytes(2<<20+i*1000, byte(i))
		if i%2 == 1 {
			v = numbers(len(v))
		}
		put(t, sys, store, id, v)
		objs, vals = append(objs, id), append(vals, v)
	}
	stats := func() *pb.StoreStatsReply {
		res, err := sys.Root.RequestFuture(store, &pb.StoreStats{}, 5*time.Second).Result()
		if err != nil {
			t.Fatal(err)
		}
		return res.(*pb.StoreStatsReply)
	}
	deadline := time.Now().Add(10 * time.Second)
	for stats().SpilledObjects != 4 {
		if time.Now().After(deadline) {
			t.Fatalf("not spilled: %+v", stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	for i, id := range objs {
		got, err := Pull(context.Background(), sys.Root, store, id, Options{S2: i >= 2})
		if err != nil {
			t.Fatalf("object %d: %v", i, err)
		}
		if string(got) != string(vals[i]) {
			t.Fatalf("object %d pulled back wrong", i)
		}
	}
	if st := stats(); st.MemoryBytes > 1<<20 || st.Bytes != st.MemoryBytes+st.SpilledBytes || st.SpillErrors != 0 {
		t.Fatalf("after pulling spilled objects: %+v", st)
	}

	files, _ := filepath.Glob(filepath.Join(dir, objs[3].String()+"*"))
	if len(files) != 1 {
		t.Fatalf("spill files of object 3: %v", files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-3] ^= 0xff
	if err := os.WriteFile(files[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Pull(context.Background(), sys.Root, store, objs[3], Options{})
	if !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), "corrupt") || !strings.Contains(err.Error(), objs[3].String()) {
		t.Fatalf("corrupt spill file: %v", err)
	}
}

// TestPullCorrupt: replies that disagree with each other or with the checksum are
// ErrCorrupt, never bytes.
func TestPullCorrupt(t *testing.T) {
	sys := newSystem(t)
	store := sys.Root.Spawn(shard.Props(shard.Config{Node: "n1", Logger: quiet}))
	id := ids.PutID(ids.NewRootTaskID(), 1)
	data := numbers(3 << 20)
	put(t, sys, store, id, data)
	// A store in front of the real one that alters its replies.
	tamper := func(alter func(*pb.PullObjectReply)) *actor.PID {
		return sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
			m, ok := c.Message().(*pb.PullObject)
			if !ok {
				return
			}
			res, err := sys.Root.RequestFuture(store, m, 5*time.Second).Result() // a test double may block
			if err != nil {
				return
			}
			r := res.(*pb.PullObjectReply)
			alter(r)
			c.Respond(r)
		}))
	}
	for _, c := range []struct {
		name  string
		alter func(*pb.PullObjectReply)
	}{
		{"flipped byte", func(r *pb.PullObjectReply) {
			if r.Offset == 1<<20 && !r.Compressed {
				r.Data = append([]byte(nil), r.Data...)
				r.Data[5] ^= 1
			}
		}},
		{"short chunk", func(r *pb.PullObjectReply) {
			if r.Offset == 2<<20 {
				r.Data = r.Data[:len(r.Data)-1]
			}
		}},
		{"object changed", func(r *pb.PullObjectReply) {
			if r.Offset == 2<<20 {
				r.Crc32C++
			}
		}},
		{"size changed", func(r *pb.PullObjectReply) {
			if r.Offset > 0 {
				r.Size++
			}
		}},
		{"bad s2", func(r *pb.PullObjectReply) {
			if r.Compressed {
				r.Data = append([]byte(nil), r.Data...)
				r.Data[len(r.Data)/2] ^= 0xff
				r.Data[len(r.Data)/3] ^= 0xff
			}
		}},
		{"wrong offset", func(r *pb.PullObjectReply) {
			if r.Offset == 1<<20 {
				r.Offset = 0
			}
		}},
		{"negative size", func(r *pb.PullObjectReply) { r.Size = -1 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Pull(context.Background(), sys.Root, tamper(c.alter), id, Options{S2: c.name == "bad s2"})
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("got %v, want ErrCorrupt", err)
			}
		})
	}
	// s2 decoded into place: the tamper passes compressed chunks through intact.
	if got, err := Pull(context.Background(), sys.Root, tamper(func(*pb.PullObjectReply) {}), id, Options{S2: true}); err != nil || string(got) != string(data) {
		t.Fatalf("through the tamper unaltered: %v", err)
	}
	// A crc mismatch over the whole object (every reply agreeing on a wrong checksum).
	if _, err := Pull(context.Background(), sys.Root, tamper(func(r *pb.PullObjectReply) { r.Crc32C ^= 1 }), id, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("wrong checksum: %v", err)
	}
}

// TestPullCancel: a cancelled or expired context ends a pull at once, whatever the store
// does, and leaves no goroutine behind.
func TestPullCancel(t *testing.T) {
	sys := newSystem(t)
	// A store that never answers.
	silent := sys.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	id := ids.PutID(ids.NewRootTaskID(), 1)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Pull(ctx, sys.Root, silent, id, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled before: %v", err)
	}

	before := runtime.NumGoroutine()
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	if _, err := Pull(ctx, sys.Root, silent, id, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled during: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("cancelled pull returned after %v", d)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := Pull(ctx, sys.Root, silent, id, Options{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline: %v", err)
	}
	if _, err := Pull(context.Background(), sys.Root, silent, id, Options{Timeout: 50 * time.Millisecond}); !errors.Is(err, actor.ErrTimeout) {
		t.Fatalf("chunk timeout: %v", err)
	}

	// Cancelled with chunks in flight: a store that answers only chunk 0.
	store := sys.Root.Spawn(shard.Props(shard.Config{Node: "n1", Logger: quiet}))
	put(t, sys, store, id, randomBytes(8<<20, 1))
	firstOnly := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if m, ok := c.Message().(*pb.PullObject); ok && m.Offset == 0 {
			c.Forward(store)
		}
	}))
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := Pull(ctx, sys.Root, firstOnly, id, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled with chunks in flight: %v", err)
	}
	// The goroutines that waited on futures are gone.
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines, %d before the pulls", runtime.NumGoroutine(), before)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
