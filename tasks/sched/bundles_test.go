package sched

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func cpus(n float64) Resources { return mustResMap(map[string]float64{CPU: n}) }

func mustResMap(m map[string]float64) Resources {
	r, err := FromMap(m)
	if err != nil {
		panic(err)
	}
	return r
}

func cpuNode(id string, total, avail float64) Node {
	return Node{ID: id, Total: cpus(total), Available: cpus(avail), Alive: true}
}

func TestPlaceBundles(t *testing.T) {
	dead := cpuNode("z", 8, 8)
	dead.Alive = false
	three := []Node{cpuNode("a", 4, 4), cpuNode("b", 4, 3), cpuNode("c", 2, 2), dead}
	for _, tc := range []struct {
		name     string
		bundles  []Resources
		nodes    []Node
		strategy BundleStrategy
		want     []string
		err      error
		errHas   string
	}{
		{"strict pack on the node with the most CPU free", []Resources{cpus(1), cpus(2)}, three, BundleStrictPack, []string{"a", "a"}, nil, ""},
		{"strict pack waits when only totals fit", []Resources{cpus(2), cpus(2)}, []Node{cpuNode("a", 4, 3), cpuNode("b", 4, 1)}, BundleStrictPack, nil, ErrBundlesWait, ""},
		{"strict pack infeasible", []Resources{cpus(3), cpus(3)}, three, BundleStrictPack, nil, ErrInfeasible, "STRICT_PACK needs one node"},
		{"pack on one node when it can", []Resources{cpus(1), cpus(1), cpus(1)}, three, BundlePack, []string{"a", "a", "a"}, nil, ""},
		{"pack fills a node before taking another", []Resources{cpus(2), cpus(2), cpus(2), cpus(1)}, three, BundlePack, []string{"a", "a", "b", "b"}, nil, ""},
		{"strict spread, one node each, dead nodes left out", []Resources{cpus(1), cpus(1), cpus(1)}, three, BundleStrictSpread, []string{"a", "b", "c"}, nil, ""},
		{"strict spread needs as many nodes", []Resources{cpus(1), cpus(1), cpus(1), cpus(1)}, three, BundleStrictSpread, nil, ErrInfeasible, "STRICT_SPREAD needs 4 nodes"},
		{"strict spread places the largest first", []Resources{cpus(1), cpus(4)}, []Node{cpuNode("a", 4, 4), cpuNode("b", 2, 2)}, BundleStrictSpread, []string{"b", "a"}, nil, ""},
		{"spread shares the least used nodes after one each", []Resources{cpus(1), cpus(1), cpus(1), cpus(1)}, three, BundleSpread, []string{"a", "b", "c", "a"}, nil, ""},
		{"a bundle no node can hold", []Resources{mustResMap(map[string]float64{"GPU": 1})}, three, BundlePack, nil, ErrInfeasible, "bundle 0"},
		{"custom resources", []Resources{mustResMap(map[string]float64{CPU: 1, "lane": 1})},
			[]Node{cpuNode("a", 4, 4), {ID: "b", Total: mustResMap(map[string]float64{CPU: 1, "lane": 1}), Available: mustResMap(map[string]float64{CPU: 1, "lane": 1}), Alive: true}},
			BundlePack, []string{"b"}, nil, ""},
		{"no alive node", []Resources{cpus(1)}, []Node{dead}, BundlePack, nil, ErrNoNodes, ""},
		{"an empty bundle", []Resources{{}}, three, BundlePack, nil, ErrInvalidQuantity, "bundle 0 asks for no resources"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PlaceBundles(tc.bundles, tc.nodes, tc.strategy)
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

// The renamed resources a node gains hold exactly the tasks a bundle should: a task in
// bundle 0 fits bundle 0 and not bundle 1, one in any bundle fits either, and the node's
// room for the group is the sum of its bundles.
func TestBundleResources(t *testing.T) {
	b0 := BundleResources("g1", 0, cpus(2))
	b1 := BundleResources("g1", 1, cpus(1))
	node := b0.Add(b1)
	if got := node.Get("CPU_group_g1"); got != 3*Unit {
		t.Fatalf("wildcard room %v, want 3", got)
	}
	in0 := InBundle("g1", 0, cpus(2))
	in1 := InBundle("g1", 1, cpus(2))
	any := InBundle("g1", -1, cpus(1))
	if !node.Fits(in0) || node.Fits(in1) || !node.Fits(any) {
		t.Fatalf("fits: bundle 0 %v, bundle 1 %v, any %v; want true, false, true", node.Fits(in0), node.Fits(in1), node.Fits(any))
	}
	left := node.Sub(in0)
	if left.Fits(InBundle("g1", 0, cpus(1))) || !left.Fits(InBundle("g1", 1, cpus(1))) || left.Fits(InBundle("g1", -1, cpus(2))) {
		t.Fatalf("after a 2-CPU task in bundle 0: %v", left)
	}
	// A task that asks for nothing still needs the group's marker.
	if (Resources{}).Fits(InBundle("g1", -1, Resources{})) || !node.Fits(InBundle("g1", 1, Resources{})) {
		t.Fatal("a zero task in a group must need the group's marker and fit where the group is")
	}
	if InBundle("g2", 0, cpus(1)).Get("CPU") != 0 {
		t.Fatal("a task in a bundle must not ask for the node's own CPU")
	}
}

func TestParseBundleStrategy(t *testing.T) {
	for _, s := range []BundleStrategy{BundlePack, BundleSpread, BundleStrictPack, BundleStrictSpread} {
		if got, err := ParseBundleStrategy(s.String()); err != nil || got != s {
			t.Fatalf("%v: %v %v", s, got, err)
		}
	}
	if _, err := ParseBundleStrategy("pack"); err == nil {
		t.Fatal("want an error for an unknown name")
	}
}
