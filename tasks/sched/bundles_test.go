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
		{"a bundle no node can hold", []Resources{mustResMap(map[string]float64{"GPU": 1})}, three, BundlePack, nil, ErrInfeasible,
			"placement group bundle 0: sched: infeasible: bundle requires GPU=1 but the largest node has GPU=0"}, // a bundle, not a "task"
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

// AnyBundle: a request in any bundle goes to a node whose bundles of the group can hold
// it, rotating over those nodes in proportion to how many such requests they hold (the
// old choice was always the node holding the most bundles, ties to bundle 0's, whatever
// the request: tasks ran one node at a time, and one that only bundle 1 could hold failed
// or waited for ever); it waits while only a lost bundle could hold it, and is infeasible
// when no node's bundles can.
func TestAnyBundle(t *testing.T) {
	gpu := mustResMap(map[string]float64{CPU: 1, GPU: 1})
	bundles := []Resources{cpus(1), gpu, cpus(1)}
	placed := []string{"a", "b", "c"}
	pick := func(placed []string, req Resources, credit map[string]int64, n int) ([]string, error) {
		var got []string
		for range n {
			node, err := AnyBundle(bundles, placed, req, credit)
			if err != nil {
				return got, err
			}
			got = append(got, node)
		}
		return got, nil
	}
	// One CPU each: every node in turn, each as often.
	got, err := pick(placed, cpus(1), map[string]int64{}, 6)
	if err != nil || !reflect.DeepEqual(got, []string{"a", "b", "c", "a", "b", "c"}) {
		t.Fatalf("six 1-CPU requests: %v, %v; want a b c a b c", got, err)
	}
	// A GPU: only bundle 1's node.
	got, err = pick(placed, mustResMap(map[string]float64{GPU: 1}), map[string]int64{}, 3)
	if err != nil || !reflect.DeepEqual(got, []string{"b", "b", "b"}) {
		t.Fatalf("GPU requests: %v, %v; want b b b", got, err)
	}
	// Two bundles on one node: that node holds twice as many, and a 2-CPU request fits
	// only there (its bundles together).
	two := []string{"a", "b", "a"}
	got, err = pick(two, cpus(1), map[string]int64{}, 6)
	if n := count(got, "a"); err != nil || n != 4 {
		t.Fatalf("1-CPU requests over {a: 2 CPUs, b: 1}: %v, %v; want a 4 times of 6", got, err)
	}
	got, err = pick(two, cpus(2), map[string]int64{}, 2)
	if err != nil || !reflect.DeepEqual(got, []string{"a", "a"}) {
		t.Fatalf("2-CPU requests: %v, %v; want a a", got, err)
	}
	// A request for nothing: by the number of bundles.
	if got, err = pick(placed, Resources{}, map[string]int64{}, 3); err != nil || !reflect.DeepEqual(got, []string{"a", "b", "c"}) {
		t.Fatalf("requests for nothing: %v, %v", got, err)
	}
	// Bundle 1 lost: a GPU request waits (""), a CPU one goes to the others.
	lost := []string{"a", "", "c"}
	if node, err := AnyBundle(bundles, lost, mustResMap(map[string]float64{GPU: 1}), map[string]int64{}); node != "" || err != nil {
		t.Fatalf("GPU request while the GPU bundle is lost: %q, %v; want it to wait", node, err)
	}
	if got, err = pick(lost, cpus(1), map[string]int64{}, 2); err != nil || !reflect.DeepEqual(got, []string{"a", "c"}) {
		t.Fatalf("CPU requests while bundle 1 is lost: %v, %v", got, err)
	}
	// More than any node's bundles: infeasible, and it says what they hold.
	_, err = AnyBundle(bundles, placed, mustResMap(map[string]float64{GPU: 2}), map[string]int64{})
	if !errors.Is(err, ErrInfeasible) || !strings.Contains(err.Error(), "{CPU=1, GPU=1} on node b") {
		t.Fatalf("a 2-GPU request: %v", err)
	}
}

func count(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}
