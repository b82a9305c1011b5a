package core

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/actors"
	"github.com/ray-go/ray/actors/caller"
	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/mapx"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/internal/base/slab"
	"github.com/ray-go/ray/objects"
	"github.com/ray-go/ray/tasks"
	"github.com/ray-go/ray/tasks/sched"
)

// ErrNoActors is returned when the runtime was started without actor support.
var ErrNoActors = errors.New("ray: this runtime has no actor support")

// ActorConfig wires the caller side of actors (Config.Actors).
type ActorConfig struct {
	Table *actors.Table
	// Info returns the newest actor record this process has seen (the node's Manager).
	Info func(actorID string) (*pb.ActorInfo, bool)
	// PID resolves an actor's grain (cluster.Get); it may block for a moment.
	PID func(actorID string) *actor.PID
	// InGroup (optional) returns the live actors in a placement group, every process's
	// (the node's Manager.InGroup): a group this runtime created moves them with their
	// bundle and ends them with the group (pg.go).
	InGroup func(group string) []*pb.ActorInfo
}

// ActorSpec describes an actor to create.
type ActorSpec struct {
	Class           string
	Args            []Arg
	Resources       sched.Resources
	Name, Namespace string
	Detached        bool
	MaxRestarts     int
	MaxTaskRetries  int
	MaxConcurrency  int
	AtMostOnce      bool
	CheckpointEvery int
	// PlacementGroup and BundleIndex place the actor in a bundle of a placement group this
	// runtime created (index -1: any bundle); "" none.
	PlacementGroup string
	BundleIndex    int32
	// AffinityNode (without PlacementGroup) is ray.NodeAffinity's node: the only node the
	// actor may run on, or with AffinitySoft the node it prefers (actors.Manager places it).
	AffinityNode string
	AffinitySoft bool
}

// actorCaller is one caller's side of one actor: a shard of this process calls each
// actor as a caller of its own (Ray's per-worker caller: the calls of one submitter are in
// order; submitters in different shards never share a caller, so they do not contend on
// one). Its bookkeeping (sequence numbers, the calls not finished yet, what to resend,
// skip or fail, the outbox's order) is the pure caller.Caller; around it, the actorCaller
// does the I/O: it finds the actor's instance, sends what the outbox holds (its shard
// flushes it) and completes the calls the Caller gives up.
type actorCaller struct {
	id    ids.ActorID
	hex   string
	sh    *shard
	state *actorState

	mu     sync.Mutex
	calls  *caller.Caller[*pending]
	queued bool       // on the flush queue
	pid    *actor.PID // the instance of the newest incarnation known (nil: find it)
	// flushing: its shard took the outbox and is sending it (flushCaller)
	flushing bool

	resolving bool // a goroutine is finding the instance (its shard's loop only)
	// waiting: since which tick this caller's calls have waited for an actor with no
	// instance serving (zero: they do not; its shard's loop only, collect.go).
	waiting time.Time

	// held: this caller holds the actor's handle object while it has unfinished calls
	// (lifetime.go); guarded by mu.
	held bool
	// direct makes the messages of the calls sent straight to the actor (sendDirect),
	// several per allocation (guarded by mu). Each is fresh (the actor may still read an
	// earlier one) and lives until the actor has taken it in, about as long as its
	// neighbours; the actor takes the call's spec out of it then (grain.accept), so an
	// array kept by a later message holds no caller's record of an earlier call.
	direct slab.Slab[pb.ActorCall]
	// incNodes: the node of each placed incarnation this caller saw, newest last, at most
	// maxIncNodes (guarded by mu): the task events show a call on the node of the
	// incarnation that ran it (events.go, actorIncNode).
	incNodes []incNode
}

type incNode struct {
	inc  uint16
	node string
}

// maxIncNodes bounds actorCaller.incNodes (an actor restarted more often shows its older
// calls without a node).
const maxIncNodes = 32

// noteNode notes where info's incarnation of ac's actor is placed (mu held).
func (ac *actorCaller) noteNode(info *pb.ActorInfo) {
	if info.GetNode() == "" {
		return
	}
	inc := incOf(info.GetIncarnation())
	if n := len(ac.incNodes); n > 0 && ac.incNodes[n-1].inc == inc {
		ac.incNodes[n-1].node = info.GetNode()
		return
	}
	if len(ac.incNodes) >= maxIncNodes {
		ac.incNodes = append(ac.incNodes[:0], ac.incNodes[1:]...)
	}
	ac.incNodes = append(ac.incNodes, incNode{inc, info.GetNode()})
}

// nodeOf is the node noted for incarnation inc ("" none; mu held).
func (ac *actorCaller) nodeOf(inc uint16) string {
	for i := len(ac.incNodes) - 1; i >= 0; i-- {
		if ac.incNodes[i].inc == inc {
			return ac.incNodes[i].node
		}
	}
	return ""
}

// actorState is what this process knows of an actor whatever the caller: whether the
// record it is creating exists yet.
type actorState struct {
	// Set by CreateActor before the actor's ID leaves it, read-only after:
	created         chan struct{} // closed once the record exists (or creation failed); nil: not created here
	atMost, options bool          // options: atMost and retries are the creator's
	retries         int
	// failed: creation failed (set before created is closed).
	failed atomic.Pointer[pb.ErrorInfo]
}

// callerKey names a caller: a shard of this process and an actor.
type callerKey struct {
	shard int
	actor ids.ActorID
}

// state returns this process's state of actor id, making it on first use.
func (c *Core) state(id ids.ActorID) *actorState {
	if st, ok := c.actorStates.Load(id); ok {
		return st.(*actorState)
	}
	st, _ := c.actorStates.LoadOrStore(id, &actorState{})
	return st.(*actorState)
}

// caller returns shard sh's caller of actor id, making it on first use. The caller of an
// actor known dead fails its calls at once and is kept nowhere (forgetCaller).
func (c *Core) caller(sh *shard, id ids.ActorID) *actorCaller {
	key := callerKey{sh.i, id}
	if ac, ok := c.callers.Load(key); ok {
		return ac.(*actorCaller)
	}
	hex := id.String()
	var info *pb.ActorInfo
	if c.cfg.Actors != nil {
		info, _ = c.cfg.Actors.Info(hex)
	}
	cfg := caller.Config{ResendAfter: resendAfter, MaxResend: maxResend}
	if info != nil && lifecycle.Phase(info.Phase) == lifecycle.Dead {
		ac := &actorCaller{id: id, hex: hex, sh: sh, state: &actorState{}, calls: caller.New[*pending](cfg)}
		ac.calls.Die(diedErr(info))
		return ac
	}
	st := c.state(id)
	if st.options {
		cfg.AtMostOnce, cfg.MaxTaskRetries = st.atMost, st.retries
	}
	ac := &actorCaller{id: id, hex: hex, sh: sh, state: st, calls: caller.New[*pending](cfg)}
	if info != nil {
		ac.calls.Changed(recordOf(info)) // no call yet: nothing to resend or flush
	}
	if prev, loaded := c.callers.LoadOrStore(key, ac); loaded {
		return prev.(*actorCaller)
	}
	sh.send(newCaller{ac: ac})
	return ac
}

