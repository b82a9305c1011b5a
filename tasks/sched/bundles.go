package sched

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// BundleStrategy is how a placement group's bundles spread over nodes (Ray's
// placement strategies).
type BundleStrategy uint8

const (
	// BundlePack puts the bundles on as few nodes as it can: all on one if one has room,
	// else filling the nodes it uses before it takes another.
	BundlePack BundleStrategy = iota
	// BundleSpread puts the bundles on distinct nodes as far as it can, then shares the
	// least used ones.
	BundleSpread
	// BundleStrictPack puts every bundle on one node, or none.
	BundleStrictPack
	// BundleStrictSpread puts every bundle on a node of its own, or none.
	BundleStrictSpread
)

func (s BundleStrategy) String() string {
	switch s {
	case BundlePack:
		return "PACK"
	case BundleSpread:
		return "SPREAD"
	case BundleStrictPack:
		return "STRICT_PACK"
	case BundleStrictSpread:
		return "STRICT_SPREAD"
	}
	return "BundleStrategy(" + strconv.Itoa(int(s)) + ")"
}

// ParseBundleStrategy is String's inverse.
func ParseBundleStrategy(s string) (BundleStrategy, error) {
	for _, b := range []BundleStrategy{BundlePack, BundleSpread, BundleStrictPack, BundleStrictSpread} {
		if b.String() == s {
			return b, nil
		}
	}
	return 0, fmt.Errorf("sched: unknown placement strategy %q (PACK, SPREAD, STRICT_PACK or STRICT_SPREAD)", s)
}

// ErrBundlesWait says a placement group fits the cluster's nodes but not what they have
// free now: placing it again once resources are released may succeed.
var ErrBundlesWait = errors.New("sched: the placement group's bundles do not fit the resources free now")

// PlaceBundles decides the node of each bundle of a placement group: out[i] is bundles[i]'s
// node ID. It places against the nodes' Available resources; when that fails but the
// nodes' Total resources would hold the group under the same strategy, the error is
// ErrBundlesWait (the caller retries later), else an *InfeasibleError that says why.
// Only alive nodes take part.
//
// The choice does not depend on the order of the bundles, and finds an assignment whenever
// one exists for the groups and clusters that occur (bundlesearch.go): the scarcest
// bundles (GPUs, custom resources) choose first, STRICT_SPREAD is an exact matching of
// bundles to distinct nodes, SPREAD uses distinct nodes when it can, and PACK as few nodes
// as can hold the group; the rest is a bounded backtracking search. Among equally good
// nodes the one with the most CPU left wins, then the earlier node in nodes. A search
// too large to finish that found nothing waits (ErrBundlesWait) rather than calling the
// group infeasible.
func PlaceBundles(bundles []Resources, nodes []Node, strategy BundleStrategy) ([]string, error) {
	if len(bundles) == 0 {
		return nil, fmt.Errorf("%w: a placement group needs at least one bundle", ErrInvalidQuantity)
	}
	for i, b := range bundles {
		if b.IsZero() {
			return nil, fmt.Errorf("%w: bundle %d asks for no resources (a bundle must reserve something)", ErrInvalidQuantity, i)
		}
	}
	alive := make([]int, 0, len(nodes))
	for i := range nodes {
		if nodes[i].Alive {
			alive = append(alive, i)
		}
	}
	if len(alive) == 0 {
		return nil, ErrNoNodes
	}
	capOf := func(total bool) []Resources {
		c := make([]Resources, len(nodes))
		for _, i := range alive {
			if total {
				c[i] = nodes[i].Total
			} else {
				c[i] = nodes[i].Available
			}
		}
		return c
	}
	if out, res := placeBundles(bundles, nodes, alive, capOf(false), strategy); res == found {
		return out, nil
	}
	switch _, res := placeBundles(bundles, nodes, alive, capOf(true), strategy); res {
	case found:
		return nil, ErrBundlesWait
	case unsure:
		return nil, errUnsure(len(bundles))
	}
	return nil, bundlesInfeasible(bundles, nodes, alive, strategy)
}

// errUnsure is ErrBundlesWait for n bundles whose search on the nodes' totals gave up.
func errUnsure(n int) error {
	return fmt.Errorf("%w (and the search for nodes that could hold the %d bundles gave up before it found or ruled out an assignment)", ErrBundlesWait, n)
}

