package shard

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// pool is a budget shared by several shards' grants, as the machine ledger's store
// budget is (tasks/machine): it grants what is free, all or part.
type pool struct {
	mu    sync.Mutex
	free  int64
	held  map[*poolGrant]int64
	takes int
}

type poolGrant struct{ p *pool }

func (g *poolGrant) Take(n int64) int64 {
	g.p.mu.Lock()
	defer g.p.mu.Unlock()
	g.p.takes++
	n = min(n, g.p.free)
	g.p.free -= n
	g.p.held[g] += n
	return n
}

func (g *poolGrant) Give(n int64) {
	g.p.mu.Lock()
	defer g.p.mu.Unlock()
	if n > g.p.held[g] {
		panic("gave back more than it held")
	}
	g.p.free += n
	g.p.held[g] -= n
}

func (p *pool) heldBy(g *poolGrant) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held[g]
}

// Two shards sharing one 8 MiB budget through grants: together they keep at most the
// budget in memory (each one spills what it was not granted), every object reads back
// exactly, grants are taken per chunk and not per object, and a shard whose objects are
// freed gives its grant back but for a chunk, so the other can take it.
func TestSharedBudgetGrant(t *testing.T) {
	const budget = 8 << 20
	const size = 256 << 10
	if c := GrantChunk(budget); c != 1<<20 {
		t.Fatalf("GrantChunk(8 MiB) = %d, want 1 MiB", c)
	}
	p := &pool{free: budget, held: map[*poolGrant]int64{}}
	ga, gb := &poolGrant{p}, &poolGrant{p}
	askA := startShard(t, Config{Node: "a", Budget: budget, Grant: ga, SpillDir: t.TempDir()})
	askB := startShard(t, Config{Node: "b", Budget: budget, Grant: gb, SpillDir: t.TempDir()})
	value := func(s, i int) []byte { return bytes.Repeat([]byte{byte(s*64 + i)}, size) }
	root := ids.NewRootTaskID()
	id := func(s, i int) ids.ObjectID { return ids.PutID(root, uint32(s*1000+i+1)) }
	// 24 objects of 256 KiB into each: 12 MiB in all, for a budget of 8 MiB.
	for i := range 24 {
		for s, ask := range []func(any) any{askA, askB} {
			o := id(s, i)
			if ack := ask(&pb.PutObject{ObjectId: o[:], Data: value(s, i)}).(*pb.PutObjectAck); ack.Error != "" {
				t.Fatal(ack.Error)
			}
		}
	}
	stats := func(ask func(any) any) *pb.StoreStatsReply { return ask(&pb.StoreStats{}).(*pb.StoreStatsReply) }
	// Spill batches end asynchronously: wait (bounded) for both shards to settle within
	// their grants.
	var stA, stB *pb.StoreStatsReply
	for range 500 {
		stA, stB = stats(askA), stats(askB)
		if stA.MemoryBytes <= p.heldBy(ga) && stB.MemoryBytes <= p.heldBy(gb) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if stA.MemoryBytes > p.heldBy(ga) || stB.MemoryBytes > p.heldBy(gb) {
		t.Fatalf("a shard holds more in memory than its grant: a %d of %d, b %d of %d",
			stA.MemoryBytes, p.heldBy(ga), stB.MemoryBytes, p.heldBy(gb))
	}
	if mem := stA.MemoryBytes + stB.MemoryBytes; mem > budget {
		t.Fatalf("%d bytes in memory in the two shards, over their shared budget of %d", mem, budget)
	}
	if stA.SpilledBytes+stB.SpilledBytes < 4<<20 {
		t.Fatalf("12 MiB through an 8 MiB budget spilled only %d+%d bytes", stA.SpilledBytes, stB.SpilledBytes)
	}
	if p.takes > 2*budget/(1<<20)+2*24 {
		t.Fatalf("%d grant asks for 48 puts", p.takes)
	}
	for i := range 24 {
		for s, ask := range []func(any) any{askA, askB} {
			o := id(s, i)
			r := ask(&pb.GetObject{ObjectId: o[:]}).(*pb.GetObjectReply)
			if !r.Found || !bytes.Equal(r.Data, value(s, i)) {
				t.Fatalf("shard %d object %d: found %v, error %q", s, i, r.Found, r.Error)
			}
		}
	}
	// A frees everything: it gives back all but at most two chunks.
	var all [][]byte
	for i := range 24 {
		o := id(0, i)
		all = append(all, o[:])
	}
	askA(&pb.FreeObjects{ObjectIds: all})
	if h := p.heldBy(ga); h > 2*GrantChunk(budget) {
		t.Fatalf("shard a holds a grant of %d with nothing in memory, want at most 2 chunks", h)
	}
	// B can now keep more in memory: a put there takes the grant A gave back.
	before := p.heldBy(gb)
	o := id(1, 100)
	askB(&pb.PutObject{ObjectId: o[:], Data: bytes.Repeat([]byte{9}, 2<<20)})
	if after := p.heldBy(gb); after <= before {
		t.Fatalf("b's grant stayed %d -> %d after a's objects were freed", before, after)
	}
}

// A shard whose grant is refused from the start keeps nothing in memory beyond what it
// has: it spills, and every object still reads back.
func TestGrantRefusedSpills(t *testing.T) {
	p := &pool{free: 0, held: map[*poolGrant]int64{}}
	ask := startShard(t, Config{Node: "a", Budget: 8 << 20, Grant: &poolGrant{p}, SpillDir: t.TempDir()})
	root := ids.NewRootTaskID()
	for i := range 4 {
		o := ids.PutID(root, uint32(i+1))
		ask(&pb.PutObject{ObjectId: o[:], Data: bytes.Repeat([]byte{byte(i)}, 1<<20)})
	}
	var st *pb.StoreStatsReply
	for range 500 {
		if st = ask(&pb.StoreStats{}).(*pb.StoreStatsReply); st.MemoryBytes == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st.MemoryBytes != 0 || st.SpilledObjects != 4 {
		t.Fatalf("with no grant: %+v", st)
	}
	for i := range 4 {
		o := ids.PutID(root, uint32(i+1))
		if r := ask(&pb.GetObject{ObjectId: o[:]}).(*pb.GetObjectReply); !r.Found || !bytes.Equal(r.Data, bytes.Repeat([]byte{byte(i)}, 1<<20)) {
			t.Fatalf("object %d: %v %q", i, r.Found, r.Error)
		}
	}
}
