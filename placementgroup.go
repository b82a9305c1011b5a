package ray

import (
	"context"
	"math"

	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/tasks/sched"
)

// Bundle is one reservation of a placement group: resources by name, e.g.
// {"CPU": 2, "GPU": 1}.
type Bundle map[string]float64

// PlacementStrategy is how a placement group's bundles spread over nodes (Ray's
// strategies, named as Ray spells them).
type PlacementStrategy string

const (
	// StrategyPack puts the bundles on as few nodes as it can.
	StrategyPack PlacementStrategy = "PACK"
	// StrategySpread puts the bundles on distinct nodes as far as it can.
	StrategySpread PlacementStrategy = "SPREAD"
	// StrategyStrictPack puts every bundle on one node; the group waits until one node
	// has room for all of them.
	StrategyStrictPack PlacementStrategy = "STRICT_PACK"
	// StrategyStrictSpread puts every bundle on a node of its own; the group waits until
	// there are enough such nodes.
	StrategyStrictSpread PlacementStrategy = "STRICT_SPREAD"
)

// ErrPlacementGroupRemoved is the error (through errors.Is) of a task placed in a
// placement group that was removed before the task could start, and of the calls of an
// actor that died because its group was removed (with ErrActorDied).
var ErrPlacementGroupRemoved = core.ErrPlacementGroupRemoved

// PlacementGroupHandle is a placement group (Ray's PlacementGroup): reserved bundles of
// resources that tasks run in with the PlacementGroupBundle option.
type PlacementGroupHandle struct {
	pg *core.PlacementGroup
}

// PlacementGroup reserves bundles of resources across the cluster's nodes, placed together
// by strategy (Ray's ray.util.placement_group). It returns at once; Ready waits until every
// bundle is reserved, which happens as soon as the nodes have the room: a group that does
// not fit now waits for resources to be freed (Ready's error says why it waits). Reserved
// resources are the group's alone until Remove (or until the creating process shuts down):
// other tasks do not use them, and tasks in the group run on the bundle's node with the
// bundle's resources. A group that no set of the cluster's alive nodes can ever hold (a
// bundle larger than every node, STRICT_SPREAD over too few nodes) stays pending, as in Ray,
// in case such nodes join; but a task submitted into it fails at once with ErrInfeasible
// and the group's reason, as a task no node can run does.
//
// Tasks and actors go into a group with PlacementGroupBundle(pg, i), from the process that
// created it or from any other process of its job (a task running in the group, with
// CurrentPlacementGroup; any process of the job, with GetPlacementGroup and the group's ID).
// Another job's work is refused (its bundles are reserved in its job's worker processes). An
// actor created before the group is placed is recorded at once, PENDING_CREATION with a
// reason naming the group, and created when the group is placed (no deadline, as in Ray);
// it dies if the group is removed first. A bundle whose node dies is placed again on
// another node, and its actors restart there, whichever process created them.
func PlacementGroup(ctx context.Context, bundles []Bundle, strategy PlacementStrategy) (*PlacementGroupHandle, error) {
	tc, err := taskContext(ctx)
	if err != nil {
		return nil, err
	}
	st, err := sched.ParseBundleStrategy(string(strategy))
	if err != nil {
		return nil, rayErrorf("ray: placement group: %w", err)
	}
	res := make([]sched.Resources, len(bundles))
	for i, b := range bundles {
		if res[i], err = sched.FromMap(b); err != nil {
			return nil, rayErrorf("ray: placement group: bundle %d: %w", i, err)
		}
	}
	pg, err := tc.Core.CreatePlacementGroup(res, st, "")
	if err != nil {
		return nil, rayErrorf("ray: placement group: %w", err)
	}
	return &PlacementGroupHandle{pg: pg}, nil
}

// ID returns the group's ID.
func (h *PlacementGroupHandle) ID() string { return h.pg.ID }

// Ready waits until every bundle of the group is reserved (Ray's pg.ready()), or ctx ends;
// its error then says why the group still waits (e.g. "STRICT_SPREAD needs 3 nodes ...").
func (h *PlacementGroupHandle) Ready(ctx context.Context) error { return h.pg.Ready(ctx) }

// BundleNodes returns the node ID of each bundle (nil until the group is ready). A bundle
// whose node died has "" until the group has placed it again on another node (its
// record's state is RESCHEDULING meanwhile, and tasks in that bundle wait).
func (h *PlacementGroupHandle) BundleNodes() []string {
	nodes := h.pg.Nodes()
	if nodes == nil {
		return nil
	}
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = string(n)
	}
	return out
}

