package sched

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestReplaceBundles(t *testing.T) {
	dead := cpuNode("z", 8, 8)
	dead.Alive = false
	// a, b, c alive; z dead (held bundles before it died: its bundles are "" or "z").
	nodes := []Node{cpuNode("a", 4, 2), cpuNode("b", 4, 3), cpuNode("c", 4, 4), dead}
	two := []Resources{cpus(1), cpus(1)}
	for _, tc := range []struct {
		name     string
		bundles  []Resources
		placed   []string
		nodes    []Node
		strategy BundleStrategy
		want     []string
		err      error
		errHas   string
	}{
		{"nothing lost: unchanged", two, []string{"a", "b"}, nodes, BundleSpread, []string{"a", "b"}, nil, ""},
		{"strict spread: the lost bundle avoids the survivor's node", two, []string{"a", ""}, nodes, BundleStrictSpread, []string{"a", "c"}, nil, ""},
		{"a bundle on a dead node counts as lost", two, []string{"a", "z"}, nodes, BundleStrictSpread, []string{"a", "c"}, nil, ""},
		{"strict spread: no node left without a bundle of the group", []Resources{cpus(1), cpus(1), cpus(1)}, []string{"a", "b", ""},
			[]Node{cpuNode("a", 4, 4), cpuNode("b", 4, 4), dead}, BundleStrictSpread, nil, ErrInfeasible, "STRICT_SPREAD: the 1 lost bundles"},
		{"strict pack: the lost bundle joins the survivors' node", []Resources{cpus(1), cpus(1)}, []string{"b", ""}, nodes, BundleStrictPack, []string{"b", "b"}, nil, ""},
		{"strict pack: waits while the survivors' node is busy", []Resources{cpus(1), cpus(3)}, []string{"a", ""}, nodes, BundleStrictPack, nil, ErrBundlesWait, ""},
		{"strict pack: infeasible when the survivors' node can never hold it", []Resources{cpus(2), cpus(3)}, []string{"a", ""}, nodes, BundleStrictPack, nil, ErrInfeasible, "must join the group's other bundles on node a"},
		{"strict pack: every bundle lost, placed anew together", []Resources{cpus(1), cpus(1)}, []string{"z", "z"}, nodes, BundleStrictPack, []string{"c", "c"}, nil, ""},
		{"pack: the group's nodes first", []Resources{cpus(1), cpus(1), cpus(1)}, []string{"b", "", ""}, nodes, BundlePack, []string{"b", "b", "b"}, nil, ""},
		{"pack: the group's node while it has room, then as few new nodes as it can", []Resources{cpus(2), cpus(2), cpus(2)}, []string{"a", "", ""}, nodes, BundlePack, []string{"a", "a", "c"}, nil, ""},
		{"spread: the nodes with the fewest bundles of the group", []Resources{cpus(1), cpus(1), cpus(1)}, []string{"c", "c", ""}, nodes, BundleSpread, []string{"c", "c", "b"}, nil, ""},
		{"waits when only totals fit", []Resources{cpus(1), cpus(4)}, []string{"c", ""}, []Node{cpuNode("a", 4, 1), cpuNode("c", 4, 3)}, BundleSpread, nil, ErrBundlesWait, ""},
		{"placements and bundles differ in number", two, []string{"a"}, nodes, BundlePack, nil, ErrInvalidQuantity, "2 bundles but 1 placements"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReplaceBundles(tc.bundles, tc.placed, tc.nodes, tc.strategy)
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("got %v, %v; want an error %v containing %q", got, err, tc.err, tc.errHas)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