// forgetCaller drops ac, whose actor died (Dead is final), from this process's tables:
// the callers, its shard's (which it sweeps for stale calls every tick), and the actor's
// state once no caller of it is left. Its failed calls keep their pointers to it until
// they complete. A later call through a handle of the actor makes a new caller, which the
// actor manager's record (or, once the manager forgot the actor, the GCS) finds dead at
// once. Without this a driver that creates and ends actors kept a caller and a state for
// every actor it ever called, and its shards swept them all every tick. The nodes its
// incarnations ran on stay a while for the task records of its calls (goneNodes).
func (c *Core) forgetCaller(ac *actorCaller) {
	if !c.callers.CompareAndDelete(callerKey{ac.sh.i, ac.id}, ac) {
		return
	}
	ac.mu.Lock()
	nodes := append([]incNode(nil), ac.incNodes...)
	ac.mu.Unlock()
	c.gone.keep(ac.hex, nodes)
	ac.sh.send(callerGone{ac: ac})
	if len(c.callersOf(ac.id)) == 0 {
		c.actorStates.CompareAndDelete(ac.id, ac.state)
	}
}

// goneNodes keeps the nodes of the incarnations of the actors whose callers were
// forgotten (forgetCaller), the newest maxGone: the task records of their calls still
// show where they ran (actorIncNode).
type goneNodes struct {
	mu sync.Mutex
	m  mapx.RecentMap[actorInc, string]
}

// maxGone bounds goneNodes (an actor's calls whose records outlive it longer show no node).
const maxGone = 4096

// keep records the nodes of actor hex's incarnations.
func (g *goneNodes) keep(hex string, nodes []incNode) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.m.Max = maxGone
	for _, n := range nodes {
		g.m.Put(actorInc{hex, n.inc}, n.node)
	}
}

// node returns the node of k's incarnation ("" unknown).
func (g *goneNodes) node(k actorInc) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	n, _ := g.m.Get(k)
	return n
}

// addTo adds every incarnation's node it keeps to out (what out has stays).
func (g *goneNodes) addTo(out map[actorInc]string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.m.Range(func(k actorInc, n string) bool {
		if _, ok := out[k]; !ok {
			out[k] = n
		}
		return true
	})
}

// callersOf returns this process's callers of actor id (one per shard that called it).
func (c *Core) callersOf(id ids.ActorID) []*actorCaller {
	var out []*actorCaller
	for _, sh := range c.shards {
		if ac, ok := c.callers.Load(callerKey{sh.i, id}); ok {
			out = append(out, ac.(*actorCaller))
		}
	}
	return out
}

// callerID is the caller ID a shard's calls carry: its actor's ID, unique in the cluster.
func (s *shard) callerID() string { return s.pidW.Id }

// shardFor is the shard tc's submissions belong to: the family of its children.
func (c *Core) shardFor(tc *TaskContext) *shard { return c.shards[tc.idSeed()[1]&c.mask] }

// recordOf is what a caller needs of an actor record that is not Dead.
func recordOf(info *pb.ActorInfo) caller.Record {
	return caller.Record{Incarnation: info.Incarnation, Placed: info.Node != "",
		AtMostOnce: info.AtMostOnce, MaxTaskRetries: int(info.MaxTaskRetries)}
}

// diedErr is why the actor of a Dead record died.
func diedErr(info *pb.ActorInfo) error { return actors.StateOf(info).Err() }

// affinityFeasible checks hard node affinity for an actor against this process's view:
// the node must be this one in a single-process runtime; in a cluster, a node in the view
// must hold res, and a node the view knows dead is refused. A node the view does not know
// is left to the actor manager, which waits for a node registered a moment ago and fails
// the actor otherwise (so does one that dies before the actor starts).
func (c *Core) affinityFeasible(node ids.NodeID, res sched.Resources) error {
	if c.cfg.Cluster == nil {
		if node != c.cfg.Node {
			return fmt.Errorf("%w: %q is not a node of this cluster (its only node is %s)", sched.ErrAffinityUnavailable, node, c.cfg.Node)
		}
		return nil
	}
	if c.cfg.Nodes != nil {
		for _, n := range c.cfg.Nodes() {
			if n.NodeId != string(node) {
				continue
			}
			if total := tasks.ResourcesFromPB(n.Total); !total.Fits(res) {
				return fmt.Errorf("%w: node affinity: node %s has %v, the actor asks for %v", sched.ErrInfeasible, node, total, res)
			}
			return nil
		}
	}
	if node == c.cfg.Node {
		return fmt.Errorf("%w: %q is this process's node, which runs no actors (a driver's; ray.Nodes lists the nodes that do)", sched.ErrAffinityUnavailable, node)
	}
	if c.cfg.DeadNodes != nil {
		for _, d := range c.cfg.DeadNodes() {
			if d.Info.GetNodeId() == string(node) {
				return fmt.Errorf("%w: %q is dead", sched.ErrAffinityUnavailable, node)
			}
		}
	}
	return nil
}

