package core

import (
	"fmt"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// TestBundleNode: where an actor of a group should be, given the group's bundles' nodes,
// its bundle and the node its record names: a bundle's node (none while it is lost);
// for any bundle (-1), where it is while a bundle is there, else a bundle's node.
func TestBundleNode(t *testing.T) {
	nodes := []ids.NodeID{"a", "", "c"}
	for _, tc := range []struct {
		nodes []ids.NodeID
		index int
		at    ids.NodeID
		want  ids.NodeID
	}{
		{nodes, 0, "a", "a"},
		{nodes, 0, "x", "a"}, // moved: bundle 0 is on a now
		{nodes, 1, "b", ""},  // bundle 1 is lost: it waits
		{nodes, 2, "b", "c"},
		{nodes, 3, "a", ""}, // no such bundle
		{nodes, -1, "c", "c"},
		{nodes, -1, "b", "a"}, // its node holds no bundle any more
		{[]ids.NodeID{"", ""}, -1, "b", ""},
		{nil, 0, "a", ""}, // not placed
	} {
		t.Run(fmt.Sprintf("%v/%d/%s", tc.nodes, tc.index, tc.at), func(t *testing.T) {
			if got := bundleNode(tc.nodes, tc.index, tc.at); got != tc.want {
				t.Fatalf("bundleNode = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRemovedGroupsBounded: a runtime remembers the groups it removed, the most recent
// pgGoneKept of them.
func TestRemovedGroupsBounded(t *testing.T) {
	var m pgShared
	for i := range pgGoneKept + 10 {
		m.markGone(fmt.Sprint("g", i))
	}
	m.markGone("g20") // again: nothing changes
	if m.isGone("g0") || m.isGone("g9") {
		t.Fatal("the oldest removed groups are still remembered beyond pgGoneKept")
	}
	if !m.isGone("g10") || !m.isGone(fmt.Sprint("g", pgGoneKept+9)) {
		t.Fatal("a recent removed group is forgotten")
	}
	if m.gone.Len() != pgGoneKept {
		t.Fatalf("remembered %d, want %d", m.gone.Len(), pgGoneKept)
	}
}

// TestForeignGroupEnded: when a runtime ends the work it put in another process's group
// (watchForeignGroup): at once on REMOVED or on its creator's confirmed death; on a
// missing record only after the grace (its creator may be writing it again after a lost
// lease), and never while the record is being read.
func TestForeignGroupEnded(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const grace = 10 * time.Second
	dead := func(addr string) bool { return addr == "dead:1" }
	rec := func(state, creator string) *pb.PlacementGroupInfo {
		return &pb.PlacementGroupInfo{Id: "g", State: state, CreatorAddress: creator}
	}
	type read struct {
		rec     *pb.PlacementGroupInfo
		pending bool
		at      time.Duration
		ended   bool
	}
	for _, tc := range []struct {
		name  string
		reads []read
	}{
		{"created", []read{{rec("CREATED", "live:1"), false, 0, false}, {rec("CREATED", "live:1"), false, time.Hour, false}}},
		{"removed", []read{{rec("REMOVED", "live:1"), false, 0, true}}},
		{"creator dead", []read{{rec("CREATED", "dead:1"), false, 0, true}}},
		{"creator dead, record gone", []read{{rec("CREATED", "live:1"), false, 0, false}, {nil, false, time.Second, false},
			{rec("CREATED", "dead:1"), false, 2 * time.Second, true}, {nil, false, 3 * time.Second, true}}},
		{"pending", []read{{nil, true, 0, false}, {nil, true, time.Hour, false}}},
		{"missing for the grace", []read{{nil, false, 0, false}, {nil, false, grace - 1, false}, {nil, false, grace, true}}},
		{"missing, then back", []read{{nil, false, 0, false}, {rec("CREATED", "live:1"), false, grace - 1, false},
			{nil, false, grace + 1, false}, {nil, false, 2 * grace, false}, {nil, false, 2*grace + 1, true}}},
	} {
		var s foreignSeen
		for i, r := range tc.reads {
			if got := s.ended(r.rec, r.pending, dead, t0.Add(r.at), grace); got != r.ended {
				t.Fatalf("%s: read %d: ended %v, want %v", tc.name, i, got, r.ended)
			}
		}
	}
}
