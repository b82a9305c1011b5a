package sched

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func resNode(id string, m map[string]float64) Node {
	r := mustResMap(m)
	return Node{ID: id, Total: r, Available: r, Alive: true}
}

// permutations returns every order of nodes (the order of a job's view is random).
func permutations(nodes []Node) [][]Node {
	if len(nodes) <= 1 {
		return [][]Node{append([]Node(nil), nodes...)}
	}
	var out [][]Node
	for i := range nodes {
		rest := append(append([]Node(nil), nodes[:i]...), nodes[i+1:]...)
		for _, p := range permutations(rest) {
			out = append(out, append([]Node{nodes[i]}, p...))
		}
	}
	return out
}

// checkPlacement reports what is wrong with got as a placement of bundles on nodes under
// strategy ("" if nothing): every bundle on an alive node, no node holding more than its
// Available, and the strategy's rule.
func checkPlacement(bundles []Resources, nodes []Node, strategy BundleStrategy, got []string) string {
	if len(got) != len(bundles) {
		return fmt.Sprintf("%d placements for %d bundles", len(got), len(bundles))
	}
	room := map[string]Resources{}
	for _, n := range nodes {
		if n.Alive {
			room[n.ID] = n.Available
		}
	}
	per := map[string]int{}
	for k, id := range got {
		r, ok := room[id]
		if !ok {
			return fmt.Sprintf("bundle %d on %q, not an alive node", k, id)
		}
		if !r.Fits(bundles[k]) {
			return fmt.Sprintf("bundle %d %v does not fit what is left on %s (%v)", k, bundles[k], id, r)
		}
		room[id] = r.Sub(bundles[k])
		per[id]++
	}
	switch strategy {
	case BundleStrictSpread:
		if len(per) != len(bundles) {
			return "STRICT_SPREAD with two bundles on one node"
		}
	case BundleStrictPack:
		if len(per) != 1 {
			return "STRICT_PACK on more than one node"
		}
	}
	return ""
}

// The shapes a tester found declared infeasible (or waiting forever) although they fit:
// the old placer took the bundles in order (STRICT_SPREAD: by CPU) and put each on the
// node with the most CPU left, ties to the first node of the job's (random) order, so a
// CPU-only bundle took the GPU (or disk) node's CPUs and the bundle that needed that node
// had nowhere to go; the same greedy pass on the nodes' totals then said "infeasible".
// Every order of the nodes must place them, on as many nodes as the case says.
func TestPlaceBundlesScarceFirst(t *testing.T) {
	head := resNode("head", map[string]float64{CPU: 2})
	gpu := resNode("gpu", map[string]float64{CPU: 2, GPU: 1})
	disk := resNode("disk", map[string]float64{CPU: 2, "disk": 4})
	three := []Node{head, gpu, disk}
	agent := resNode("agent", map[string]float64{CPU: 3, GPU: 1}) // the tester's 2-node cluster
	two := []Node{head, agent}
	b := mustResMap
	for _, tc := range []struct {
		name     string
		bundles  []Resources
		nodes    []Node
		strategy BundleStrategy
		nodesUse int            // distinct nodes the placement must use (0: any)
		want     map[int]string // bundles that must be on a given node
	}{
		{"strict spread, a CPU bundle and a GPU bundle", []Resources{b(map[string]float64{CPU: 1}), b(map[string]float64{GPU: 1})}, three, BundleStrictSpread, 2, map[int]string{1: "gpu"}},
		{"strict spread, 2-node cluster", []Resources{b(map[string]float64{CPU: 2}), b(map[string]float64{CPU: 1, GPU: 1})}, two, BundleStrictSpread, 2, map[int]string{0: "head", 1: "agent"}},
		{"spread, 2-node cluster", []Resources{b(map[string]float64{CPU: 2}), b(map[string]float64{CPU: 2, GPU: 1})}, two, BundleSpread, 2, map[int]string{0: "head", 1: "agent"}},
		{"pack, 2-node cluster", []Resources{b(map[string]float64{CPU: 2}), b(map[string]float64{CPU: 2, GPU: 1})}, two, BundlePack, 2, map[int]string{0: "head", 1: "agent"}},
		{"strict spread, CPU, disk and GPU bundles", []Resources{b(map[string]float64{CPU: 1}), b(map[string]float64{CPU: 1, "disk": 1}), b(map[string]float64{CPU: 1, GPU: 1})},
			three, BundleStrictSpread, 3, map[int]string{0: "head", 1: "disk", 2: "gpu"}},
		{"pack, a 2-CPU bundle and a disk bundle", []Resources{b(map[string]float64{CPU: 2}), b(map[string]float64{CPU: 1, "disk": 1})}, three, BundlePack, 2, map[int]string{1: "disk"}},
		{"pack, CPU, GPU and disk bundles on two nodes", []Resources{b(map[string]float64{CPU: 1}), b(map[string]float64{GPU: 1}), b(map[string]float64{"disk": 1})},
			three, BundlePack, 2, map[int]string{1: "gpu", 2: "disk"}},
		{"spread, every resource of the cluster", []Resources{b(map[string]float64{CPU: 2}), b(map[string]float64{CPU: 2}), b(map[string]float64{CPU: 2, GPU: 1}), b(map[string]float64{"disk": 4})},
			three, BundleSpread, 3, map[int]string{2: "gpu"}},
		{"spread, three CPU bundles and a GPU bundle on four nodes", []Resources{b(map[string]float64{CPU: 2}), b(map[string]float64{CPU: 2}), b(map[string]float64{CPU: 2}), b(map[string]float64{CPU: 2, GPU: 1})},
			[]Node{head, resNode("w1", map[string]float64{CPU: 2}), resNode("w2", map[string]float64{CPU: 2}), resNode("gpu", map[string]float64{CPU: 2, GPU: 1})}, BundleSpread, 4, map[int]string{3: "gpu"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, nodes := range permutations(tc.nodes) {
				got, err := PlaceBundles(tc.bundles, nodes, tc.strategy)
				if err != nil {
					t.Fatalf("nodes in the order %v: %v", ids(nodes), err)
				}
				if why := checkPlacement(tc.bundles, nodes, tc.strategy, got); why != "" {
					t.Fatalf("nodes in the order %v: %v: %s", ids(nodes), got, why)
				}
				used := map[string]bool{}
				for _, n := range got {
					used[n] = true
				}
				if tc.nodesUse > 0 && len(used) != tc.nodesUse {
					t.Fatalf("nodes in the order %v: %v uses %d nodes, want %d", ids(nodes), got, len(used), tc.nodesUse)
				}
				for k, n := range tc.want {
					if got[k] != n {
						t.Fatalf("nodes in the order %v: %v: bundle %d on %s, want %s", ids(nodes), got, k, got[k], n)
					}
				}
			}
		})
	}
}

