package actors

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/base/fuzzing"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks"
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

func recordSeeds(t testing.TB) [][]any {
	id := ids.ActorID{0xac, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15} // fixed: the corpus is generated
	enc := func(info *pb.ActorInfo) []byte {
		v, err := proto.Marshal(info)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	good := &pb.ActorInfo{ActorId: id[:], Class: "C", JobId: "j", Name: "n", Namespace: "ns", MaxRestarts: 2,
		Resources: []*pb.ResourceQty{{Name: "CPU", Amount: 1000}, {Name: "accel", Amount: 1}},
		CtorArgs:  []*pb.Arg{{Data: []byte{1, 2}}, {IsRef: true, ObjectId: make([]byte, ids.ObjectIDLen), NodeId: "n1", Size: 1 << 20}},
		Owner:     &pb.PID{Address: "127.0.0.1:1", Id: "owner"}, Phase: int32(lifecycle.Alive), Incarnation: 3, Restarts: 1, Node: "n1",
		CheckpointSeq: 2, CheckpointRef: "r"}
	dead := proto.Clone(good).(*pb.ActorInfo)
	dead.Phase, dead.Cause, dead.Detail, dead.Node = int32(lifecycle.Dead), int32(lifecycle.CauseKilled), "killed", ""
	with := func(f func(*pb.ActorInfo)) []byte {
		c := proto.Clone(good).(*pb.ActorInfo)
		f(c)
		return enc(c)
	}
	return [][]any{
		{enc(good), true},
		{enc(good), false}, // read under another actor's key
		{enc(dead), true},
		{with(func(i *pb.ActorInfo) { i.Phase = 0 }), true},
		{with(func(i *pb.ActorInfo) { i.Phase = 258 }), true}, // 258 is Alive as a uint8
		{with(func(i *pb.ActorInfo) { i.Cause = -1 }), true},
		{with(func(i *pb.ActorInfo) { i.MaxRestarts = -7 }), true},
		{with(func(i *pb.ActorInfo) { i.ActorId = []byte("a") }), true},
		{with(func(i *pb.ActorInfo) { i.Resources[0].Amount = -1 }), true},
		{with(func(i *pb.ActorInfo) { i.CtorArgs[1].ObjectId = []byte{1} }), true},
		{with(func(i *pb.ActorInfo) {
			for k := range maxRecordResources + 1 {
				i.Resources = append(i.Resources, &pb.ResourceQty{Name: fmt.Sprint("r", k), Amount: 1})
			}
		}), true},
		{enc(good)[:len(enc(good))-3], true},
		{[]byte{0x22, 0xff, 0xff, 0xff, 0xff, 0x0f}, true}, // a constructor argument of 4 GiB
		{[]byte{}, true},
	}
}

func TestFuzzActorRecordCorpus(t *testing.T) { fuzzing.Corpus(t, "FuzzActorRecord", recordSeeds(t)) }

// FuzzActorRecord feeds arbitrary actor records, as read back from the GCS by the table
// (under the key of the actor it names, or of another) and by the manager's watch, to
// the decoder and then to what runs on a record it accepts: the lifecycle's every event,
// the writes that publish the next state, placement's resource list. Nothing may panic;
// decoding allocates in proportion to the record; an accepted record has a well-formed
// actor ID, phase, cause, restart counts, resources and constructor references, and
// encodes to a record that decodes the same.
func FuzzActorRecord(f *testing.F) {
	_, _ = decodeInfo(recordSeeds(f)[0][0].([]byte)) // protobuf's lazy set-up, outside the bound
	f.Fuzz(func(t *testing.T, value []byte, ownKey bool) {
		ctx := context.Background()
		store := memstore.New(memstore.Options{})
		key := "00112233445566778899aabbccddeeff"
		if info := (&pb.ActorInfo{}); ownKey && proto.Unmarshal(value, info) == nil {
			key = idString(info.ActorId)
		}
		if _, err := store.Put(ctx, gcs.ActorKey(key), value, 0); err != nil {
			t.Fatal(err)
		}
		table := &Table{Store: store}
		var (
			info *pb.ActorInfo
			err  error
		)
		fuzzing.CheckAlloc(t, 64*uint64(len(value))+64<<10, "decodeInfo", func() { info, err = decodeInfo(value) })
		got, _, gerr := table.Get(ctx, key)
		if err != nil {
			if gerr == nil || !errors.Is(gerr, errCorruptRecord) {
				t.Fatalf("decodeInfo refused the record (%v), Table.Get: %v", err, gerr)
			}
			return
		}
		if (gerr == nil) != (idString(info.ActorId) == key) {
			t.Fatalf("Table.Get under key %s of a record naming %s: %v", key, idString(info.ActorId), gerr)
		}
		if gerr == nil && !proto.Equal(got, info) {
			t.Fatal("Table.Get and decodeInfo disagree")
		}
		s := StateOf(info)
		if s.Phase < lifecycle.Pending || s.Phase > lifecycle.Dead || s.MaxRestarts < lifecycle.Infinite || s.Restarts < 0 {
			t.Fatalf("accepted a record with state %+v", s)
		}
		if r := tasks.ResourcesFromPB(info.Resources); len(info.Resources) > maxRecordResources {
			t.Fatalf("accepted %d resources (%v)", len(info.Resources), r)
		}
		for _, ev := range []lifecycle.Event{
			lifecycle.Placed{Incarnation: info.Incarnation, Node: "n9"}, lifecycle.PlacementFailed{Incarnation: info.Incarnation},
			lifecycle.ConstructorSucceeded{Incarnation: info.Incarnation}, lifecycle.ConstructorFailed{Incarnation: info.Incarnation},
			lifecycle.ProcessDied{Incarnation: info.Incarnation}, lifecycle.HostDied{Node: info.Node}, lifecycle.Kill{},
			lifecycle.Kill{NoRestart: true}, lifecycle.OwnerDied{}, lifecycle.CheckpointTaken{Incarnation: info.Incarnation, Seq: info.CheckpointSeq + 1},
		} {
			next, _, err := lifecycle.Step(s, ev)
			if err != nil {
				continue
			}
			after := proto.Clone(info).(*pb.ActorInfo)
			setState(after, next)
			ops, err := publishOps(after)
			if err != nil || len(ops) == 0 {
				t.Fatalf("%v: publishOps: %v", ev, err)
			}
			if again, err := decodeInfo(ops[0].Value); err != nil || !proto.Equal(again, after) {
				t.Fatalf("%v: the next record does not decode the same: %v", ev, err)
			}
		}
		v, err := proto.Marshal(info)
		if err != nil {
			t.Fatal(err)
		}
		if again, err := decodeInfo(v); err != nil || !proto.Equal(again, info) {
			t.Fatalf("re-encoded record: %v", err)
		}
	})
}