// CreateActor creates an actor and returns its ID at once; the constructor runs on the
// node the cluster picks. Arguments that are refs are resolved first (then the record is
// written in the background; a failure kills the actor with the reason). For a
// non-detached actor that it creates (nil error), the caller holds one local reference to
// the actor's handle object, ids.ActorHandleID(id) (lifetime.go), and gives it back like
// an ObjectRef's: the actor ends when its last holder, here or anywhere, lets go.
func (c *Core) CreateActor(tc *TaskContext, spec ActorSpec) (ids.ActorID, error) {
	id := ids.NewActorID()
	if c.cfg.Actors == nil {
		return id, ErrNoActors
	}
	select {
	case <-c.closed:
		return id, ErrShutdown
	default:
	}
	if err := c.Lost(); err != nil {
		return id, err
	}
	if _, ok := actors.LookupClass(spec.Class); !ok {
		return id, fmt.Errorf("%w: no actor class named %q is registered in this program (register it at package level with ray.Actor under that exact name)", actors.ErrUnknownClass, spec.Class)
	}
	var pg *PlacementGroup
	if spec.PlacementGroup != "" {
		// The group's bundle is the feasibility check, and the record waits for the group.
		var err error
		pg, err = c.groupFor(spec.PlacementGroup, spec.BundleIndex, spec.Resources)
		for waited := time.Duration(0); errors.Is(err, errGroupNotReady) && waited < groupRecordWait; waited += 5 * time.Millisecond {
			time.Sleep(5 * time.Millisecond) // another process's group: its record is being read
			pg, err = c.groupFor(spec.PlacementGroup, spec.BundleIndex, spec.Resources)
		}
		if err != nil {
			return id, err
		}
	} else if err := c.cfg.Feasible(spec.Resources); err != nil {
		return id, err
	} else if spec.AffinityNode != "" && !spec.AffinitySoft {
		if err := c.affinityFeasible(ids.NodeID(spec.AffinityNode), spec.Resources); err != nil {
			return id, err
		}
	}
	// The record holds them as int32.
	for _, o := range []struct {
		name     string
		n, least int
	}{{"MaxRestarts", spec.MaxRestarts, lifecycle.Infinite}, {"MaxTaskRetries", spec.MaxTaskRetries, -1},
		{"MaxConcurrency", spec.MaxConcurrency, 0}, {"CheckpointEvery", spec.CheckpointEvery, 0}} {
		if o.n < o.least || o.n > math.MaxInt32 {
			return id, fmt.Errorf("ray: %s %d: want %d to %d", o.name, o.n, o.least, math.MaxInt32)
		}
	}
	// Large by-value arguments go through the object store, as a task's do, and the
	// record holds them by reference (ctorArg keeps them for the actor's restarts): the
	// record stays within what one GCS write takes.
	args, put, err := c.storeLargeArgs(tc, spec.Args, false)
	defer c.releasePut(put) // ctorArg holds its own references by then
	if err != nil {
		return id, fmt.Errorf("ray: creating actor %s: %w", spec.Class, err)
	}
	spec.Args = args
	info := &pb.ActorInfo{
		ActorId: id[:], Class: spec.Class, JobId: string(c.cfg.Job), Resources: tasks.ResourcesToPB(spec.Resources),
		Name: spec.Name, Namespace: spec.Namespace, Detached: spec.Detached,
		MaxRestarts: int32(spec.MaxRestarts), MaxTaskRetries: int32(spec.MaxTaskRetries), MaxConcurrency: int32(spec.MaxConcurrency),
		AtMostOnce: spec.AtMostOnce, CheckpointEvery: int32(spec.CheckpointEvery), Owner: c.ownerW,
		CtorArgs: make([]*pb.Arg, len(spec.Args)),
	}
	if pg == nil {
		info.AffinityNode, info.AffinitySoft = spec.AffinityNode, spec.AffinitySoft && spec.AffinityNode != ""
	}
	var refs []ids.ObjectID
	for i, a := range spec.Args {
		if !a.IsRef {
			info.CtorArgs[i] = &pb.Arg{Data: a.Data}
			continue
		}
		if _, _, known := c.mem.Get(a.Ref); !known {
			return id, fmt.Errorf("constructor argument %d: %w: %s", i+1, ErrUnknownObject, a.Ref)
		}
		refs = append(refs, a.Ref)
	}
	st := c.state(id)
	// Before the ID is returned, so every caller sees them.
	st.created = make(chan struct{})
	st.atMost, st.retries, st.options = spec.AtMostOnce, spec.MaxTaskRetries, true
	create := func(ctx context.Context) error {
		wait := false
		if pg != nil {
			// In a placement group: the bundle's node, the bundle's resources. A group not
			// placed yet (or whose bundle is being placed again) has the actor recorded
			// at once, PENDING_CREATION with no node and why it waits, as Ray lists it;
			// bindWhenPlaced gives it its bundle's node once the group is placed, however
			// long that takes (the group's removal, or its creator's end, ends it).
			node, res, err := pg.resolve(int(spec.BundleIndex), spec.Resources)
			if cl := c.cfg.Cluster; err == nil && cl != nil && !cl.Alive(node) {
				err = errGroupNotReady
			}
			switch {
			case err == nil:
				info.AffinityNode, info.Resources = string(node), tasks.ResourcesToPB(res)
			case errors.Is(err, errGroupNotReady) || errors.Is(err, sched.ErrInfeasible):
				// (Infeasible: the group waits for nodes that can hold it to join, and so
				// does the actor.)
				wait, info.Waiting = true, pg.actorWaits(spec.BundleIndex)
			default:
				return err
			}
			info.PlacementGroup, info.BundleIndex = pg.ID, spec.BundleIndex
		}
		_, _, err := c.cfg.Actors.Table.Create(ctx, info)
		if err == nil && pg != nil {
			if pg.foreign {
				c.noteForeignActor(pg.ID, id.String()) // it ends with the group (pg.go)
			} else {
				pg.addActor(id.String(), spec.BundleIndex) // it moves with its bundle (pg.go)
			}
			if wait {
				go c.bindWhenPlaced(pg, id.String(), spec.BundleIndex, spec.Resources)
			}
		}
		return err
	}
	failed := func(err error) {
		err = fmt.Errorf("actor %s died: it could not be created: %v", id, err)
		st.failed.Store(&pb.ErrorInfo{Kind: pb.ErrorInfo_ACTOR_DIED, Function: spec.Class, Message: err.Error()})
		for _, ac := range c.callersOf(id) {
			c.actorDied(ac, err)
		}
	}
	if len(refs) == 0 && spec.Name != "" {
		// A name must be free: Remote says at once when it is not.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := create(ctx)
		close(st.created)
		if err == nil && !spec.Detached {
			c.newHandleObject(id)
		}
		return id, err
	}
	if !spec.Detached {
		c.newHandleObject(id) // before the ID leaves: a failed creation is ended by its release too
	}
	if len(refs) == 0 {
		// Written in the background, as Ray creates actors: calls, Kill and the state wait
		// for the record (st.created), and a failure fails them. Records being written at
		// once are bounded (maxCreating), and their writes share etcd's commits: one
		// synchronous transaction per actor held a creating loop to the disk's flush rate.
		c.creating <- struct{}{}
		go func() {
			defer func() { <-c.creating }()
			defer close(st.created)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := create(ctx); err != nil {
				failed(err)
			}
		}()
		return id, nil
	}
	for _, r := range refs {
		c.refs.AddLocal(r)
	}
	go func() {
		defer close(st.created)
		// (In a closure: a deferred call's arguments are evaluated at once, and this one
		// released the arguments before the constructor could read them.)
		defer func() { c.free(c.refs.RemoveLocalAll(refs)) }()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-c.closed:
				cancel()
			case <-ctx.Done():
			}
		}()
		var err error
		for i, a := range spec.Args {
			if !a.IsRef {
				continue
			}
			var arg *pb.Arg
			if arg, err = c.ctorArg(ctx, a.Ref); err != nil {
				err = fmt.Errorf("constructor argument %d: %w", i+1, err)
				break
			}
			info.CtorArgs[i] = arg
		}
		if err == nil {
			err = create(ctx)
		}
		if err != nil {
			failed(err)
		}
	}()
	return id, nil
}

// maxCreating is how many actor records a runtime writes at once in the background
// (CreateActor); a creator that gets ahead of them waits.
const maxCreating = 256

// ctorArg waits for an object this process owns and returns it as a constructor
// argument: its bytes when small, else where it lives. A large object stays alive while
// this runtime runs (the actor may restart and read it again; the actor record holds no
// reference count).
func (c *Core) ctorArg(ctx context.Context, id ids.ObjectID) (*pb.Arg, error) {
	v, ok, err := c.mem.Wait(ctx, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownObject, id)
	}
	if v.Err != nil {
		return nil, fmt.Errorf("%s", v.Err.Message)
	}
	if v.InStore {
		c.refs.AddLocal(id) // never released: see above
		return &pb.Arg{ObjectId: id[:], IsRef: true, NodeId: string(v.Node)}, nil
	}
	return &pb.Arg{Data: v.Data}, nil
}