func ids(nodes []Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.ID)
	}
	return out
}

// A group that fits the nodes' totals but not what is free now waits (ErrBundlesWait),
// whatever the order of the nodes: the old greedy pass on the totals called it
// infeasible (three drivers' SPREAD groups at once: the two that lost the race were
// recorded infeasible and stayed so after the first released everything). One that
// truly cannot fit is infeasible, and the STRICT_SPREAD message does not contradict itself.
func TestPlaceBundlesWaitNotInfeasible(t *testing.T) {
	busy := func(n Node) Node { n.Available = Resources{}; return n }
	nodes := []Node{busy(resNode("head", map[string]float64{CPU: 2})), busy(resNode("w1", map[string]float64{CPU: 2})),
		busy(resNode("w2", map[string]float64{CPU: 2})), busy(resNode("gpu", map[string]float64{CPU: 2, GPU: 1}))}
	spread := []Resources{cpus(2), cpus(2), cpus(2), mustResMap(map[string]float64{CPU: 2, GPU: 1})}
	for _, order := range permutations(nodes) {
		if _, err := PlaceBundles(spread, order, BundleSpread); !errors.Is(err, ErrBundlesWait) {
			t.Fatalf("nodes in the order %v: %v, want ErrBundlesWait", ids(order), err)
		}
		if _, err := PlaceBundles(spread, order, BundleStrictSpread); !errors.Is(err, ErrBundlesWait) {
			t.Fatalf("STRICT_SPREAD, nodes in the order %v: %v, want ErrBundlesWait", ids(order), err)
		}
	}
	// Two GPU bundles on distinct nodes, one GPU node: infeasible, and it says so.
	gpus := []Resources{mustResMap(map[string]float64{GPU: 1}), mustResMap(map[string]float64{GPU: 1})}
	_, err := PlaceBundles(gpus, nodes, BundleStrictSpread)
	if !errors.Is(err, ErrInfeasible) || !strings.Contains(err.Error(), "of the cluster's 4 alive nodes, at most 1 can hold one bundle each") {
		t.Fatalf("two GPU bundles under STRICT_SPREAD on one GPU node: %v", err)
	}
}

