package actors

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks/sched"
)

// The manager's index of live actors by placement group (ActorInfo.placement_group), of
// every job: a group's creator moves the actors of a bundle it places again and ends the
// group's actors when it removes the group, whichever process created them
// (internal/assembly/core pg.go). Kept under m.mu with the cache it indexes.
//
// A group lives as long as its creator (Ray: as long as its creator's job; groups are
// never detached here). When the creator crashes, nobody removes the group, and the
// processes that put actors in it may be gone too (a detached actor created in the group
// by a process that crashed with the group's creator): so the leader also ends, with
// lifecycle.Kill (no restart), the live actors of its job whose group is gone, whoever
// created them (ManagerConfig.GroupGoneGrace; checkGroups). A group is gone when its
// record (gcs.PlacementGroupKey, written by the creator on its lease) says REMOVED, when
// the death of its creator (PlacementGroupInfo.creator_address) is confirmed (OwnerGone),
// or when its record has been missing for GroupGoneGrace (the creator's lease expired,
// and this manager did not see the death; the grace outlasts a creator that registers
// again after a GCS outage longer than its lease, which writes its records again).

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
// that still named the dead node must not fail before that. (One bound to a node outside
// any group, by ray.NodeAffinity, is placeAffine's.)
//
// An actor created before its group was placed has no node in its record yet: it waits
// (PENDING_CREATION, its record's Waiting saying for which group) until its creator binds
// it to its bundle's node once the group is placed (Table.PlaceInGroup), or it is killed
// with the group (removed, or ended with its creator). It is never placed outside it.
func (m *Manager) placeInBundle(id string, info *pb.ActorInfo, alive map[string]sched.Resources) {
	n := info.AffinityNode
	if n == "" {
		if info.Waiting == "" {
			m.wait(id, info, "waiting for its placement group "+info.PlacementGroup+" to be placed")
		}
		return
	}
	if isAlive(alive, n) {
		m.placing[n]++
		m.step(id, n, lifecycle.Placed{Incarnation: info.Incarnation, Node: n})
		return
	}
	m.wait(id, info, "waiting for node "+n+", which holds its bundle of placement group "+info.PlacementGroup+
		", to come back or for the group to place the bundle again")
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

// groupCheck is the leader's look at the placement groups of its job's live actors: every
// Resync a goroutine reads their records (one round at a time) and hands back the groups
// that are gone.
type groupCheck struct {
	running  bool // a round is under way (the run loop's)
	verdicts chan []groupVerdict
	// seen is the rounds' own state, by group: rounds run one after another, each started
	// by the run loop after the previous one's verdicts came back.
	seen map[string]*groupSeen
}

// groupSeen is what the rounds know of a group.
type groupSeen struct {
	creator string    // the creator's address, from the last record read
	missing time.Time // when the record was first found missing (zero: it was there)
}

// groupVerdict: group is gone, for reason (the Detail of its actors' dead records).
type groupVerdict struct {
	group, reason string
}

// groupReadTimeout bounds one read of a group's record.
const groupReadTimeout = 3 * time.Second

// checkGroups starts a round of reading the records of the groups the job's live actors
// are in, on the leader, if none is under way.
func (m *Manager) checkGroups() {
	if m.cfg.GroupGoneGrace <= 0 || !m.leading || m.groups.running {
		return
	}
	var groups []string
	m.mu.RLock()
	for g, set := range m.byGroup {
		for id := range set {
			if m.mine(m.actors[id]) {
				groups = append(groups, g)
				break
			}
		}
	}
	m.mu.RUnlock()
	if len(groups) == 0 {
		clear(m.groups.seen)
		return
	}
	m.groups.running = true
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		v := m.readGroups(groups, time.Now)
		select {
		case m.groups.verdicts <- v:
		case <-m.ctx.Done():
		}
	}()
}

// readGroups reads the records of groups and returns those that are gone. A record the
// GCS could not be asked for decides nothing.
func (m *Manager) readGroups(groups []string, now func() time.Time) []groupVerdict {
	seen := m.groups.seen
	keep := make(map[string]bool, len(groups))
	var out []groupVerdict
	for _, g := range groups {
		keep[g] = true
		ctx, cancel := context.WithTimeout(m.ctx, groupReadTimeout)
		kv, found, err := m.cfg.Table.Store.Get(ctx, gcs.PlacementGroupKey(g))
		cancel()
		if err != nil {
			continue
		}
		var rec *pb.PlacementGroupInfo
		if found {
			rec = &pb.PlacementGroupInfo{}
			if proto.Unmarshal(kv.Value, rec) != nil {
				continue
			}
		}
		st := seen[g]
		if st == nil {
			st = &groupSeen{}
			seen[g] = st
		}
		if why := groupGone(g, rec, st, m.ownerAddrGone, now(), m.cfg.GroupGoneGrace); why != "" {
			out = append(out, groupVerdict{g, why})
		}
	}
	for g := range seen {
		if !keep[g] {
			delete(seen, g)
		}
	}
	return out
}

// groupGone decides whether group is gone from its record as just read (nil: missing),
// what was seen of it before (updated), and the confirmed deaths; it returns why, or "".
func groupGone(group string, rec *pb.PlacementGroupInfo, st *groupSeen, dead func(address string) bool, now time.Time, grace time.Duration) string {
	if rec != nil {
		st.missing = time.Time{}
		if rec.CreatorAddress != "" {
			st.creator = rec.CreatorAddress
		}
		if rec.State == "REMOVED" {
			return "its placement group " + group + " was removed"
		}
	}
	if st.creator != "" && dead(st.creator) {
		return "its placement group " + group + " ended with its creator (the process at " + st.creator + " died)"
	}
	switch {
	case rec != nil:
		return ""
	case st.missing.IsZero():
		st.missing = now
		return ""
	case now.Sub(st.missing) >= grace:
		return "its placement group " + group + " is gone (its creator ended without removing it)"
	}
	return ""
}

// ownerAddrGone reports whether the process at address is dead for good (OwnerGone).
func (m *Manager) ownerAddrGone(address string) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.goneOwners.Has(address)
}

// endGroups kills, for good, the live actors of the job in the groups found gone (those
// with a step under way are looked at again in the next round).
func (m *Manager) endGroups(v []groupVerdict) {
	m.groups.running = false
	if !m.leading {
		return
	}
	for _, g := range v {
		var list []string
		m.mu.RLock()
		for id := range m.byGroup[g.group] {
			if m.mine(m.actors[id]) {
				list = append(list, id)
			}
		}
		m.mu.RUnlock()
		for _, id := range list {
			if _, busy := m.inflight[id]; busy {
				continue
			}
			m.cfg.Logger.Info("actors: ending an actor whose placement group is gone", "actor", id, "group", g.group, "why", g.reason)
			m.step(id, "", lifecycle.Kill{NoRestart: true, Reason: g.reason})
		}
	}
}
