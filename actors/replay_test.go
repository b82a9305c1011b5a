package actors

import (
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/pb"
)

// logBatch encodes batch number b holding the entries with indexes first..last, each
// from caller "c" with seq = index + seqOffset.
func logBatch(t *testing.T, b, first, last, seqOffset uint64) gcs.KV {
	t.Helper()
	lb := &pb.ActorLogBatch{Batch: b, Incarnation: 1}
	for i := first; i <= last; i++ {
		lb.Entries = append(lb.Entries, &pb.ActorLogEntry{Index: i, CallerId: "c", Seq: i + seqOffset, Spec: &pb.TaskSpec{Function: "C.M"}})
		if i > first {
			lb.Results = append(lb.Results, &pb.ActorResultRecord{CallerId: "c", Seq: i - 1 + seqOffset, Index: i - 1, Digest: i})
		}
	}
	v, err := proto.Marshal(lb)
	if err != nil {
		t.Fatal(err)
	}
	return gcs.KV{Key: gcs.ActorLogKey("a", b), Value: v}
}

func indexes(p *replayPlan) []uint64 {
	var out []uint64
	for _, e := range p.entries {
		out = append(out, e.Index)
	}
	return out
}

func span(a, b uint64) []uint64 {
	var out []uint64
	for i := a; i <= b; i++ {
		out = append(out, i)
	}
	return out
}

func TestPlanReplay(t *testing.T) {
	cases := []struct {
		name      string
		kvs       []gcs.KV
		after     uint64
		entries   []uint64
		keys      []uint64
		orphans   []uint64
		hole      uint64
		nextBatch uint64
	}{
		{name: "empty log", nextBatch: 1},
		{
			name:    "contiguous, no checkpoint",
			kvs:     []gcs.KV{logBatch(t, 1, 1, 3, 0), logBatch(t, 2, 4, 9, 0)},
			entries: span(1, 9), keys: []uint64{1, 2}, nextBatch: 3,
		},
		{
			// The chaos-suite log: batch 3 never landed, 4 and 5 did.
			name:  "hole after the checkpoint",
			kvs:   []gcs.KV{logBatch(t, 2, 601, 613, 0), logBatch(t, 4, 627, 644, 0), logBatch(t, 5, 645, 650, 0)},
			after: 600, entries: span(601, 613), keys: []uint64{2}, orphans: []uint64{4, 5}, hole: 614, nextBatch: 6,
		},
		{
			name:  "first batch after the checkpoint missing",
			kvs:   []gcs.KV{logBatch(t, 7, 20, 25, 0)},
			after: 10, hole: 11, orphans: []uint64{7}, nextBatch: 8,
		},
		{
			name: "hole without a checkpoint",
			kvs:  []gcs.KV{logBatch(t, 2, 5, 8, 0)},
			hole: 1, orphans: []uint64{2}, nextBatch: 3,
		},
		{
			// Batches the checkpoint covers but whose delete failed stay in the keys
			// (the next checkpoint deletes them); they are not a hole.
			name:  "covered batches left over",
			kvs:   []gcs.KV{logBatch(t, 1, 1, 4, 0), logBatch(t, 3, 9, 12, 0), logBatch(t, 4, 13, 14, 0)},
			after: 12, entries: span(13, 14), keys: []uint64{1, 3, 4}, nextBatch: 5,
		},
		{
			name:    "a batch written twice",
			kvs:     []gcs.KV{logBatch(t, 1, 1, 3, 0), logBatch(t, 2, 1, 3, 0), logBatch(t, 3, 4, 5, 0)},
			entries: span(1, 5), keys: []uint64{1, 2, 3}, nextBatch: 4,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := planReplay(tc.kvs, tc.after)
			if err != nil {
				t.Fatal(err)
			}
			var keys []uint64
			for _, k := range p.keys {
				keys = append(keys, k.batch)
			}
			if !reflect.DeepEqual(indexes(p), tc.entries) || !reflect.DeepEqual(keys, tc.keys) || !reflect.DeepEqual(p.orphans, tc.orphans) ||
				p.hole != tc.hole || p.nextBatch != tc.nextBatch {
				t.Fatalf("plan: entries %v keys %v orphans %v hole %d next batch %d; want %v %v %v %d %d",
					indexes(p), keys, p.orphans, p.hole, p.nextBatch, tc.entries, tc.keys, tc.orphans, tc.hole, tc.nextBatch)
			}
		})
	}
}