// Re-placing lost bundles has the same shapes: a STRICT_SPREAD group whose lost bundles
// are a CPU one and a GPU one must not give the GPU node to the CPU bundle.
func TestReplaceBundlesScarceFirst(t *testing.T) {
	nodes := []Node{resNode("head", map[string]float64{CPU: 2}), resNode("gpu", map[string]float64{CPU: 2, GPU: 1}), resNode("disk", map[string]float64{CPU: 2, "disk": 4})}
	bundles := []Resources{cpus(1), cpus(1), mustResMap(map[string]float64{CPU: 1, GPU: 1})}
	for _, order := range permutations(nodes) {
		got, err := ReplaceBundles(bundles, []string{"head", "", ""}, order, BundleStrictSpread)
		if err != nil || got[0] != "head" || got[1] != "disk" || got[2] != "gpu" {
			t.Fatalf("nodes in the order %v: %v, %v; want [head disk gpu]", ids(order), got, err)
		}
	}
	// PACK: the lost GPU bundle goes to the GPU node, the lost CPU bundle joins it there
	// (two nodes in all, not three).
	pack := []Resources{mustResMap(map[string]float64{"disk": 1}), cpus(1), mustResMap(map[string]float64{GPU: 1})}
	for _, order := range permutations(nodes) {
		got, err := ReplaceBundles(pack, []string{"disk", "", ""}, order, BundlePack)
		if err != nil || got[0] != "disk" || got[2] != "gpu" || got[1] != "gpu" && got[1] != "disk" {
			t.Fatalf("PACK, nodes in the order %v: %v, %v; want [disk gpu|disk gpu]", ids(order), got, err)
		}
	}
}

// The search is bounded: many nodes and bundles that fit no better than greedily still
// finish, and a search that gives up on the totals waits rather than calling the group
// infeasible. (Here nodes all differ, so nothing is tried once for alike nodes.)
func TestPlaceBundlesLargeSearchBounded(t *testing.T) {
	var nodes []Node
	for i := range 300 {
		nodes = append(nodes, resNode(fmt.Sprintf("n%d", i), map[string]float64{CPU: 3 + float64(i)/1000}))
	}
	// 301 bundles of 2 CPUs under SPREAD: at most one per node fits... after 300 one each,
	// the last shares: a node has 1.x CPU left, too little. Infeasible, but proving it
	// means trying the alternatives: the search gives up and the group waits.
	bundles := make([]Resources, 301)
	for i := range bundles {
		bundles[i] = cpus(2)
	}
	_, err := PlaceBundles(bundles, nodes, BundleSpread)
	if !errors.Is(err, ErrBundlesWait) && !errors.Is(err, ErrInfeasible) {
		t.Fatalf("301 bundles of 2 CPUs on 300 nodes of 3: %v", err)
	}
	// 300 fit, one per node, found at once.
	got, err := PlaceBundles(bundles[:300], nodes, BundlePack)
	if err != nil || checkPlacement(bundles[:300], nodes, BundlePack, got) != "" {
		t.Fatalf("300 bundles of 2 CPUs on 300 nodes of 3 under PACK: %v", err)
	}
}

// PACK on many alike nodes: as few nodes as hold the group (20 one-CPU bundles on nodes
// of 4 CPUs: 5), found without trying every smaller number of nodes in vain.
func TestPlaceBundlesPackFewestNodes(t *testing.T) {
	var nodes []Node
	for i := range 50 {
		nodes = append(nodes, cpuNode(fmt.Sprintf("n%d", i), 4, 4))
	}
	bundles := make([]Resources, 20)
	for i := range bundles {
		bundles[i] = cpus(1)
	}
	got, err := PlaceBundles(bundles, nodes, BundlePack)
	if err != nil || checkPlacement(bundles, nodes, BundlePack, got) != "" {
		t.Fatalf("%v, %v", got, err)
	}
	used := map[string]bool{}
	for _, n := range got {
		used[n] = true
	}
	if len(used) != 5 {
		t.Fatalf("20 one-CPU bundles on nodes of 4 CPUs under PACK used %d nodes, want 5", len(used))
	}
	// And when their total is more than all the nodes have: infeasible at once.
	more := make([]Resources, 201)
	for i := range more {
		more[i] = cpus(1)
	}
	if _, err := PlaceBundles(more, nodes[:50], BundlePack); !errors.Is(err, ErrInfeasible) {
		t.Fatalf("201 one-CPU bundles on 200 CPUs: %v", err)
	}
}
