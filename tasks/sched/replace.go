package sched

import (
	"fmt"
	"sort"
)

// ReplaceBundles places again the bundles of a placed group whose nodes were lost:
// placed[i] is bundle i's node, "" for a lost one (a bundle on a node that is not alive
// in nodes counts as lost too). It returns the group's whole assignment: the surviving
// bundles stay where they are, and the lost ones go, against the nodes' Available
// resources (which already count the survivors' reservations), where the group's
// strategy wants them next to the survivors (Ray re-places only the lost bundles of a
// group too):
//   - STRICT_PACK: on the survivors' node, or on one node for all when every bundle was lost;
//   - STRICT_SPREAD: each on a node of its own that holds no other bundle of the group;
//   - PACK: on the nodes the group uses already first, then on as few new ones as it can;
//   - SPREAD: on the nodes holding the fewest bundles of the group, then the most CPU left.
//
// Errors are PlaceBundles': ErrBundlesWait when the lost bundles would fit the nodes'
// Total resources (less the survivors' bundles) but not what is free now, else an error
// wrapping ErrInfeasible that says why.
func ReplaceBundles(bundles []Resources, placed []string, nodes []Node, strategy BundleStrategy) ([]string, error) {
	if len(placed) != len(bundles) {
		return nil, fmt.Errorf("%w: %d bundles but %d placements", ErrInvalidQuantity, len(bundles), len(placed))
	}
	index := map[string]int{}
	var alive []int
	for i := range nodes {
		if nodes[i].Alive {
			alive = append(alive, i)
			index[nodes[i].ID] = i
		}
	}
	out := append([]string(nil), placed...)
	var lost []int
	var holders []int // the nodes of the surviving bundles, each once, in bundle order
	for k, n := range placed {
		i, ok := index[n]
		if n == "" || !ok {
			out[k] = ""
			lost = append(lost, k)
			continue
		}
		if !contains(holders, i) {
			holders = append(holders, i)
		}
	}
	if len(lost) == 0 {
		return out, nil
	}
	if len(lost) == len(bundles) {
		return PlaceBundles(bundles, nodes, strategy)
	}
	if len(alive) == 0 {
		return nil, ErrNoNodes
	}
	capOf := func(total bool) []Resources {
		room := make([]Resources, len(nodes))
		for _, i := range alive {
			if total {
				room[i] = nodes[i].Total
			} else {
				room[i] = nodes[i].Available
			}
		}
		if total { // the survivors hold theirs for good
			for k, n := range out {
				if n != "" {
					room[index[n]] = room[index[n]].Sub(bundles[k])
				}
			}
		}
		return room
	}
	if got, ok := assignBundles(bundles, out, lost, holders, nodes, alive, capOf(false), strategy); ok {
		return got, nil
	}
	if _, ok := assignBundles(bundles, out, lost, holders, nodes, alive, capOf(true), strategy); ok {
		return nil, ErrBundlesWait
	}
	switch strategy {
	case BundleStrictPack:
		var sum Resources
		for _, k := range lost {
			sum = sum.Add(bundles[k])
		}
		return nil, fmt.Errorf("%w: STRICT_PACK: the %d lost bundles (%v) must join the group's other bundles on node %s, which cannot hold them",
			ErrInfeasible, len(lost), sum, nodes[holders[0]].ID)
	case BundleStrictSpread:
		return nil, fmt.Errorf("%w: STRICT_SPREAD: the %d lost bundles need %d alive nodes that hold no other bundle of the group and fit them; the cluster has %d alive nodes, %d of them holding the group's other bundles",
			ErrInfeasible, len(lost), len(lost), len(alive), len(holders))
	}
	return nil, fmt.Errorf("%w: the %d lost bundles do not fit the alive nodes' total resources under %v", ErrInfeasible, len(lost), strategy)
}

// assignBundles places the bundles in todo against capacities room (indexed like nodes)
// under strategy, next to the bundles already placed: placed holds their nodes ("" for
// those in todo), and holders those nodes' indexes, each once. PlaceBundles is the case
// with nothing placed yet, ReplaceBundles the one with survivors.
func assignBundles(bundles []Resources, placed []string, todo, holders []int, nodes []Node, alive []int, room []Resources, strategy BundleStrategy) ([]string, bool) {
	out := append([]string(nil), placed...)
	// best is the alive node, not skipped, where b fits with the most CPU left (-1: none).
	best := func(b Resources, skip func(i int) bool) int {
		pick := -1
		for _, i := range alive {
			if (skip != nil && skip(i)) || !room[i].Fits(b) {
				continue
			}
			if pick < 0 || room[i].Get(CPU) > room[pick].Get(CPU) {
				pick = i
			}
		}
		return pick
	}
	take := func(k, i int) {
		room[i] = room[i].Sub(bundles[k])
		out[k] = nodes[i].ID
	}
	var sum Resources
	for _, k := range todo {
		sum = sum.Add(bundles[k])
	}
	switch strategy {
	case BundleStrictPack:
		var i int
		switch len(holders) {
		case 0:
			i = best(sum, nil)
		case 1:
			if i = holders[0]; !room[i].Fits(sum) {
				i = -1
			}
		default:
			i = -1 // the bundles placed are not on one node: not a STRICT_PACK group's state
		}
		if i < 0 {
			return nil, false
		}
		for _, k := range todo {
			take(k, i)
		}
		return out, true
	case BundlePack:
		if len(holders) == 0 {
			if i := best(sum, nil); i >= 0 {
				for _, k := range todo {
					take(k, i)
				}
				return out, true
			}
		}
		used := append([]int(nil), holders...) // in the order first used
		for _, k := range todo {
			i := -1
			for _, u := range used {
				if room[u].Fits(bundles[k]) {
					i = u
					break
				}
			}
			if i < 0 {
				if i = best(bundles[k], func(i int) bool { return contains(used, i) }); i < 0 {
					return nil, false
				}
				used = append(used, i)
			}
			take(k, i)
		}
		return out, true
	case BundleStrictSpread:
		order := append([]int(nil), todo...)
		sort.SliceStable(order, func(a, b int) bool { return bundles[order[a]].Get(CPU) > bundles[order[b]].Get(CPU) })
		used := append([]int(nil), holders...)
		for _, k := range order {
			i := best(bundles[k], func(i int) bool { return contains(used, i) })
			if i < 0 {
				return nil, false
			}
			used = append(used, i)
			take(k, i)
		}
		return out, true
	case BundleSpread:
		count := make([]int, len(nodes))
		for _, i := range alive {
			for _, n := range placed {
				if n != "" && nodes[i].ID == n {
					count[i]++
				}
			}
		}
		for _, k := range todo {
			// Fewest bundles of this group first, then the most CPU left.
			pick := -1
			for _, i := range alive {
				if !room[i].Fits(bundles[k]) {
					continue
				}
				if pick < 0 || count[i] < count[pick] || count[i] == count[pick] && room[i].Get(CPU) > room[pick].Get(CPU) {
					pick = i
				}
			}
			if pick < 0 {
				return nil, false
			}
			count[pick]++
			take(k, pick)
		}
		return out, true
	}
	return nil, false
}
