package actors

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks/sched"
)

// TestManagerInGroup: InGroup lists the live actors of a placement group, every job's
// (the manager's own job limits only what it places), with their bundle; a dead one
// leaves the list, and other groups' actors are not in it.
func TestManagerInGroup(t *testing.T) {
	h := newManagerHarness(t, map[string]sched.Resources{"n1": {}})
	mk := func(job, group string, bundle int32) string {
		id := ids.NewActorID()
		info := &pb.ActorInfo{ActorId: id[:], Class: "test.C", JobId: job, PlacementGroup: group, BundleIndex: bundle, AffinityNode: "n1"}
		if _, _, err := h.table.Create(context.Background(), info); err != nil {
			t.Fatal(err)
		}
		return id.String()
	}
	a, b, c := mk("", "g1", 0), mk("other-job", "g1", -1), mk("", "g2", 1)
	inGroup := func(group string) []string {
		var out []string
		for _, info := range h.m.InGroup(group) {
			out = append(out, idString(info.ActorId))
		}
		slices.Sort(out)
		return out
	}
	want := []string{a, b}
	slices.Sort(want)
	deadline := time.Now().Add(20 * time.Second)
	for !slices.Equal(inGroup("g1"), want) || !slices.Equal(inGroup("g2"), []string{c}) {
		if time.Now().After(deadline) {
			t.Fatalf("InGroup g1 = %v (want %v), g2 = %v (want [%s])", inGroup("g1"), want, inGroup("g2"), c)
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, info := range h.m.InGroup("g1") {
		if id := idString(info.ActorId); id == b && info.BundleIndex != -1 || id == a && info.BundleIndex != 0 {
			t.Fatalf("actor %s: bundle %d in the cached record", id, info.BundleIndex)
		}
	}
	if _, _, _, err := h.table.Step(context.Background(), a, lifecycle.Kill{NoRestart: true}); err != nil {
		t.Fatal(err)
	}
	h.await(a, "dead", phaseIs(lifecycle.Dead))
	if got := inGroup("g1"); !slices.Equal(got, []string{b}) {
		t.Fatalf("after a's death InGroup g1 = %v, want [%s]", got, b)
	}
	if got := h.m.InGroup("nope"); len(got) != 0 {
		t.Fatalf("InGroup of an unknown group: %v", got)
	}
}

// TestDecodeRejectsBadBundle: a record with a bundle index below -1 is corrupt; -1 (any
// bundle) is not.
func TestDecodeRejectsBadBundle(t *testing.T) {
	id := ids.NewActorID()
	for _, tc := range []struct {
		bundle int32
		ok     bool
	}{{-2, false}, {-1, true}, {3, true}} {
		v, err := proto.Marshal(&pb.ActorInfo{ActorId: id[:], Phase: int32(lifecycle.Pending), BundleIndex: tc.bundle})
		if err != nil {
			t.Fatal(err)
		}
		_, err = decodeInfo(v)
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, errCorruptRecord) {
			t.Fatalf("bundle %d: %v, want ok=%v", tc.bundle, err, tc.ok)
		}
	}
}

// TestManagerGroupActorWaitsForItsBundle: an actor in a placement group whose bundle's
// node is gone waits (its group's creator moves it, MoveAffinity) instead of failing; one
// bound to a gone node outside any group fails its creation.
func TestManagerGroupActorWaitsForItsBundle(t *testing.T) {
	h := newManagerHarness(t, map[string]sched.Resources{"n1": {}})
	mk := func(group string) string {
		id := ids.NewActorID()
		info := &pb.ActorInfo{ActorId: id[:], Class: "test.C", PlacementGroup: group, AffinityNode: "n9"}
		if _, _, err := h.table.Create(context.Background(), info); err != nil {
			t.Fatal(err)
		}
		return id.String()
	}
	inGroup := mk("g1")
	bound := mk("") // created after: once it is dead, the manager has looked at both
	dead := h.await(bound, "dead", phaseIs(lifecycle.Dead))
	if lifecycle.Cause(dead.Cause) != lifecycle.CauseUnschedulable {
		t.Fatalf("an actor bound to a gone node outside any group: %v", StateOf(dead).Err())
	}
	if info, ok := h.m.Get(inGroup); !ok || lifecycle.Phase(info.Phase) != lifecycle.Pending {
		t.Fatalf("the group's actor whose bundle's node is gone: %v (found %v), want it pending", info, ok)
	}
	moved, err := h.table.MoveAffinity(context.Background(), inGroup, "n9", "n1")
	if err != nil || !moved {
		t.Fatalf("MoveAffinity: %v, %v", moved, err)
	}
	if info := h.await(inGroup, "alive", phaseIs(lifecycle.Alive)); info.Node != "n1" {
		t.Fatalf("the moved actor is alive on %s, want n1", info.Node)
	}
}
