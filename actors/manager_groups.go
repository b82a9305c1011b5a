package actors

import (
	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks/sched"
)

// The manager's index of live actors by placement group (ActorInfo.placement_group), of
// every job: a group's creator moves the actors of a bundle it places again and ends the
// group's actors when it removes the group, whichever process created them
// (internal/assembly/core pg.go). Kept under m.mu with the cache it indexes.

// indexGroup updates the group index for a record that changed from old (nil: not known)
// to info. Called with m.mu held.
func (m *Manager) indexGroup(id string, old, info *pb.ActorInfo) {
	if old != nil && old.PlacementGroup != "" && (info.PlacementGroup != old.PlacementGroup || lifecycle.Phase(info.Phase) == lifecycle.Dead) {
		if set := m.byGroup[old.PlacementGroup]; set != nil {
			delete(set, id)
			if len(set) == 0 {
				delete(m.byGroup, old.PlacementGroup)
			}
		}
	}
	if info.PlacementGroup == "" || lifecycle.Phase(info.Phase) == lifecycle.Dead {
		return
	}
	if m.byGroup == nil {
		m.byGroup = map[string]map[string]struct{}{}
	}
	set := m.byGroup[info.PlacementGroup]
	if set == nil {
		set = map[string]struct{}{}
		m.byGroup[info.PlacementGroup] = set
	}
	set[id] = struct{}{}
}

// placeInBundle places an actor bound to a node (ActorInfo.affinity_node): its placement
// group's bundle holds its resources there (they are renamed, so the node's own totals do
// not list them); nowhere else will do. While that node is dead the actor waits, being
// created or restarting: the group's creator places the bundle again and moves the
// actor's record to the new node (Table.MoveAffinity; the record's change brings it back
// here), or removes the group and kills it. An actor created from a view of the group
// that still named the dead node must not fail before that. One bound to a node outside
// any group (a record without placement_group) fails its creation as before.
func (m *Manager) placeInBundle(id string, info *pb.ActorInfo, alive map[string]sched.Resources) {
	n := info.AffinityNode
	if isAlive(alive, n) {
		m.placing[n]++
		m.step(id, n, lifecycle.Placed{Incarnation: info.Incarnation, Node: n})
		return
	}
	if info.PlacementGroup == "" && len(alive) > 0 && StateOf(info).MayFailPlacement() {
		m.step(id, "", lifecycle.PlacementFailed{Incarnation: info.Incarnation,
			Message: "node " + n + ", the only node it may run on, is gone"})
	}
}

// InGroup returns the cached records of the live actors (not dead) in placement group
// group, of every job, as the manager's watch has seen them: an actor created a moment
// ago may not be there yet (its record's change comes to Subscribe's callbacks). The
// records must not be modified.
func (m *Manager) InGroup(group string) []*pb.ActorInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	set := m.byGroup[group]
	out := make([]*pb.ActorInfo, 0, len(set))
	for id := range set {
		if info, ok := m.actors[id]; ok {
			out = append(out, info)
		}
	}
	return out
}
