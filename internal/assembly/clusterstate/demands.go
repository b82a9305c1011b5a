package clusterstate

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/assembly/agent"
	"github.com/ray-go/ray/internal/assembly/clusterview"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/pb"
)

// Demands is the work that waits for resources, as `rayctl status` shows it under
// "Demands:" (Ray's): the placement groups not placed yet, and the tasks and actors that
// wait at the nodes for resources, by shape. Tasks that no node can ever run are not
// here: they fail at once (ray.ErrInfeasible); a placement group that no set of nodes can
// hold stays pending, with the reason.
type Demands struct {
	PlacementGroups []GroupDemand `json:"placement_groups"`
	// Tasks are the tasks and actors waiting at the nodes' raylets, by shape (and
	// placement group), the most first, from the nodes' load reports (written within a
	// second of a change).
	Tasks []TaskDemand `json:"tasks"`
	// Omitted counts the tasks and actors of the shapes a node's report left out (a
	// report lists at most 16).
	Omitted int `json:"omitted,omitempty"`
}

// GroupDemand is a placement group that waits to be placed: PENDING, or RESCHEDULING
// (some of its bundles lost their node and wait to be placed again).
type GroupDemand struct {
	ID       string `json:"placement_group_id"`
	Name     string `json:"name,omitempty"`
	JobID    string `json:"job_id"`
	State    string `json:"state"`
	Strategy string `json:"strategy"`
	// Bundles are the shapes of the bundles that wait: every bundle of a PENDING group,
	// those not placed yet of a RESCHEDULING one.
	Bundles []map[string]float64 `json:"bundles"`
	Created string               `json:"created"`
	// PendingSeconds is how long a PENDING group has waited (since it was created).
	PendingSeconds int64 `json:"pending_seconds,omitempty"`
	// Reason is why it waits, as its creator recorded it ("" if it did not).
	Reason string `json:"reason,omitempty"`
}

// TaskDemand is the tasks and actors of one resource shape that wait for resources at the
// nodes. Tasks counts each owner's tasks of the shape once (the largest backlog its lease
// requests report, at whichever node), so it is about how many wait, not exact: a backlog
// is as its owner last reported it.
type TaskDemand struct {
	Shape map[string]float64 `json:"shape"`
	// PlacementGroup is the group of work that waits for room inside its bundles (Shape
	// is then what it asks of them).
	PlacementGroup string `json:"placement_group,omitempty"`
	Tasks          int    `json:"tasks"`
	Actors         int    `json:"actors"`
	// AgentIDs are where they wait: the machines (agents) as Nodes names them, or the
	// node's own ID for a node no agent runs.
	AgentIDs []string `json:"agent_ids"`
}

// readDemands assembles Demands from the placement groups' records and the load reports
// (by node ID) of the nodes of tables' node records.
func readDemands(tables map[string][]gcs.KV, loads map[string]*pb.NodeLoad, now time.Time) Demands {
	d := Demands{PlacementGroups: []GroupDemand{}, Tasks: []TaskDemand{}}
	for _, kv := range tables[gcs.PlacementGroupsPrefix] {
		info := &pb.PlacementGroupInfo{}
		if err := proto.Unmarshal(kv.Value, info); err != nil || info.GetId() == "" {
			continue
		}
		state := info.GetState()
		if state != "PENDING" && state != "RESCHEDULING" {
			continue
		}
		g := GroupDemand{ID: info.GetId(), Name: info.GetName(), JobID: info.GetJobId(), State: state, Strategy: info.GetStrategy(),
			Bundles: []map[string]float64{}, Created: FormatTime(info.GetCreatedUnixMs()), Reason: info.GetDetail()}
		for _, b := range info.GetBundles() {
			if state == "PENDING" || b.GetNodeId() == "" {
				g.Bundles = append(g.Bundles, agent.ResourcesFromPB(b.GetResources()))
			}
		}
		if state == "PENDING" && info.GetCreatedUnixMs() > 0 {
			g.PendingSeconds = max(0, int64(now.Sub(time.UnixMilli(info.GetCreatedUnixMs()))/time.Second))
		}
		d.PlacementGroups = append(d.PlacementGroups, g)
	}
	// Oldest first: the one waiting longest is the likeliest cause.
	sort.SliceStable(d.PlacementGroups, func(i, j int) bool {
		a, b := d.PlacementGroups[i], d.PlacementGroups[j]
		if a.Created != b.Created {
			return a.Created < b.Created
		}
		return a.ID < b.ID
	})

	machine := map[string]string{} // node -> its agent, or itself
	for _, kv := range tables[gcs.NodesPrefix] {
		id, _ := gcs.TrimKey(gcs.NodesPrefix, kv.Key)
		if n, err := clusterview.DecodeNode(id, kv.Value); err == nil && n.GetAgentId() != "" {
			machine[id] = n.GetAgentId()
		}
	}
	type acc struct {
		TaskDemand
		owners map[string]int // owner -> its largest backlog
		at     map[string]bool
	}
	byKey := map[string]*acc{}
	nodes := make([]string, 0, len(loads))
	for id := range loads {
		nodes = append(nodes, id)
	}
	sort.Strings(nodes)
	for _, id := range nodes {
		l := loads[id]
		d.Omitted += int(max(0, l.GetDemandsOmitted()))
		at := machine[id]
		if at == "" {
			at = id
		}
		for _, dm := range l.GetDemands() {
			if dm.GetTasks() < 0 || dm.GetActors() < 0 || dm.GetTasks()+dm.GetActors() == 0 {
				continue // not a demand
			}
			shape := agent.ResourcesFromPB(dm.GetShape())
			key := shapeKey(shape) + "|" + dm.GetPlacementGroup()
			a := byKey[key]
			if a == nil {
				a = &acc{TaskDemand: TaskDemand{Shape: shape, PlacementGroup: dm.GetPlacementGroup()},
					owners: map[string]int{}, at: map[string]bool{}}
				byKey[key] = a
			}
			if dm.GetTasks() > 0 {
				a.owners[dm.GetOwner()] = max(a.owners[dm.GetOwner()], int(dm.GetTasks()))
			}
			a.Actors += int(dm.GetActors())
			a.at[at] = true
		}
	}
	for _, a := range byKey {
		for _, n := range a.owners {
			a.Tasks += n
		}
		a.AgentIDs = make([]string, 0, len(a.at))
		for m := range a.at {
			a.AgentIDs = append(a.AgentIDs, m)
		}
		sort.Strings(a.AgentIDs)
		d.Tasks = append(d.Tasks, a.TaskDemand)
	}
	sort.SliceStable(d.Tasks, func(i, j int) bool {
		a, b := d.Tasks[i], d.Tasks[j]
		if x, y := a.Tasks+a.Actors, b.Tasks+b.Actors; x != y {
			return x > y
		}
		if x, y := shapeKey(a.Shape), shapeKey(b.Shape); x != y {
			return x < y
		}
		return a.PlacementGroup < b.PlacementGroup
	})
	return d
}

// shapeKey is a shape as a string, its names sorted: equal shapes, equal keys.
func shapeKey(shape map[string]float64) string {
	names := make([]string, 0, len(shape))
	for n := range shape {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s=%g,", n, shape[n])
	}
	return b.String()
}
