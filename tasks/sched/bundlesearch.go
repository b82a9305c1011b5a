package sched

import "sort"

// How the bundles of a placement group are assigned to nodes (assignBundles): the question
// "do these bundles fit these nodes" is bin packing, and a greedy pass that takes the
// bundles in the order given and puts each on the node with the most CPU left misses fits
// that exist (a CPU-only bundle takes the GPU node's CPUs, and the GPU bundle then has
// nowhere to go). So:
//   - the bundles are taken scarcest first (scarceFirst): those fewest nodes can hold,
//     then those asking for GPUs, custom resources, memory and CPUs, more before less (Ray's
//     SortRequiredResources orders by the same scarcity);
//   - STRICT_SPREAD is a bipartite matching of bundles to distinct nodes, found exactly by
//     augmenting paths (matchDistinct); SPREAD tries that first;
//   - SPREAD's sharing and PACK's few nodes are a backtracking search (bundleSearch):
//     each bundle tries the nodes that can hold it in the strategy's order of preference,
//     so the first path it follows is the greedy choice, and it backtracks only when that
//     path fails. PACK searches for an assignment on 1 node, then 2, ..., so the one it
//     finds uses as few nodes as can hold the group.
//
// The search is bounded: nodes that are alike (same room left, same number of the group's
// bundles) are tried once, at most maxCandidates nodes per bundle, and after searchBudget
// fit checks it stops backtracking (its first, greedy, path is always completed). A search
// cut short that found nothing is unsure, not a proof: PlaceBundles then waits instead of
// calling the group infeasible.

// outcome is what an assignment search found.
type outcome uint8

const (
	found  outcome = iota // an assignment
	none                  // proof that none exists
	unsure                // none found, but the search was cut short
)

const (
	// searchBudget is the number of fit checks after which a search stops backtracking.
	searchBudget = 1 << 20
	// maxCandidates is how many distinct nodes one bundle tries.
	maxCandidates = 32
)

// scarceFirst orders the bundles in todo scarcest first: fewest alive nodes whose room
// can hold it, then the most GPUs, the most custom resources (kinds, then amount), the
// most memory, the most CPUs; bundles alike keep their order.
func scarceFirst(bundles []Resources, todo, alive []int, room []Resources) []int {
	order := append([]int(nil), todo...)
	holders := make(map[int]int, len(order))
	for _, k := range order {
		n := 0
		for _, i := range alive {
			if room[i].Fits(bundles[k]) {
				n++
			}
		}
		holders[k] = n
	}
	custom := func(r Resources) (kinds int, amount Quantity) {
		for _, e := range r.other {
			if e.name != Memory && e.name != ObjectStoreMemory && e.q > 0 {
				kinds++
				amount = addSat(amount, e.q)
			}
		}
		return kinds, amount
	}
	sort.SliceStable(order, func(x, y int) bool {
		a, b := bundles[order[x]], bundles[order[y]]
		if ha, hb := holders[order[x]], holders[order[y]]; ha != hb {
			return ha < hb
		}
		if a.gpu != b.gpu {
			return a.gpu > b.gpu
		}
		ka, qa := custom(a)
		kb, qb := custom(b)
		if ka != kb {
			return ka > kb
		}
		if qa != qb {
			return qa > qb
		}
		if ma, mb := a.Get(Memory), b.Get(Memory); ma != mb {
			return ma > mb
		}
		return a.cpu > b.cpu
	})
	return order
}

// matchDistinct assigns the bundles in order to distinct alive nodes holding no bundle of
// the group yet (count 0) whose room fits them: at[k] is bundle k's node index. Each bundle
// prefers the node with the most CPU left (then the earlier node); when every node it fits
// is taken, an augmenting path moves earlier bundles to other nodes (Kuhn's algorithm), so
// it finds an assignment of every bundle whenever one exists. It returns how many bundles
// it assigned (the largest number that fit distinct nodes at once).
func matchDistinct(bundles []Resources, order, alive []int, room []Resources, count []int, at []int) int {
	cands := make([][]int, len(bundles))
	for _, k := range order {
		var c []int
		for _, i := range alive {
			if count[i] == 0 && room[i].Fits(bundles[k]) {
				c = append(c, i)
			}
		}
		sort.SliceStable(c, func(x, y int) bool { return room[c[x]].cpu > room[c[y]].cpu })
		cands[k] = c
	}
	owner := make(map[int]int) // node index -> bundle
	var augment func(k int, seen map[int]bool) bool
	augment = func(k int, seen map[int]bool) bool {
		for _, i := range cands[k] {
			if _, taken := owner[i]; !taken {
				owner[i], at[k] = k, i
				return true
			}
		}
		for _, i := range cands[k] {
			if seen[i] {
				continue
			}
			seen[i] = true
			if augment(owner[i], seen) {
				owner[i], at[k] = k, i
				return true
			}
		}
		return false
	}
	matched := 0
	for _, k := range order {
		if augment(k, map[int]bool{}) {
			matched++
		}
	}
	return matched
}

