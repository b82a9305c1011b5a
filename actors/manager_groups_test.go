package actors

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/base/gcs"
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

// TestGroupGone: the decision on a placement group's record as read (nil: missing).
func TestGroupGone(t *testing.T) {
	t0 := time.Unix(1000, 0)
	grace := 10 * time.Second
	dead := func(addr string) bool { return addr == "dead:1" }
	rec := func(state, creator string) *pb.PlacementGroupInfo {
		return &pb.PlacementGroupInfo{Id: "g", State: state, CreatorAddress: creator}
	}
	type read struct {
		rec  *pb.PlacementGroupInfo
		at   time.Duration
		gone bool
	}
	for _, tc := range []struct {
		name  string
		reads []read
	}{
		{"created, creator alive", []read{{rec("CREATED", "live:1"), 0, false}, {rec("CREATED", "live:1"), time.Hour, false}}},
		{"removed", []read{{rec("REMOVED", "live:1"), 0, true}}},
		{"creator dead, record still there", []read{{rec("CREATED", "dead:1"), 0, true}}},
		{"creator dead, record gone since", []read{{rec("PENDING", "dead:1"), 0, true}, {nil, time.Second, true}}},
		{"missing for the grace", []read{{nil, 0, false}, {nil, grace - time.Millisecond, false}, {nil, grace, true}}},
		{"missing, then back (the creator registered again)", []read{
			{rec("CREATED", "live:1"), 0, false}, {nil, time.Second, false}, {rec("CREATED", "live:1"), 5 * time.Second, false},
			{nil, 6 * time.Second, false}, {nil, 6*time.Second + grace - time.Millisecond, false}, {nil, 6*time.Second + grace, true}}},
		{"an old record without the creator", []read{{rec("CREATED", ""), 0, false}, {nil, grace / 2, false}}},
	} {
		st := &groupSeen{}
		for i, r := range tc.reads {
			why := groupGone("g", r.rec, st, dead, t0.Add(r.at), grace)
			if (why != "") != r.gone || why != "" && !strings.Contains(why, "placement group g") {
				t.Fatalf("%s: read %d: %q, want gone=%v", tc.name, i, why, r.gone)
			}
		}
	}
}

// TestManagerEndsActorsOfGoneGroups: with GroupGoneGrace the leader kills, for good, the
// live actors whose placement group was removed, whose creator died (OwnerGone), or whose
// record has been missing for the grace, whoever created them, an actor waiting for its
// bundle's dead node too; an actor in a group whose record is there, or missing for less
// than the grace, lives on.
func TestManagerEndsActorsOfGoneGroups(t *testing.T) {
	const grace = 2 * time.Second
	h := newManagerHarness(t, map[string]sched.Resources{"n1": {}}, func(c *ManagerConfig) { c.GroupGoneGrace = grace })
	put := func(group, state, creator string) {
		b, err := proto.Marshal(&pb.PlacementGroupInfo{Id: group, State: state, CreatorAddress: creator})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.table.Store.Put(context.Background(), gcs.PlacementGroupKey(group), b, 0); err != nil {
			t.Fatal(err)
		}
	}
	mk := func(group string, detached bool) string {
		id := ids.NewActorID()
		info := &pb.ActorInfo{ActorId: id[:], Class: "test.C", PlacementGroup: group, AffinityNode: "n1", Detached: detached, MaxRestarts: 3}
		if _, _, err := h.table.Create(context.Background(), info); err != nil {
			t.Fatal(err)
		}
		h.await(id.String(), "alive", phaseIs(lifecycle.Alive))
		return id.String()
	}
	put("live", "CREATED", "10.0.0.2:1")
	put("crashed", "CREATED", "10.0.0.1:1")
	put("removed", "CREATED", "10.0.0.2:1")
	live, crashed, removed := mk("live", true), mk("crashed", true), mk("removed", false)
	// An actor of the crashed creator's group waiting for its bundle's node (dead: nobody
	// is left to place the bundle again and move it).
	stranded := ids.NewActorID()
	if _, _, err := h.table.Create(context.Background(), &pb.ActorInfo{ActorId: stranded[:], Class: "test.C",
		PlacementGroup: "crashed", AffinityNode: "n9", Detached: true}); err != nil {
		t.Fatal(err)
	}
	h.await(stranded.String(), "seen", func(info *pb.ActorInfo, found bool) bool { return found })

	put("removed", "REMOVED", "10.0.0.2:1")
	if info := h.await(removed, "dead", phaseIs(lifecycle.Dead)); !strings.Contains(info.Detail, "placement group removed was removed") {
		t.Fatalf("the actor of a removed group: %q", info.Detail)
	}
	h.m.OwnerGone("10.0.0.1:1")
	for _, id := range []string{crashed, stranded.String()} {
		if info := h.await(id, "dead", phaseIs(lifecycle.Dead)); !strings.Contains(info.Detail, "ended with its creator") {
			t.Fatalf("a detached actor of a group whose creator died: %q", info.Detail)
		}
	}
	// A record missing for a moment (its creator's lease lost in a GCS outage, written
	// again on a new one) ends nothing.
	if _, err := h.table.Store.Delete(context.Background(), gcs.PlacementGroupKey("live")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	put("live", "CREATED", "10.0.0.2:1")
	vanished := mk("vanished", false) // no record, ever
	if info := h.await(vanished, "dead", phaseIs(lifecycle.Dead)); !strings.Contains(info.Detail, "placement group vanished is gone") {
		t.Fatalf("the actor of a group whose record is missing: %q", info.Detail)
	}
	if info, ok := h.m.Get(live); !ok || lifecycle.Phase(info.Phase) != lifecycle.Alive {
		t.Fatalf("the actor of a live group: %+v (found %v), want it alive", info, ok)
	}
}