func TestPlanReplayRecordedDigestsSkipOrphans(t *testing.T) {
	p, err := planReplay([]gcs.KV{logBatch(t, 1, 1, 3, 0), logBatch(t, 3, 7, 9, 0)}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.recorded[resultKey{"c", 2}]; !ok {
		t.Fatalf("digest of a kept batch missing: %v", p.recorded)
	}
	if _, ok := p.recorded[resultKey{"c", 8}]; ok {
		t.Fatalf("digest of an orphan batch kept: %v", p.recorded)
	}
}

func TestPlanReplayBadLogs(t *testing.T) {
	straddle := logBatch(t, 2, 5, 9, 0)
	b := &pb.ActorLogBatch{}
	_ = proto.Unmarshal(straddle.Value, b)
	b.Entries = append(b.Entries[:1], b.Entries[3:]...) // indexes 5, 8, 9: a hole inside one batch
	straddle.Value, _ = proto.Marshal(b)
	for _, tc := range []struct {
		name string
		kvs  []gcs.KV
		want string
	}{
		{"corrupt batch", []gcs.KV{{Key: gcs.ActorLogKey("a", 1), Value: []byte{0xff, 0xff, 0xff}}}, "is corrupt"},
		{"hole inside a batch", []gcs.KV{logBatch(t, 1, 1, 4, 0), straddle}, "inconsistent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := planReplay(tc.kvs, 0)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestReplayGuard: the replay guard (gcs.ActorReplayKey) is read apart from the log's
// batches; a call it names, left by an earlier incarnation, is a suspect (that
// incarnation died replaying it), one the same incarnation left is not; a verdict
// written with a later mark is kept for the next incarnations until a checkpoint covers it.
func TestReplayGuard(t *testing.T) {
	e5 := &pb.ActorLogEntry{Index: 5, CallerId: "c", Seq: 5, Spec: &pb.TaskSpec{Function: "C.Exit"}}
	e6 := &pb.ActorLogEntry{Index: 6, CallerId: "c", Seq: 6, Spec: &pb.TaskSpec{Function: "C.M"}}
	key := gcs.ActorReplayKey("a")
	fresh := newGuardState(nil, 0, 2, key)
	mark := fresh.put(e5) // incarnation 2 replays e5 (and dies)
	p, err := planReplay([]gcs.KV{logBatch(t, 1, 1, 6, 0), {Key: mark.Key, Value: mark.Value}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.guard == nil || !reflect.DeepEqual(indexes(p), span(1, 6)) || len(p.keys) != 1 || p.nextBatch != 2 {
		t.Fatalf("plan with a guard: guard %v entries %v keys %v next batch %d", p.guard, indexes(p), p.keys, p.nextBatch)
	}
	if same := newGuardState(p.guard, 0, 2, key); same.suspect(e5) {
		t.Fatal("a call its own incarnation marked is a suspect")
	}
	gd := newGuardState(p.guard, 0, 3, key)
	if !gd.suspect(e5) || gd.suspect(e6) || gd.verdict(e5) != nil {
		t.Fatalf("incarnation 3: suspect(e5) %v suspect(e6) %v", gd.suspect(e5), gd.suspect(e6))
	}
	gd.convict(e5, &pb.TaskResult{Error: &pb.ErrorInfo{Kind: pb.ErrorInfo_ACTOR_DIED, Message: suspectMessage("C.Exit")}})
	mark = gd.put(e6) // incarnation 3 replays e6 (and dies: the node killed)
	b := &pb.ActorLogBatch{}
	if err := proto.Unmarshal(mark.Value, b); err != nil {
		t.Fatal(err)
	}
	next := newGuardState(b, 0, 4, key)
	if v := next.verdict(e5); v == nil || !strings.Contains(v.Error.Message, "not run again") {
		t.Fatalf("incarnation 4: the verdict on e5 is %v", v)
	}
	if !next.suspect(e6) || next.suspect(e5) {
		t.Fatal("incarnation 4: e6 must be the suspect, e5 not")
	}
	if fin := next.final(); fin.Kind != gcs.OpPut || next.dirty() {
		t.Fatalf("final with a verdict: %v (dirty %v), want the guard kept with its verdict", fin.Kind, next.dirty())
	}
	covered := newGuardState(b, 5, 4, key) // a checkpoint after index 5 holds e5's answer
	if covered.verdict(e5) != nil || !covered.dirty() || covered.final().Kind != gcs.OpDelete {
		t.Fatal("a verdict a checkpoint covers is kept")
	}
}