// bundleSearch is the backtracking search for an assignment of the bundles in order (see
// the top of this file). room and count (the group's bundles per node index) change as it
// places and are restored as it backs out; at[k] is bundle k's node index.
type bundleSearch struct {
	bundles []Resources
	order   []int
	alive   []int
	room    []Resources
	count   []int
	at      []int
	// pack: PACK's order of preference (the nodes the group uses first, in the order
	// first used, then the most CPU left); else SPREAD's (the fewest bundles of the group,
	// then the most CPU left). Ties go to the earlier node.
	pack     bool
	firstUse []int // pack: when each node was first used (0: not used)
	uses     int
	used     int // nodes holding bundles of the group
	maxUsed  int // at most this many nodes may hold bundles of the group (0: any number)
	budget   int
	cut      bool // a candidate was left out, or backtracking stopped: a failure is unsure
	bufs     [][]int
}

func newBundleSearch(bundles []Resources, order, alive []int, room []Resources, count []int, pack bool) *bundleSearch {
	s := &bundleSearch{bundles: bundles, order: order, alive: alive, room: room, count: count, pack: pack,
		at: make([]int, len(bundles)), firstUse: make([]int, len(room)), bufs: make([][]int, len(order)), budget: searchBudget}
	for _, i := range alive {
		if count[i] > 0 {
			s.used++
			s.uses++
			s.firstUse[i] = s.uses
		}
	}
	return s
}

// run searches with at most maxUsed nodes holding bundles (0: any number) and a fresh
// budget, and says what it found; at holds the assignment when found.
func (s *bundleSearch) run(maxUsed int) outcome {
	s.maxUsed, s.budget, s.cut = maxUsed, searchBudget, false
	if s.place(0) {
		return found
	}
	if s.cut {
		return unsure
	}
	return none
}

func (s *bundleSearch) better(i, j int) bool {
	if s.pack {
		ui, uj := s.firstUse[i] > 0, s.firstUse[j] > 0
		if ui != uj {
			return ui
		}
		if ui {
			return s.firstUse[i] < s.firstUse[j]
		}
	} else if s.count[i] != s.count[j] {
		return s.count[i] < s.count[j]
	}
	return s.room[i].cpu > s.room[j].cpu
}

// candidates lists the nodes bundle k may go to, best first, one of each kind of alike
// nodes, at most maxCandidates.
func (s *bundleSearch) candidates(depth, k int) []int {
	b := s.bundles[k]
	c := s.bufs[depth][:0]
	s.budget -= len(s.alive)
next:
	for _, i := range s.alive {
		if !s.room[i].Fits(b) || s.maxUsed > 0 && s.count[i] == 0 && s.used >= s.maxUsed {
			continue
		}
		for _, j := range c {
			if s.count[j] == s.count[i] && s.room[j].Equal(s.room[i]) {
				continue next // alike: what fits after one fits after the other
			}
		}
		// Insert i in order (stable: alive is in node order, ties keep it).
		p := len(c)
		for p > 0 && s.better(i, c[p-1]) {
			p--
		}
		if p == maxCandidates {
			s.cut = true
			continue
		}
		if len(c) == maxCandidates {
			c = c[:maxCandidates-1]
			s.cut = true
		}
		c = append(c, 0)
		copy(c[p+1:], c[p:])
		c[p] = i
	}
	s.bufs[depth] = c
	return c
}

// place assigns s.order[depth:] and reports whether it could.
func (s *bundleSearch) place(depth int) bool {
	if depth == len(s.order) {
		return true
	}
	k := s.order[depth]
	for n, i := range s.candidates(depth, k) {
		if n > 0 && s.budget <= 0 {
			s.cut = true // the first path is always followed: the greedy choice
			return false
		}
		s.budget--
		s.take(k, i)
		if s.place(depth + 1) {
			return true
		}
		s.undo(k, i)
	}
	return false
}

func (s *bundleSearch) take(k, i int) {
	s.room[i] = s.room[i].Sub(s.bundles[k])
	if s.count[i] == 0 {
		s.used++
		s.uses++
		s.firstUse[i] = s.uses
	}
	s.count[i]++
	s.at[k] = i
}

func (s *bundleSearch) undo(k, i int) {
	s.room[i] = s.room[i].Add(s.bundles[k])
	s.count[i]--
	if s.count[i] == 0 {
		s.used--
		s.uses--
		s.firstUse[i] = 0
	}
	s.at[k] = -1
}
