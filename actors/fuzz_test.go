package actors

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/fuzzing"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/pb"
)

func logSeeds(t testing.TB) [][]any {
	batch := func(b, first, last uint64) []byte {
		lb := &pb.ActorLogBatch{Batch: b, Incarnation: 1}
		for i := first; i <= last; i++ {
			lb.Entries = append(lb.Entries, &pb.ActorLogEntry{Index: i, CallerId: "c", Seq: i, Spec: &pb.TaskSpec{Function: "C.M"}})
			lb.Results = append(lb.Results, &pb.ActorResultRecord{CallerId: "c", Seq: i, Index: i, Digest: i * 7})
		}
		v, err := proto.Marshal(lb)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	skip, _ := proto.Marshal(&pb.ActorLogBatch{Batch: 4, Entries: []*pb.ActorLogEntry{{Index: 7, CallerId: "d", Seq: 1, Skip: true}}})
	lastIndex, _ := proto.Marshal(&pb.ActorLogBatch{Batch: 1, Entries: []*pb.ActorLogEntry{{Index: 1<<64 - 1, CallerId: "c", Seq: 1, Spec: &pb.TaskSpec{}}}})
	noCall, _ := proto.Marshal(&pb.ActorLogBatch{Batch: 4, Entries: []*pb.ActorLogEntry{{Index: 7, CallerId: "d", Seq: 1}}})
	return [][]any{
		{batch(1, 1, 3), batch(2, 4, 6), batch(3, 7, 9), uint64(0), uint64(3)},
		{batch(1, 1, 3), batch(2, 4, 6), batch(3, 7, 9), uint64(4), uint64(3)}, // after a checkpoint
		{batch(1, 1, 3), batch(3, 7, 9), skip, uint64(0), uint64(4)},           // a hole
		{batch(1, 1, 3), batch(2, 2, 5), batch(3, 7, 9), uint64(0), uint64(3)}, // overlapping batches
		{batch(1, 1, 3), batch(2, 4, 6), noCall, uint64(0), uint64(4)},         // an entry without a call
		{batch(1, 1, 3), batch(2, 4, 6), batch(3, 7, 9), uint64(0), uint64(8)}, // a batch under another key
		{batch(1, 1, 3), batch(2, 4, 6), []byte{0x12, 0xff, 0xff, 0xff, 0xff, 0x0f}, uint64(0), uint64(3)},
		{[]byte{}, []byte{}, []byte{}, uint64(0), uint64(0)},
		{batch(1, 1, 3), batch(1<<64-1, 4, 4), []byte{}, uint64(0), uint64(0)}, // the last batch number
		{lastIndex, []byte{}, []byte{}, uint64(1<<64 - 2), uint64(0)},          // the last index
	}
}

func TestFuzzMethodLogCorpus(t *testing.T) { fuzzing.Corpus(t, "FuzzMethodLog", logSeeds(t)) }

// logKVs lists three method log values as the GCS would: the first two under the keys
// their own batch numbers give (when they decode), the third under key batch number k3.
func logKVs(a, b, c []byte, k3 uint64) []gcs.KV {
	key := func(v []byte) string {
		lb := &pb.ActorLogBatch{}
		_ = proto.Unmarshal(v, lb)
		return gcs.ActorLogKey("a", lb.Batch)
	}
	return []gcs.KV{{Key: key(a), Value: a}, {Key: key(b), Value: b}, {Key: gcs.ActorLogKey("a", k3), Value: c}}
}

// FuzzMethodLog feeds arbitrary method log batches (read back from etcd when an actor
// restarts) to the replay planner. It must fail or return a plan that replay can follow:
// entries with a call, consecutive from the checkpoint's index, stopping at the first
// hole; batches after the hole orphaned; the next batch number above every one read. It
// must never panic, allocate in proportion to the log, and plan the same again from the
// batches re-encoded.
func FuzzMethodLog(f *testing.F) {
	_, _ = planReplay(logKVs(logSeeds(f)[0][0].([]byte), nil, nil, 1), 0) // protobuf's lazy set-up, outside the bound
	f.Fuzz(func(t *testing.T, a, b, c []byte, after, k3 uint64) {
		kvs := logKVs(a, b, c, k3)
		var (
			p   *replayPlan
			err error
		)
		fuzzing.CheckAlloc(t, 64*uint64(len(a)+len(b)+len(c))+64<<10, "planReplay", func() { p, err = planReplay(kvs, after) })
		if err != nil {
			return
		}
		if p.nextBatch > maxLogNumber || len(p.entries) > 0 && p.entries[len(p.entries)-1].Index >= maxLogNumber {
			t.Fatalf("accepted numbers beyond %d", uint64(maxLogNumber))
		}
		for i, e := range p.entries {
			if e.Index != after+1+uint64(i) || e.Spec == nil && !e.Skip {
				t.Fatalf("entry %d: index %d (after %d), call %v", i, e.Index, after, e.Spec != nil)
			}
		}
		if p.hole != 0 && p.hole != after+1+uint64(len(p.entries)) {
			t.Fatalf("hole at %d after %d entries from %d", p.hole, len(p.entries), after)
		}
		orphan := map[uint64]bool{}
		for _, o := range p.orphans {
			orphan[o] = true
		}
		for _, kv := range kvs {
			lb := &pb.ActorLogBatch{}
			_ = proto.Unmarshal(kv.Value, lb)
			if p.nextBatch <= lb.Batch {
				t.Fatalf("next batch %d, a batch %d exists", p.nextBatch, lb.Batch)
			}
			for _, e := range lb.Entries {
				if orphan[lb.Batch] && e.Index < p.hole {
					t.Fatalf("orphaned batch %d holds index %d before the hole at %d", lb.Batch, e.Index, p.hole)
				}
			}
		}
		for i := range kvs {
			lb := &pb.ActorLogBatch{}
			_ = proto.Unmarshal(kvs[i].Value, lb)
			kvs[i].Value, _ = proto.Marshal(lb)
		}
		again, err := planReplay(kvs, after)
		if err != nil || len(again.entries) != len(p.entries) || again.hole != p.hole || again.nextBatch != p.nextBatch || len(again.orphans) != len(p.orphans) {
			t.Fatalf("the re-encoded log plans differently: %v", err)
		}
		for i := range p.entries {
			if !proto.Equal(again.entries[i], p.entries[i]) {
				t.Fatalf("entry %d differs", i)
			}
		}
	})
}

func checkpointSeeds(t testing.TB) [][]any {
	ck := &pb.ActorCheckpoint{Index: 42, State: []byte("state bytes"), Incarnation: 2, Callers: []*pb.ActorCallerState{
		{CallerId: "c", Next: 5, Acked: 3, Unacked: []*pb.ActorResultRecord{{CallerId: "c", Seq: 4, Index: 40, Result: &pb.TaskResult{Data: []byte{1}}}}}}}
	v, err := proto.Marshal(ck)
	if err != nil {
		t.Fatal(err)
	}
	return [][]any{
		{v, uint64(42), uint16(0)},
		{v, uint64(42), uint16(len(v) / 2)}, // in two parts
		{v, uint64(41), uint16(3)},          // another checkpoint's
		{v[:len(v)-4], uint64(42), uint16(0)},
		{[]byte{0x12, 0xff, 0xff, 0xff, 0xff, 0x0f}, uint64(0), uint16(0)},
		{[]byte{}, uint64(0), uint16(0)},
	}
}

func TestFuzzCheckpointCorpus(t *testing.T) {
	fuzzing.Corpus(t, "FuzzCheckpoint", checkpointSeeds(t))
}

// FuzzCheckpoint feeds arbitrary checkpoint parts to the reader a restarting actor uses.
// It must fail or return the checkpoint asked for; never panic; allocate in proportion to
// the parts; and what it accepts must encode to parts it reads back the same.
func FuzzCheckpoint(f *testing.F) {
	_, _ = decodeCheckpoint("a", 42, [][]byte{checkpointSeeds(f)[0][0].([]byte)})
	f.Fuzz(func(t *testing.T, data []byte, index uint64, split uint16) {
		cut := min(int(split), len(data))
		parts := [][]byte{data[:cut], data[cut:]}
		var (
			ck  *pb.ActorCheckpoint
			err error
		)
		fuzzing.CheckAlloc(t, 64*uint64(len(data))+64<<10, "decodeCheckpoint", func() { ck, err = decodeCheckpoint("a", index, parts) })
		if err != nil {
			return
		}
		if ck.Index != index {
			t.Fatalf("asked for checkpoint %d, got %d", index, ck.Index)
		}
		v, err := proto.Marshal(ck)
		if err != nil {
			t.Fatal(err)
		}
		again, err := decodeCheckpoint("a", index, [][]byte{v})
		if err != nil || !proto.Equal(again, ck) {
			t.Fatalf("re-encoded checkpoint: %v", err)
		}
	})
}
