package agent

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/pb"
)

// TestDeadActorsBounded: beyond MaxDeadActors, the head deletes the records of the actors
// that died first, detached or not; never a live or restarting actor's, nor one that
// changed since it was seen dead.
func TestDeadActorsBounded(t *testing.T) {
	m, s := lostManager(t)
	m.a.cfg.MaxDeadActors = 3
	ctx := context.Background()
	t0 := time.Unix(1_000_000, 0)
	put := func(id string, phase lifecycle.Phase, diedAt time.Time, detached bool) {
		t.Helper()
		info := &pb.ActorInfo{ActorId: []byte(id), Phase: int32(phase), Detached: detached,
			History: []*pb.ActorTransition{{Phase: int32(phase), UnixMs: diedAt.UnixMilli()}}}
		b, _ := proto.Marshal(info)
		if _, err := s.Put(ctx, gcs.ActorKey(id), b, 0); err != nil {
			t.Fatal(err)
		}
	}
	// Dead ones died at t0+i s; d0 and d1 are the oldest.
	for i := range 6 {
		put(fmt.Sprintf("d%d", i), lifecycle.Dead, t0.Add(time.Duration(i)*time.Second), i%2 == 0)
	}
	put("alive", lifecycle.Alive, t0.Add(-time.Hour), false)
	put("restarting", lifecycle.Restarting, t0.Add(-time.Hour), true)
	load := func() {
		t.Helper()
		kvs, _, err := s.List(ctx, gcs.ActorsPrefix)
		if err != nil {
			t.Fatal(err)
		}
		m.apply(tableUpdate{prefix: gcs.ActorsPrefix, reset: true, kvs: kvs})
	}
	load()
	// d0 is written again after it was seen (a newer revision): not deleted on the old view.
	put("d0", lifecycle.Dead, t0, true)
	m.pruneDead(ctx, t0.Add(time.Hour))
	have := func() map[string]bool {
		kvs, _, err := s.List(ctx, gcs.ActorsPrefix)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, kv := range kvs {
			id, _ := gcs.TrimKey(gcs.ActorsPrefix, kv.Key)
			out[id] = true
		}
		return out
	}
	got := have()
	if !got["d0"] || got["d1"] || got["d2"] || !got["d3"] || !got["alive"] || !got["restarting"] {
		t.Fatalf("after a prune on a stale view: %v; want d0 (changed since seen), d3-d5 and the live ones", got)
	}
	load() // the mirror sees d0 again
	m.pruneDead(ctx, t0.Add(2*time.Hour))
	got = have()
	want := map[string]bool{"d3": true, "d4": true, "d5": true, "alive": true, "restarting": true}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("actor records after the prunes: %v, want %v", got, want)
	}
	m.pruneDead(ctx, t0.Add(3*time.Hour))
	if got := have(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("a prune at the cap deleted records: %v", got)
	}
}