// Bundles returns the group's bundles.
func (h *PlacementGroupHandle) Bundles() []Bundle {
	out := make([]Bundle, len(h.pg.Bundles))
	for i, b := range h.pg.Bundles {
		out[i] = b.Map()
	}
	return out
}

// Remove gives the group's reservations back (Ray's remove_placement_group) and ends what
// runs in it, as Ray does, whichever process of the cluster put it there: its tasks are
// cancelled (one still queued never runs; a running one has its ctx cancelled, and its Get
// reports ErrCancelled) and its actors are killed for good (their state's Detail says the
// group was removed); tasks still waiting for the group fail with ErrPlacementGroupRemoved.
// Another process's tasks are cancelled by that process once it reads the group's record
// (within about a second). Resources held by a task that ignores its ctx go back to their
// node when it ends. Removing twice is harmless. Only the process that created the group
// can remove it.
func (h *PlacementGroupHandle) Remove(ctx context.Context) error {
	if err := h.pg.Remove(ctx); err != nil {
		return rayErrorf("ray: remove placement group %s: %w", h.pg.ID, err)
	}
	return nil
}

// GetPlacementGroup returns the placement group id (Ray's ray.util.get_placement_group, by
// ID): one this process created, or one another process of the cluster created (read from
// the cluster's records; its creator owns it, places it and removes it: Remove from here
// fails). Only a group of this job takes this job's work: PlacementGroupBundle with another
// job's group fails the task or actor with an error naming the group and its job. It
// waits for the record at most until ctx ends; a group whose record the cluster does not
// have (it was never created, or its creator ended) is looked for about
// a second (a group created a moment ago is recorded in the background) and then fails
// with ErrPlacementGroupRemoved.
func GetPlacementGroup(ctx context.Context, id string) (*PlacementGroupHandle, error) {
	tc, err := taskContext(ctx)
	if err != nil {
		return nil, err
	}
	pg, err := tc.Core.ForeignGroup(ctx, id)
	if err != nil {
		return nil, rayErrorf("ray: placement group: %w", err)
	}
	return &PlacementGroupHandle{pg: pg}, nil
}

// CurrentPlacementGroup returns the placement group the running task or actor was placed
// in (Ray's ray.util.get_current_placement_group), and false in a driver, an actor or outside any
// group: its children go into the same group with PlacementGroupBundle.
func CurrentPlacementGroup(ctx context.Context) (*PlacementGroupHandle, bool, error) {
	tc, err := taskContext(ctx)
	if err != nil {
		return nil, false, err
	}
	if tc.Spec == nil || tc.Spec.PlacementGroup == "" {
		return nil, false, nil
	}
	pg, err := tc.Core.ForeignGroup(ctx, tc.Spec.PlacementGroup)
	if err != nil {
		return nil, false, rayErrorf("ray: the current placement group: %w", err)
	}
	return &PlacementGroupHandle{pg: pg}, true, nil
}

// PlacementGroupBundle runs a task or creates an actor in bundle index of placement group
// pg (index -1: any of its bundles; Ray's PlacementGroupSchedulingStrategy): on that
// bundle's node, with resources taken from the bundle, so the resources asked for
// (NumCPUs, Resources ...) must fit the bundle's. With index -1 the task or actor goes to
// a node whose bundles of the group can hold it, the nodes taken in turn (weighted by how
// many such requests each holds); it fails with ErrInfeasible only when no node's bundles
// can ever hold it. A task submitted before the group is
// ready waits for it, unless no set of the cluster's nodes can hold the group: then it
// fails with ErrInfeasible (see PlacementGroup).
func PlacementGroupBundle(pg *PlacementGroupHandle, index int) TaskOption {
	return func(o *callOpts) {
		o.strategy, o.affinityNode, o.affinitySoft = core.StrategyPlacementGroup, "", false
		if pg == nil || pg.pg == nil {
			o.pg, o.pgBundle = "", 0 // refused at submission (callOpts.resourcesOf)
			return
		}
		// (Clamped into the record's int32 only: an index out of range is refused with
		// the index asked for.)
		o.pg, o.pgBundle = pg.pg.ID, int32(max(min(index, math.MaxInt32), math.MinInt32))
	}
}