// placeBundles is PlaceBundles against capacities room (indexed like nodes).
func placeBundles(bundles []Resources, nodes []Node, alive []int, room []Resources, strategy BundleStrategy) ([]string, outcome) {
	todo := make([]int, len(bundles))
	for k := range todo {
		todo[k] = k
	}
	return assignBundles(bundles, make([]string, len(bundles)), todo, nil, nodes, alive, room, strategy)
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// bundlesInfeasible explains why no alive node set can ever hold the group.
func bundlesInfeasible(bundles []Resources, nodes []Node, alive []int, strategy BundleStrategy) error {
	for k, b := range bundles {
		fits := false
		for _, i := range alive {
			if nodes[i].Total.Fits(b) {
				fits = true
				break
			}
		}
		if !fits {
			err := infeasible(b, nodes, false)
			var ie *InfeasibleError
			if errors.As(err, &ie) {
				ie.What = "bundle"
				return fmt.Errorf("placement group bundle %d: %w", k, err)
			}
			return fmt.Errorf("%w: placement group bundle %d requires %v, which no node has", ErrInfeasible, k, b)
		}
	}
	switch strategy {
	case BundleStrictPack:
		var sum Resources
		for _, b := range bundles {
			sum = sum.Add(b)
		}
		return fmt.Errorf("%w: STRICT_PACK needs one node with %v for all %d bundles, and no alive node has that much in total",
			ErrInfeasible, sum, len(bundles))
	case BundleStrictSpread:
		room := make([]Resources, len(nodes))
		for _, i := range alive {
			room[i] = nodes[i].Total
		}
		todo := make([]int, len(bundles))
		for k := range todo {
			todo[k] = k
		}
		most := matchDistinct(bundles, todo, alive, room, make([]int, len(nodes)), make([]int, len(bundles)))
		return fmt.Errorf("%w: STRICT_SPREAD needs %d nodes, one per bundle, that fit their bundles; of the cluster's %d alive nodes, at most %d can hold one bundle each at once",
			ErrInfeasible, len(bundles), len(alive), most)
	}
	return fmt.Errorf("%w: the %d bundles together do not fit the alive nodes' total resources under %v", ErrInfeasible, len(bundles), strategy)
}

// Bundle resource names (Ray's): a node holding bundle i of group g has, in place of the
// bundle's resources r, "r_group_i_g" and "r_group_g" of the same amounts, plus
// BundleMarker of both forms at 1000 per bundle; a task in bundle i asks for the first
// form and the second (so tasks in any bundle of g and in bundle i share the node's room
// fairly), one in any bundle for the second only, each with 0.001 of the marker, so that a
// task that asks for nothing still lands where the group is.
const BundleMarker = "bundle"

// BundleName is resource name's renamed form in bundle index of group (index -1: the
// group-wide form).
func BundleName(name, group string, index int) string {
	if index < 0 {
		return name + "_group_" + group
	}
	return name + "_group_" + strconv.Itoa(index) + "_" + group
}

// BundleResources is what a node gains when it commits bundle index of group: the renamed
// resources described at BundleMarker. The node gives up res itself in exchange.
func BundleResources(group string, index int, res Resources) Resources {
	var out Resources
	add := func(name string, q Quantity) {
		out = out.With(BundleName(name, group, index), q).With(BundleName(name, group, -1), q)
	}
	res.Each(add)
	add(BundleMarker, 1000*Unit)
	return out
}

// InBundle is the demand of a task that asks for req inside bundle index of group (index
// -1: any bundle of the group).
func InBundle(group string, index int, req Resources) Resources {
	var out Resources
	add := func(name string, q Quantity) {
		out = out.With(BundleName(name, group, -1), out.Get(BundleName(name, group, -1))+q)
		if index >= 0 {
			out = out.With(BundleName(name, group, index), q)
		}
	}
	req.Each(add)
	add(BundleMarker, Unit/1000)
	return out
}

// AnyBundle chooses the node for a task or actor that asks for req in any bundle of a
// placed group (bundle index -1, InBundle's group-wide form): placed[i] is bundle i's
// node, "" while a lost bundle is being placed again. Such a task takes its resources from
// the group's bundles on one node together, so a node can hold it when the sum of the
// group's bundles there fits req. Among the nodes that can, it rotates by smooth weighted
// round robin, each node weighted by how many such requests its bundles hold at once, so
// that successive requests spread over the bundles in proportion to their room (Ray puts
// a task in any bundle that has room for it) and one that only some bundles can hold (a
// GPU) goes to those. credit is the rotation's state, node ID -> credit, kept by the
// caller for the group (it is updated here).
//
// It returns "" and no error when no node can hold req now but a lost bundle may, once
// placed again (the request waits), and an error wrapping ErrInfeasible when no node's
// bundles can ever hold it.
func AnyBundle(bundles []Resources, placed []string, req Resources, credit map[string]int64) (string, error) {
	type share struct {
		node    string
		room    Resources
		bundles int
	}
	var shares []share
	lost := false
	var all Resources
	for i, n := range placed {
		all = all.Add(bundles[i])
		if n == "" {
			lost = true
			continue
		}
		j := 0
		for j < len(shares) && shares[j].node != n {
			j++
		}
		if j == len(shares) {
			shares = append(shares, share{node: n})
		}
		shares[j].room = shares[j].room.Add(bundles[i])
		shares[j].bundles++
	}
	var total int64
	weights := make([]int64, len(shares))
	for j, s := range shares {
		if s.room.Fits(req) {
			weights[j] = copiesIn(req, s.room, s.bundles)
			total += weights[j]
		}
	}
	if total == 0 {
		if lost && all.Fits(req) {
			return "", nil
		}
		var held []string
		for _, s := range shares {
			held = append(held, s.room.String()+" on node "+s.node)
		}
		return "", fmt.Errorf("%w: %v is more than the group's bundles on any one node hold (%s): a task or actor in any bundle takes its resources from the bundles of one node; ask for less, or name a bundle that holds it",
			ErrInfeasible, req, strings.Join(held, ", "))
	}
	pick := -1
	for j, s := range shares {
		if weights[j] == 0 {
			continue
		}
		credit[s.node] += weights[j]
		if pick < 0 || credit[s.node] > credit[shares[pick].node] {
			pick = j
		}
	}
	credit[shares[pick].node] -= total
	return shares[pick].node, nil
}

// copiesIn is how many requests of req room holds at once, at least 1 and at most 1<<20;
// for a request of nothing, the number of bundles room is made of.
func copiesIn(req, room Resources, bundles int) int64 {
	n := int64(-1)
	req.Each(func(name string, q Quantity) {
		if q > 0 {
			if c := int64(room.Get(name) / q); n < 0 || c < n {
				n = c
			}
		}
	})
	if n < 0 {
		n = int64(bundles)
	}
	return min(max(n, 1), 1<<20)
}
