package core

import (
	"fmt"
	"testing"

	"github.com/ray-go/ray/internal/base/ids"
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