// KillActor kills an actor (Ray's ray.kill): with noRestart it dies for good, otherwise it
// restarts if it has restarts left.
func (c *Core) KillActor(ctx context.Context, id ids.ActorID, noRestart bool) error {
	if c.cfg.Actors == nil {
		return ErrNoActors
	}
	if c.isClosed() {
		return ErrShutdown
	}
	if created := c.state(id).created; created != nil {
		select {
		case <-created:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var after *pb.ActorInfo
	err := c.gcsCall(ctx, func(ctx context.Context) (err error) {
		after, _, _, err = c.cfg.Actors.Table.Step(ctx, id.String(), lifecycle.Kill{NoRestart: noRestart})
		return err
	})
	if errors.Is(err, lifecycle.ErrTerminal) {
		return nil // dead already
	}
	if err == nil {
		// Calls made after Kill returns go to the next incarnation (or fail at once).
		c.ActorChanged(after)
	}
	return err
}

// LookupActor finds a named actor: its ID, class, and, for a non-detached one, the owner
// of its handle object (nil for a detached actor, which has none): the caller that makes
// a handle of it holds that object (Hold of ids.ActorHandleID(id)), so that the handle
// counts as any other does (Ray: a handle from ray.get_actor keeps the actor alive). A dead
// actor, and a non-detached one whose owner this runtime knows died (ProcessGone), give a
// *lifecycle.DiedError at once.
func (c *Core) LookupActor(ctx context.Context, namespace, name string) (ids.ActorID, string, *pb.PID, error) {
	if c.cfg.Actors == nil {
		return ids.ActorID{}, "", nil, ErrNoActors
	}
	if c.isClosed() {
		return ids.ActorID{}, "", nil, ErrShutdown
	}
	var (
		hex  string
		info *pb.ActorInfo
	)
	err := c.gcsCall(ctx, func(ctx context.Context) (err error) {
		if hex, err = c.cfg.Actors.Table.Lookup(ctx, namespace, name); err != nil {
			return err
		}
		info, _, err = c.cfg.Actors.Table.Get(ctx, hex)
		return err
	})
	if err != nil {
		return ids.ActorID{}, "", nil, err
	}
	id, err := ids.ParseActorID(hex)
	if err != nil {
		return ids.ActorID{}, "", nil, err
	}
	if err := actors.StateOf(info).Err(); err != nil {
		return ids.ActorID{}, "", nil, err // dead (the name is freed in the same write: a race)
	}
	var owner *pb.PID
	if !info.Detached && info.Owner != nil {
		owner = info.Owner
		if c.ownerGone(owner.Address) {
			// Its owner died and the actor dies with it (the actor manager's step may not
			// have landed yet): say so now rather than register a handle with the dead
			// owner, which would wait borrowRegisterTimeout for an answer.
			return ids.ActorID{}, "", nil, &lifecycle.DiedError{ActorID: hex, Cause: lifecycle.CauseOwnerDied,
				Detail:      fmt.Sprintf("owner died (its owner %s is gone; a non-detached actor dies with it)", pidKey(owner)),
				Incarnation: info.Incarnation, Restarts: int(info.Restarts)}
		}
	}
	return id, info.Class, owner, nil
}

// ActorState reads an actor's lifecycle state from the GCS, and its record's history of
// transitions (oldest first).
func (c *Core) ActorState(ctx context.Context, id ids.ActorID) (lifecycle.State, []*pb.ActorTransition, error) {
	if c.cfg.Actors == nil {
		return lifecycle.State{}, nil, ErrNoActors
	}
	if created := c.state(id).created; created != nil { // a record still being written
		select {
		case <-created:
		case <-ctx.Done():
			return lifecycle.State{}, nil, ctx.Err()
		}
	}
	var info *pb.ActorInfo
	err := c.gcsCall(ctx, func(ctx context.Context) (err error) {
		info, _, err = c.cfg.Actors.Table.Get(ctx, id.String())
		return err
	})
	if err != nil {
		return lifecycle.State{}, nil, err
	}
	return actors.StateOf(info), info.History, nil
}

// SubmitActorCall submits a method call and returns the ID of its result and the result's
// entry (see Submit). Calls from this process to one actor run in the order they were
// submitted. owner is the owner of the actor's handle object, which the caller's handle
// holds (nil: it holds none, the actor is detached): while the call is unfinished, this
// process holds the object too (lifetime.go), so the actor outlives the calls made to it.
func (c *Core) SubmitActorCall(tc *TaskContext, id ids.ActorID, method string, args []Arg, owner *pb.PID) (ids.ObjectID, *objects.Entry, error) {
	p, ret, err := c.submitActorCall(tc, id, method, args, owner)
	return ret, &p.ret, err
}

func (c *Core) submitActorCall(tc *TaskContext, id ids.ActorID, method string, args []Arg, owner *pb.PID) (*pending, ids.ObjectID, error) {
	p, ptrs, argv := newPendingArgs(ids.ChildTaskID(tc.idSeed(), tc.children.Add(1)), len(args)) // its spec and arguments
	tid := p.tid
	ret := ids.ReturnID(tid, 1)
	if c.sites != nil {
		c.sites.note(ret)
	}
	select {
	case <-c.closed:
		return p, ret, ErrShutdown
	default:
	}
	if err := c.lostActorCall(ret, tid, method); err != nil {
		return p, ret, err
	}
	// The result's entry is made with the caller's reference in one step (CreateLocalIn,
	// below); a submission that fails before gets its error value and the reference from
	// failSubmit.
	if c.cfg.Actors == nil {
		return p, ret, c.failSubmit(ret, tid, method, pb.ErrorInfo_SYSTEM, ErrNoActors)
	}
	// Large by-value arguments go through the object store, as a task's do: the call's
	// message and the actor's method log entry stay small (the log records them by
	// reference, or, up to its limit, by value: package actors).
	args, put, err := c.storeLargeArgs(tc, args, false)
	if err != nil {
		c.releasePut(put)
		kind := pb.ErrorInfo_SYSTEM
		if errors.Is(err, objects.ErrObjectTooLarge) {
			kind = pb.ErrorInfo_OBJECT_TOO_LARGE
		}
		return p, ret, c.failSubmit(ret, tid, method, kind, err)
	}
	defer c.releasePut(put) // the call holds its own references by then (holdArgs)
	c.refs.CreateLocalIn(ret, &p.ret)
	// The call belongs to its submitter's shard (the family of tid), whose caller of the
	// actor orders it, flushes it (registering it as it goes, so a call costs no message
	// of its own) and gets its result.
	sh := c.shardOf(tid)
	ac := c.caller(sh, id)
	spec := p.spec
	spec.JobId, spec.Function = string(c.cfg.Job), method
	spec.Args = ptrs
	spec.ParentTaskId, spec.Owner, spec.ReplyTo, spec.NumReturns = tc.Task[:], c.ownerW, sh.pidW, 1
	var argRefs []ids.ObjectID
	var argErr error
	for i, a := range args {
		if !a.IsRef {
			argv[i].Data = a.Data
			spec.Args[i] = &argv[i]
			continue
		}
		if _, _, known := c.mem.Get(a.Ref); !known {
			argErr = fmt.Errorf("argument %d: %w: %s (it was released, or is owned by another process)", i+1, ErrUnknownObject, a.Ref)
			break
		}
		ref := a.Ref
		argv[i].ObjectId, argv[i].IsRef = ref[:], true
		spec.Args[i] = &argv[i]
		argRefs = append(argRefs, ref)
	}
	p.actor, p.sh = ac, sh
	// One clock read for the call's submission time (events.go; set before the shard can
	// see the call, which it takes from ac.calls under ac.mu) and, when it goes straight to
	// the actor, its send (sendDirect): both happen now.
	var now int64
	if c.evBudget != nil || len(argRefs) == 0 {
		now = c.clock.now()
	}
	if c.evBudget != nil {
		p.ev.submit = now
	}
	// The refs nested in the arguments are pinned before the call is the Caller's (below):
	// pinning one another process owns asks that process, which must not happen under mu.
	pinned := argErr == nil && c.pinArgs(ret, args)
	// A call without ref arguments skips its shard's inbox, where a call of a task a
	// recursive Cancel cancelled is refused (shard.parentCancelled): such a call goes
	// there instead (one atomic load while no task is cancelled).
	viaShard := len(argRefs) > 0 || (c.cancelled.any() && c.cancelled.has(tc.Task))
	ac.mu.Lock()
	seq, dead := ac.calls.Add(p)
	p.seq = seq
	register := false
	if dead == nil && owner != nil && !ac.held {
		// Under mu, so that a release (the calls finished, or the actor died) is never
		// decided before the hold it gives back is taken.
		ac.held = true
		register = !c.holdHandle(id, owner)
	}
	if dead == nil && argErr == nil {
		// The call is the Caller's from Add on, and a death fails it (actorDied, under mu)
		// and has its shard complete it, which reads these and drops what they hold: they
		// are set under mu, before anyone else can see the call (holdArgs only counts).
		c.holdArgs(argRefs)
		p.argRefs, p.pinned, p.dispatched = argRefs, pinned, !viaShard
	}
	ac.mu.Unlock()
	if register {
		c.Hold(ids.ActorHandleID(id), owner) // a handle never bound here (see holdHandle)
	}
	if dead != nil {
		if pinned {
			c.unpin(argsKey(ret)) // the call never was
		}
		msg := dead.Error()
		kind := pb.ErrorInfo_ACTOR_DIED
		if errors.Is(dead, ErrClusterLost) {
			kind = pb.ErrorInfo_SYSTEM // a caller Lose failed: the actor may live on
		}
		e := &pb.ErrorInfo{Kind: kind, Function: method, TaskId: p.tid[:], Message: msg}
		if kind == pb.ErrorInfo_ACTOR_DIED {
			e.Causes = diedCauses(msg) // its placement group was removed
		}
		c.mem.Set(ret, objects.Value{Err: e})
		c.submitFailure(p, method, e) // the state API shows it FAILED
		return p, ret, &SubmitError{Info: e, Err: errors.New(msg)}
	}
	if argErr != nil {
		// The call fails here; its seq is skipped so the calls after it are not held up.
		info := &pb.ErrorInfo{Kind: pb.ErrorInfo_OBJECT_LOST, Function: method, TaskId: p.tid[:], Message: argErr.Error(), NodeId: string(c.cfg.Node)}
		finished := c.actorFinished(p)
		c.mem.Set(ret, objects.Value{Err: info})
		if finished { // (else its actor's death failed it first, and its shard records that)
			c.submitFailure(p, method, info)
		}
		return p, ret, &SubmitError{Info: info, Err: argErr}
	}
	if !viaShard {
		// Nothing to wait for: the call goes to the actor now from this goroutine when
		// nothing is ahead of it (sendDirect), or to the outbox, in submission order; the
		// shard registers it before it handles the actor's answer.
		if !c.sendDirect(p, now) {
			c.sendActorCall(p, now)
		}
		return p, ret, nil
	}
	sh.submit(p) // its shard waits for its arguments (or refuses it), then sends it
	return p, ret, nil
}

// sendActorCall queues a resolved call for its actor; now is the clock's time (clock.now)
// if the caller read it a moment ago, else 0 (a burst's calls cost one clock read each,
// not two).
func (c *Core) sendActorCall(p *pending, now int64) {
	ac := p.actor
	if now == 0 {
		now = c.clock.now()
	}
	ac.mu.Lock()
	if ac.calls.Send(p.seq, c.clock.at(now)) {
		c.queueFlushLocked(ac)
	}
	ac.mu.Unlock()
}

// directMax bounds the unfinished calls of a caller for which a new call still goes
// straight to the actor (sendDirect): a caller with more is submitting a burst, which
// the shard's flush sends in batches (one message per batch, not per call).
const directMax = 8

// sendDirect sends call p (no ref arguments, dispatched) to its actor from the
// submitting goroutine, without the two hops through its shard's mailbox (flushActor,
// then the turn's flush), when nothing of its caller is ahead of it: the outbox is empty
// and no flush is queued or sending, the instance is known, the actor's creation is done,
// and the caller has at most directMax unfinished calls. It reports whether it sent p;
// otherwise p is untouched and goes through sendActorCall. The send happens under ac.mu,
// so the calls of one caller leave in sequence order whichever path they take. p is
// handed to its shard's direct list (registered there before the shard handles any later
// message, so before the actor's answer) before it leaves. now is the clock's time of the
// submission, a moment earlier.
func (c *Core) sendDirect(p *pending, now int64) bool {
	ac := p.actor
	if created := ac.state.created; created != nil {
		select {
		case <-created:
		default:
			return false
		}
		if ac.state.failed.Load() != nil {
			return false
		}
	}
	sh := ac.sh
	ac.mu.Lock()
	defer ac.mu.Unlock()
	if ac.pid == nil || ac.queued || ac.flushing || ac.calls.Queued() > 0 || ac.calls.Unfinished() > directMax || ac.calls.Cancelled(p.seq) {
		return false
	}
	if !ac.calls.Send(p.seq, c.clock.at(now)) {
		return false
	}
	var one [1]caller.Out[*pending]
	out := ac.calls.Take(one[:0])
	if len(out) != 1 || out[0].Call != p {
		panic("core: sendDirect: the outbox held more than the call just sent")
	}
	inc := ac.calls.Incarnation()
	m := ac.direct.New()
	m.ActorId, m.CallerId, m.Seq = ac.id[:], sh.callerID(), p.seq
	m.Acked, m.First, m.Incarnation, m.Caller, m.Spec = ac.calls.Low()-1, ac.calls.Low(), inc, sh.pidW, p.spec
	if sh.ev.on {
		p.ev.dispatch, p.ev.inc = now, incOf(inc)
	}
	sh.addDirect(p)
	c.root.Send(ac.pid, m)
	return true
}

// queueFlushLocked has ac's shard flush ac's outbox at the end of its turn (ac.mu
// held).
func (c *Core) queueFlushLocked(ac *actorCaller) {
	if ac.queued {
		return
	}
	ac.queued = true
	ac.sh.send(flushActor{ac: ac})
}

// actorFinished is complete's actor part: the call is finished for this process (a call
// the actor never saw is skipped). It reports whether p was unfinished: finishing it for
// its caller, under ac.mu, is what makes one completer of an actor call (the shard's
// complete, or takeLocal off the loop) the only one.
func (c *Core) actorFinished(p *pending) bool {
	ac := p.actor
	ac.mu.Lock()
	if q, ok := ac.calls.Call(p.seq); !ok || q != p {
		ac.mu.Unlock()
		return false
	}
	c.finishUnlock(ac, p.seq)
	return true
}

// finishUnlock finishes call seq for its caller ac (ac.mu held; released here): a call
// that was never sent leaves a skip in the outbox, and a caller left idle gives back its
// actor's handle.
func (c *Core) finishUnlock(ac *actorCaller, seq uint64) {
	if ac.calls.Finish(seq) {
		c.queueFlushLocked(ac)
	}
	release := ac.idleLocked()
	ac.mu.Unlock()
	if release {
		c.releaseHandle(ac.id)
	}
}

// resendAfter is how long a call may go unanswered before it is sent again. Resending is
// always safe (the actor dedups by sequence number: a call it has seen is answered or left
// to finish, never run twice); it repairs a call lost on the way, for example to an
// instance that stopped while it was in flight.
const resendAfter = 5 * time.Second

// maxResend bounds the calls of one actor resent per round (the oldest first): a long
// backlog of slow calls is not sent again wholesale every few seconds.
const maxResend = 1000

// resendStale puts the calls of s's actors unanswered for resendAfter back in their
// outboxes. A caller whose calls have waited collectWaitAfter for an actor with no
// instance serving asks for a collection (collect.go).
func (c *Core) resendStale(s *shard, now time.Time) {
	collect := false
	for _, ac := range s.callers {
		ac.mu.Lock()
		if ac.calls.ResendStale(now) > 0 {
			ac.pid = nil // resolve again: the placement may have moved
			c.queueFlushLocked(ac)
		}
		unfinished := ac.calls.Unfinished() > 0
		ac.mu.Unlock()
		switch {
		case !unfinished || !c.awaitsInstance(ac):
			ac.waiting = time.Time{}
		case ac.waiting.IsZero():
			ac.waiting = now
		case now.Sub(ac.waiting) >= collectWaitAfter:
			collect = true
		}
	}
	if collect {
		c.collect.request(now)
	}
}

// queueActor puts ac on this turn's flush list.
func (s *shard) queueActor(ac *actorCaller) {
	s.actors = append(s.actors, ac)
	s.endOfTurn()
}

// actorRetry is how long a caller whose actor cannot be reached yet waits to try again.
const actorRetry = 50 * time.Millisecond

// later flushes ac again after actorRetry.
func (s *shard) later(ac *actorCaller) {
	time.AfterFunc(actorRetry, func() { s.send(flushActor{ac: ac}) })
}

// flushCaller sends ac's outbox, in one batch, once its actor can be reached: its record
// exists and the instance of its newest incarnation is known. Finding the instance may
// wait, so a goroutine does and answers with actorResolved.
func (s *shard) flushCaller(ac *actorCaller) {
	c := s.c
	ac.mu.Lock()
	ac.queued = false
	n := ac.calls.Queued()
	pid := ac.pid
	created := ac.state.created
	ac.mu.Unlock()
	if n == 0 {
		return
	}
	if created != nil {
		select {
		case <-created:
		default:
			s.later(ac)
			return
		}
		if dead := ac.state.failed.Load(); dead != nil {
			c.actorDied(ac, errors.New(dead.Message)) // its creation failed
			return
		}
	}
	if pid == nil {
		if !ac.resolving {
			ac.resolving = true
			go func() { s.send(actorResolved{ac: ac, pid: c.resolveActor(ac)}) }()
		}
		return
	}
	ac.mu.Lock()
	inc := ac.calls.Incarnation()
	acked, first := ac.calls.Low()-1, ac.calls.Low()
	out := ac.calls.Take(s.outbox[:0])
	// flushing: what was taken is on its way; a call sent straight (sendDirect) must not
	// overtake it.
	ac.flushing = len(out) > 0
	ac.mu.Unlock()
	defer func() {
		clear(out) // hold no calls until the next flush
		if cap(out) <= maxOutbox {
			s.outbox = out[:0]
		}
	}()
	if len(out) == 0 {
		return
	}
	defer func() {
		ac.mu.Lock()
		ac.flushing = false
		ac.mu.Unlock()
	}()
	// Fresh messages every time: one sent before may still be read by its receiver
	// (local sends pass the pointer). A batch's are one allocation.
	var msgs []pb.ActorCall
	msg := func(o caller.Out[*pending]) *pb.ActorCall {
		var m *pb.ActorCall
		if len(msgs) > 0 {
			m, msgs = &msgs[0], msgs[1:]
		} else {
			m = &pb.ActorCall{}
		}
		m.ActorId, m.CallerId, m.Seq = ac.id[:], s.callerID(), o.Seq
		m.Acked, m.First, m.Incarnation, m.Caller = acked, first, inc, s.pidW
		switch o.Kind {
		case caller.Call, caller.Resend:
			p := o.Call
			m.Spec = p.spec
			// Calls sent straight to the outbox are registered here, before they leave.
			if !p.finished && s.tasks[p.tid] == nil {
				s.tasks[p.tid] = p
			}
			if s.ev.on && (p.ev.dispatch == 0 || p.ev.inc != incOf(inc)) {
				// Sent to the actor, or resent to a newer incarnation after a restart, which
				// runs it (or replays it from its log): its times and place are there
				// (events.go). A resend to the same incarnation changes nothing.
				p.ev.dispatch, p.ev.inc = s.evNow(), incOf(inc)
			}
		case caller.Skip:
			m.Skip = true
		case caller.Checkpoint:
			m.Checkpoint = true
		case caller.Cancel:
			m.Cancel, m.Spec = true, cancelSpec(o.Call.spec)
		}
		return m
	}
	if len(out) == 1 {
		c.root.Send(pid, msg(out[0]))
		return
	}
	calls := make([]*pb.ActorCall, len(out))
	msgs = make([]pb.ActorCall, len(out))
	bytes := 0
	for i, o := range out {
		calls[i] = msg(o)
		bytes += pb.SpecBytes(calls[i].Spec)
	}
	if bytes <= pb.BatchBytes {
		c.root.Send(pid, &pb.ActorCallBatch{Calls: calls})
		return
	}
	// Calls with large inline arguments: several batches, each message bounded
	// (pb.BatchBytes), in order (the actor orders calls by sequence number anyway).
	pb.Split(calls, func(m *pb.ActorCall) int { return pb.SpecBytes(m.Spec) }, pb.BatchBytes, func(run []*pb.ActorCall) {
		c.root.Send(pid, &pb.ActorCallBatch{Calls: run})
	})
}

// maxOutbox is the largest flush buffer a shard keeps for the next flush.
const maxOutbox = 1024

// resolveActor finds the instance of ac's newest incarnation (nil: not yet, or dead).
func (c *Core) resolveActor(ac *actorCaller) *actor.PID {
	info, ok := c.cfg.Actors.Info(ac.hex)
	if ok && lifecycle.Phase(info.Phase) == lifecycle.Dead {
		c.ActorChanged(info)
		return nil
	}
	ac.mu.Lock()
	inc := ac.calls.Incarnation()
	if ok {
		ac.noteNode(info)
	}
	ac.mu.Unlock()
	// Only an instance of the newest incarnation known here will take the calls.
	if !ok || info.Node == "" || info.Incarnation < inc {
		return nil
	}
	return c.cfg.Actors.PID(ac.hex)
}

// actorResolved: the goroutine of flushCaller found ac's instance, or not.
func (s *shard) actorResolved(ac *actorCaller, pid *actor.PID) {
	ac.resolving = false
	if pid == nil {
		ac.mu.Lock()
		dead := ac.calls.Err() != nil
		ac.mu.Unlock()
		if !dead {
			s.later(ac)
		}
		return
	}
	ac.mu.Lock()
	if ac.pid == nil {
		ac.pid = pid
	}
	ac.mu.Unlock()
	s.flushCaller(ac)
}

// ActorChanged is told of every actor record change (the node's Manager): it fails the
// calls of a dead actor, and resends the unanswered calls to a new incarnation.
func (c *Core) ActorChanged(info *pb.ActorInfo) {
	id, err := ids.ActorIDFromBytes(info.ActorId)
	if err != nil {
		return
	}
	for _, ac := range c.callersOf(id) {
		c.actorChanged(ac, info)
	}
	if info.PlacementGroup != "" {
		c.groupActorChanged(info) // it may have to follow its bundle, or end with its group (pg.go)
	}
}

// actorChanged is ActorChanged for one caller.
func (c *Core) actorChanged(ac *actorCaller, info *pb.ActorInfo) {
	if lifecycle.Phase(info.Phase) == lifecycle.Dead {
		c.actorDied(ac, diedErr(info))
		return
	}
	ac.mu.Lock()
	ac.noteNode(info)
	u := ac.calls.Changed(recordOf(info))
	if u.NewIncarnation {
		ac.pid = nil // the flusher finds the new instance once it is placed
	}
	if u.Flush {
		c.queueFlushLocked(ac)
	}
	ac.mu.Unlock()
	for _, p := range u.Lost {
		c.completeAsync(p, &pb.TaskResult{TaskId: p.spec.TaskId, Error: &pb.ErrorInfo{
			Kind: pb.ErrorInfo_ACTOR_DIED, Function: p.spec.Function, TaskId: p.spec.TaskId,
			Message: fmt.Sprintf("actor %s restarted while the call was in flight; an at-most-once actor resends it only while it has retries left (MaxTaskRetries; -1 for no limit)", ac.hex)}})
	}
}

// actorDied fails every unfinished call of ac: its actor died of err (or, for this
// caller, the first reason it learnt of).
func (c *Core) actorDied(ac *actorCaller, err error) {
	c.failCaller(ac, err, pb.ErrorInfo_ACTOR_DIED)
}

// failCaller fails every unfinished call of ac with err (or, for this caller, the first
// reason it learnt of), as errors of kind: the actor's death (actorDied), or a system
// error (Lose: the runtime lost its cluster, the actor may live on), and forgets ac.
func (c *Core) failCaller(ac *actorCaller, err error, kind pb.ErrorInfo_Kind) {
	ac.mu.Lock()
	fail := ac.calls.Die(err)
	msg := ac.calls.Err().Error()
	release := ac.idleLocked()
	ac.mu.Unlock()
	if release {
		c.releaseHandle(ac.id)
	}
	var causes []pb.ErrorInfo_Kind
	if kind == pb.ErrorInfo_ACTOR_DIED {
		causes = diedCauses(msg) // its placement group was removed
	}
	for _, p := range fail {
		c.completeAsync(p, &pb.TaskResult{TaskId: p.spec.TaskId, Error: &pb.ErrorInfo{
			Kind: kind, Function: p.spec.Function, TaskId: p.spec.TaskId, Message: msg, Causes: causes}})
	}
	c.forgetCaller(ac)
}

// CheckpointActor asks an actor to take a checkpoint after the calls tc's caller of it made.
func (c *Core) CheckpointActor(tc *TaskContext, id ids.ActorID) error {
	if c.cfg.Actors == nil {
		return ErrNoActors
	}
	ac := c.caller(c.shardFor(tc), id)
	ac.mu.Lock()
	defer ac.mu.Unlock()
	// Sent after every call already queued, through the same outbox path.
	if err := ac.calls.Checkpoint(); err != nil {
		return fmt.Errorf("%w: %s", lifecycle.ErrActorDied, err.Error())
	}
	c.queueFlushLocked(ac)
	return nil
}

// onBounce: an old instance refused calls of s's caller meant for a newer incarnation.
// Resend them (and skips for the ones finished meanwhile) once the new instance can be
// reached.
func (s *shard) onBounce(m *pb.ActorCallBounce) {
	c := s.c
	id, err := ids.ActorIDFromBytes(m.ActorId)
	if err != nil {
		return
	}
	v, ok := c.callers.Load(callerKey{s.i, id})
	if !ok {
		return
	}
	ac := v.(*actorCaller)
	ac.mu.Lock()
	defer ac.mu.Unlock()
	if ac.calls.Bounce(m.Seqs) {
		ac.pid = nil
		c.queueFlushLocked(ac)
	}
}

// ErrActorCallSent is returned by Cancel for an actor call its actor already has, and
// which cannot be taken back: the actor is exactly-once (its calls are in its method
// log before they run, and a restart replays the log). A call sent to an at-most-once
// actor is taken back while it waits there (cancelActorCall).
var ErrActorCallSent = errors.New("ray: the actor call was already sent to its actor; it cannot be cancelled")

// completeAsync finishes actor call p with r on its shard (from any goroutine), whether
// or not it was registered there yet.
func (c *Core) completeAsync(p *pending, r *pb.TaskResult) {
	p.sh.send(completeTask{p: p, r: r})
}

// cancelActorCall cancels actor call p. One not sent yet (waiting for its arguments) is
// completed as cancelled here. One sent (or about to be) to an at-most-once actor is
// taken back there: the caller sends a cancel through its outbox (caller.Caller.Cancel;
// before the call if that has not left yet, and again before the call whenever it
// resends it, after a restart, a bounce or a long silence), and the instance, if it has
// not started the call, answers it at once with a CANCELLED result and never runs it
// (actors, grain.cancelQueued); otherwise the call runs and answers, as Ray's cancel of
// a running actor task does. Cancel does not wait for that. One sent to an exactly-once
// actor is refused (ErrActorCallSent): it is in the actor's method log before it runs,
// and a restart replays the log, so a call taken back would run then.
func (s *shard) cancelActorCall(p *pending) error {
	ac := p.actor
	ac.mu.Lock()
	sent := ac.calls.Sent(p.seq)
	if !sent && !p.dispatched {
		ac.mu.Unlock()
		s.complete(p, &pb.TaskResult{TaskId: p.tid[:], Error: &pb.ErrorInfo{
			Kind: pb.ErrorInfo_CANCELLED, Function: p.spec.Function, TaskId: p.tid[:], Message: "actor call was cancelled before it was sent"}})
		return nil
	}
	if !ac.calls.AtMostOnce() {
		ac.mu.Unlock()
		return fmt.Errorf("%w: actor %s is exactly-once: its calls are written to its method log before they run, and a restart replays that log, so a call cannot be taken back once sent (create the actor with ray.AtMostOnce() to be able to cancel the calls waiting at it)", ErrActorCallSent, ac.hex)
	}
	// Not sent yet (dispatched: it is on its way to the outbox): Send queues the cancel
	// before it.
	if ac.calls.Cancel(p.seq) {
		s.c.queueFlushLocked(ac)
	}
	ac.mu.Unlock()
	return nil
}

// cancelSpec is what the cancel of actor call spec carries: what the instance needs to
// answer the call CANCELLED (its ID, method, attempt and where its result goes), not its
// arguments.
func cancelSpec(spec *pb.TaskSpec) *pb.TaskSpec {
	return &pb.TaskSpec{TaskId: spec.TaskId, JobId: spec.JobId, Function: spec.Function, Attempt: spec.Attempt,
		Owner: spec.Owner, ReplyTo: spec.ReplyTo, NumReturns: spec.NumReturns}
}

// LocalResults is actors.Env.Local: for owner, one of this runtime's shards, and an actor
// its caller calls, the function that completes that caller's calls with their results
// on the actor's executor goroutine (takeLocal), without a message to the shard's
// mailbox; nil for any other owner (its results come as messages).
func (c *Core) LocalResults(owner *pb.PID, actor ids.ActorID) func(seqs []uint64, rs []*pb.TaskResult) {
	if owner == nil {
		return nil
	}
	for _, sh := range c.shards {
		if sh.pidW.Id != owner.Id || sh.pidW.Address != owner.Address {
			continue
		}
		v, ok := c.callers.Load(callerKey{sh.i, actor})
		if !ok {
			return nil
		}
		ac := v.(*actorCaller)
		return func(seqs []uint64, rs []*pb.TaskResult) { sh.takeLocal(ac, seqs, rs) }
	}
	return nil
}

// takeLocal completes calls seqs of s's caller ac with their results rs (rs[i] call
// seqs[i]'s), from the goroutine of the actor's executor (this process), without a message
// to s's mailbox. A call is finished for its caller under ac.mu, where the Caller keeps it
// unfinished: whoever finishes it there (this, or the shard's complete: a death, a
// cancellation, the same result come again as a message) completes it, once. Then its
// return object is set (the submitter's Get wakes) and its arguments released, as
// complete does. What is the loop's (forgetting it in tasks, its task record) waits in the
// done list (addDone), put there before the result is visible: a state query made after
// the Get finds it ended, since the loop takes the done list before each message. A result
// this does not take (the call is not unfinished here, or is one complete must handle:
// more than one return, nested refs, a retry) goes to the shard as a message, as before.
// The calls of a batch (an executor's flush) are finished takeChunk at a time under one
// hold of ac.mu, and share one clock read for their end.
func (s *shard) takeLocal(ac *actorCaller, seqs []uint64, rs []*pb.TaskResult) {
	if s.closed() {
		return // as receive drops a message once the runtime closed
	}
	c := s.c
	var end int64
	if s.ev.on {
		end = c.clock.now()
	}
	var taken [takeChunk]doneCall
	for len(rs) > 0 {
		k := min(len(rs), takeChunk)
		n, back := 0, uint32(0) // back: the results sent to the shard (bit i: rs[i])
		ac.mu.Lock()
		for i, r := range rs[:k] {
			p, ok := ac.calls.Call(seqs[i])
			if !ok || !localOK(p, r) {
				back |= 1 << i
				continue
			}
			if ac.calls.Finish(seqs[i]) {
				c.queueFlushLocked(ac)
			}
			taken[n] = doneCall{p: p, r: r, end: end}
			n++
		}
		release := ac.idleLocked()
		ac.mu.Unlock()
		if release {
			c.releaseHandle(ac.id)
		}
		for _, d := range taken[:n] {
			s.addDone(d)
			c.setReturn(d.p, d.r)
		}
		for i := 0; back != 0; i, back = i+1, back>>1 {
			if back&1 != 0 {
				s.send(rs[i])
			}
		}
		rs, seqs = rs[k:], seqs[k:]
	}
}

// takeChunk is how many results takeLocal finishes under one hold of a caller's lock.
const takeChunk = 16 // at most 32 (takeLocal's back)

// localOK reports whether takeLocal may complete p with r: r is p's current attempt's, and
// completing it is complete's simple case (one return, no nested refs, no retry).
func localOK(p *pending, r *pb.TaskResult) bool {
	return string(r.TaskId) == string(p.tid[:]) && r.Attempt == p.spec.Attempt && p.spec.NumReturns == 1 &&
		len(r.Nested) == 0 && (r.Error == nil || !retriable(p.spec, r.Error))
}

// doneCall is an actor call completed off the loop (takeLocal), with its result and when
// it was taken (the clock, if the shard records task events).
type doneCall struct {
	p   *pending
	r   *pb.TaskResult
	end int64
}

// maxDone is how many calls completed off the loop wait in the done list before a message
// wakes the loop for them.
const maxDone = 64

// addDone hands the loop a call completed off it (from any goroutine).
func (s *shard) addDone(d doneCall) {
	if s.done.Add(maxDone, false, d) {
		s.send(doneBatch{})
	}
	if s.quiet.Load() {
		s.quiet.Store(false) // the ticker must reach the shard to take it
	}
}

// takeDone forgets the calls completed off the loop and writes their task records, as
// complete does for the calls it completes.
func (s *shard) takeDone() {
	q := s.done.Take()
	for i := range q {
		d := &q[i]
		p := d.p
		if s.tasks[p.tid] == p {
			delete(s.tasks, p.tid)
			delete(s.parked, p.tid)
		}
		p.finished = true
		if s.ev.on {
			if d.r.RunNanos > 0 {
				p.ev.start = d.end - d.r.RunNanos
			}
			s.evRecordAt(p, d.r, endState(d.r), d.end)
		}
	}
	s.tasks = mapx.Shrink(&s.tasksMax, s.tasks)
	s.done.Release(q, 4*maxDone)
}
