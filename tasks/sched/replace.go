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
	if got, res := assignBundles(bundles, out, lost, holders, nodes, alive, capOf(false), strategy); res == found {
		return got, nil
	}
	switch _, res := assignBundles(bundles, out, lost, holders, nodes, alive, capOf(true), strategy); res {
	case found:
		return nil, ErrBundlesWait
	case unsure:
		return nil, errUnsure(len(lost))
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
// with nothing placed yet, ReplaceBundles the one with survivors. It does not change room.
// How it searches is described in bundlesearch.go; the outcome says whether it found an
// assignment, proved there is none, or gave up.
func assignBundles(bundles []Resources, placed []string, todo, holders []int, nodes []Node, alive []int, room []Resources, strategy BundleStrategy) ([]string, outcome) {
	room = append([]Resources(nil), room...)
	out := append([]string(nil), placed...)
	count := make([]int, len(nodes))
	for _, i := range holders {
		for _, n := range placed {
			if n != "" && nodes[i].ID == n {
				count[i]++
			}
		}
	}
	fill := func(at []int) ([]string, outcome) {
		for _, k := range todo {
			out[k] = nodes[at[k]].ID
		}
		return out, found
	}
	// onOne is the node, among those allowed, where sum fits with the most CPU left (-1: none).
	onOne := func(sum Resources, allowed []int) int {
		pick := -1
		for _, i := range allowed {
			if room[i].Fits(sum) && (pick < 0 || room[i].Get(CPU) > room[pick].Get(CPU)) {
				pick = i
			}
		}
		return pick
	}
	var sum Resources
	for _, k := range todo {
		sum = sum.Add(bundles[k])
	}
	at := make([]int, len(bundles))
	oneNode := func(i int) ([]string, outcome) {
		if i < 0 {
			return nil, none
		}
		for _, k := range todo {
			at[k] = i
		}
		return fill(at)
	}
	order := scarceFirst(bundles, todo, alive, room)
	switch strategy {
	case BundleStrictPack:
		switch len(holders) {
		case 0:
			return oneNode(onOne(sum, alive))
		case 1:
			return oneNode(onOne(sum, holders))
		}
		return nil, none // the bundles placed are not on one node: not a STRICT_PACK group's state
	case BundleStrictSpread:
		if matchDistinct(bundles, order, alive, room, count, at) < len(order) {
			return nil, none
		}
		return fill(at)
	case BundleSpread:
		if matchDistinct(bundles, order, alive, room, count, at) == len(order) {
			return fill(at)
		}
		s := newBundleSearch(bundles, order, alive, room, count, false)
		if got := s.run(0); got != found {
			return nil, got
		}
		return fill(s.at)
	case BundlePack:
		if len(holders) == 0 {
			if i := onOne(sum, alive); i >= 0 {
				return oneNode(i)
			}
		}
		// As few nodes as can hold the group: holders and one more, two more, ...; a
		// search cut short goes on without the bound.
		s := newBundleSearch(bundles, order, alive, room, count, true)
		start := len(holders)
		if start == 0 {
			start = 2 // one node was tried above
		}
		least, ok := fewestNodes(sum, alive, room, holders)
		if !ok {
			return nil, none
		}
		start = max(start, least)
	bound:
		for m := start; m < len(holders)+len(todo); m++ {
			switch s.run(m) {
			case found:
				return fill(s.at)
			case unsure:
				break bound
			}
		}
		if got := s.run(0); got != found {
			return nil, got
		}
		return fill(s.at)
	}
	return nil, none
}

// fewestNodes is a lower bound on the number of nodes (holders among them) that can hold
// sum, judging each resource alone: the holders' room and then the other nodes' largest.
// false: all the alive nodes together lack some resource of sum.
func fewestNodes(sum Resources, alive []int, room []Resources, holders []int) (int, bool) {
	least := len(holders)
	ok := true
	sum.Each(func(name string, need Quantity) {
		for _, i := range holders {
			need = subSat(need, max(room[i].Get(name), 0))
		}
		var more []Quantity
		for _, i := range alive {
			if q := room[i].Get(name); q > 0 && !contains(holders, i) {
				more = append(more, q)
			}
		}
		sort.Slice(more, func(a, b int) bool { return more[a] > more[b] })
		n := 0
		for need > 0 && n < len(more) {
			need = subSat(need, more[n])
			n++
		}
		if need > 0 {
			ok = false
		}
		least = max(least, len(holders)+n)
	})
	return least, ok
}
