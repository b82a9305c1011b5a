package core

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// TestDeadCallersAreForgotten: once an actor dies, this process keeps no caller or state
// of it, so a driver that creates and ends actors grows no table per actor it ever called:
// the call in flight fails with ACTOR_DIED, a call made afterwards fails at once and leaves
// no caller behind, every shard stops sweeping the callers (it goes quiet), the task
// record of the failed call still shows the node its actor was on, and the call refused
// at submission has a FAILED record of its own (as Ray lists it).
func TestDeadCallersAreForgotten(t *testing.T) {
	la := newLocalActors(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tc := la.c.NewDriver()
	count := func() (callers, states int) {
		la.c.callers.Range(func(_, _ any) bool { callers++; return true })
		la.c.actorStates.Range(func(_, _ any) bool { states++; return true })
		return
	}
	const n = 40
	var dead []ids.ActorID
	for i := range n {
		id := ids.NewActorID()
		oid, _ := la.call(t, tc, id)
		if c, _ := count(); c != 1 {
			t.Fatalf("actor %d: %d callers while its call is in flight, want 1", i, c)
		}
		la.c.ActorChanged(la.setDead(id))
		_, err := tc.Get(ctx, oid)
		var info *pb.ErrorInfo
		if oe := (*ObjectError)(nil); errors.As(err, &oe) {
			info = oe.Info
		}
		if info == nil || info.Kind != pb.ErrorInfo_ACTOR_DIED {
			t.Fatalf("actor %d: the call in flight: %v, want ACTOR_DIED", i, err)
		}
		if _, _, err := la.c.SubmitActorCall(tc, id, "m", nil, nil); err == nil {
			t.Fatalf("actor %d: a call after its death was accepted", i)
		}
		if c, s := count(); c != 0 || s != 0 {
			t.Fatalf("actor %d: %d callers and %d states kept after its death, want none", i, c, s)
		}
		dead = append(dead, id)
	}
	eventually.True(t, 10*time.Second, "every shard quiet (no caller left to sweep)", func() bool {
		for _, sh := range la.c.shards {
			if !sh.quiet.Load() {
				return false
			}
		}
		return true
	})
	for _, id := range dead[:3] {
		rep, err := la.c.Tasks(ctx, TaskQuery{Worker: id.String()})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Tasks) != 2 {
			t.Fatalf("actor %s: %d task records, want 2 (the call in flight, and the one refused at submission)", id, len(rep.Tasks))
		}
		// Newest first: the refused call (sent to no incarnation: no node), then the call
		// in flight, on the node its actor was on.
		if e := rep.Tasks[0]; e.State != StateFailed || e.ErrorKind != "ACTOR_DIED" || e.Incarnation != 0 || e.Node != "" || !e.Actor {
			t.Errorf("actor %s: the refused call's record %+v, want failed (ACTOR_DIED), on no node", id, e)
		}
		if e := rep.Tasks[1]; e.State != StateFailed || e.Node != "n1" {
			t.Errorf("actor %s: record %+v, want failed on node n1", id, e)
		}
	}
}
