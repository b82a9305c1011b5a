package core

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/ask"
	"github.com/ray-go/ray/internal/base/dispatch"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/lineage"
	"github.com/ray-go/ray/objects"
	"github.com/ray-go/ray/tasks/sched"
)

// ErrShutdown is returned by calls on a runtime that has been shut down.
var ErrShutdown = errors.New("ray: runtime is shut down")

// ErrUnknownObject is returned for an object this process does not know: it was released,
// or it is owned by another process.
var ErrUnknownObject = errors.New("ray: object is unknown to this process")

// ErrObjectTooLarge is returned for an object larger than the whole object store
// (objects.CheckFits).
var ErrObjectTooLarge = objects.ErrObjectTooLarge

// ErrObjectLost is returned when an object's bytes cannot be found where they should be.
var ErrObjectLost = errors.New("ray: object lost")

// Lineage records task specs in the GCS. Record must not block on I/O.
type Lineage interface {
	Record(spec *pb.TaskSpec) error
	Drop(task ids.TaskID)
}

// Config wires a Core to its node.
type Config struct {
	Job ids.JobID
	// Namespace is the job's namespace of named actors (Ray's job namespace): where an
	// actor created without a namespace of its own is named, and where LookupActor
	// looks when given none.
	Namespace string
	Node      ids.NodeID
	System    *actor.ActorSystem
	// Raylet and Store return the local node's scheduler and store shard grains.
	Raylet func() *actor.PID
	Store  func() *actor.PID
	// Feasible reports whether some node can ever satisfy a request (nil error) or why not.
	Feasible func(req sched.Resources) error
	// Dispatcher runs the owner actor's and the shards' mailboxes (nil: protoactor's
	// default); Messages, when set, makes them and counts what they handle.
	Dispatcher actor.Dispatcher
	Messages   *dispatch.Counter
	Lineage    Lineage // nil: lineage recording off (a benchmark-only switch)
	// CallSites records where each object this process creates was created (callsite.go;
	// also on with RAY_record_ref_creation_sites=1). Off by default.
	CallSites   bool
	InlineLimit int
	// StoreBytes is the node's object store budget: a larger object is refused.
	StoreBytes int64
	// DataTLS, when set, is the TLS client configuration for other nodes' object data
	// streams (transfer.FetchOptions.TLS).
	DataTLS *tls.Config
	// Actors wires actor calls (nil: this runtime cannot create or call actors).
	Actors *ActorConfig
	// Cluster places tasks on the nodes of a cluster (nil: everything runs on this node).
	Cluster Cluster
	// Nodes lists the nodes that run this job's tasks (nil: this node only).
	Nodes func() []*pb.NodeInfo
	// DeadNodes lists the nodes that ran this cluster's tasks and died recently, with when
	// and why as far as known (nil: none).
	DeadNodes func() []DeadNode
	// Available returns what each node Nodes lists has not in use (nil: unknown).
	Available func() map[string]sched.Resources
	// OrphanLineage reads a dead owner's lineage from the GCS, to recreate the objects
	// this runtime borrowed from it (nil: such objects are lost with their owner).
	OrphanLineage OrphanLineage
	// RecordGroup (optional) hands a placement group's record to the state API's writer;
	// it must not block (Remove calls it), and the latest record of a group wins.
	RecordGroup func(*pb.PlacementGroupInfo)
	// GroupRecord (optional) reads the record of a placement group another process
	// created (the cluster's records, gcs.PlacementGroupKey), without blocking: the latest
	// known record, or pending while it is being read (the reader calls ClusterChanged
	// when a read brings something new). Nil: only this runtime's own groups are known.
	GroupRecord func(id string) (info *pb.PlacementGroupInfo, pending bool)
	// GroupGoneGrace is how long the record of another process's group may be missing
	// before the work this runtime put in the group ends (watchForeignGroup): its creator
	// may be writing it again after a GCS outage longer than its lease. A record that
	// says REMOVED, or names a creator whose death is confirmed (ProcessGone), ends it at
	// once. Zero: a missing record ends it at once.
	GroupGoneGrace time.Duration
	// TaskEvents is how many task records (one per ended attempt) the runtime keeps for
	// the state API (events.go): 0 means DefaultTaskEvents, a negative number turns
	// recording off.
	TaskEvents int
	// AskOthersToCollect (optional) asks the cluster's other processes for a garbage
	// collection (their CollectForOthers): a handle dropped there may hold what a wait
	// here needs (collect.go). It is called on a goroutine of its own, at most once per
	// collection this process runs for a wait of its own, and should return within a few
	// seconds.
	AskOthersToCollect func()
	Logger             *slog.Logger
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	switch {
	case c.System == nil:
		return errors.New("core: Config.System is required")
	case c.Raylet == nil || c.Store == nil:
		return errors.New("core: Config.Raylet and Config.Store are required")
	case c.Feasible == nil:
		return errors.New("core: Config.Feasible is required")
	}
	return nil
}

// Core is one process's runtime. Its state has owners (DESIGN §8.5):
//   - the objects it owns: futures in the MemoryStore and counts in the RefTable, leaf
//     structures partitioned by object ID, used from any goroutine;
//   - the tasks it submitted and has not finished: its shards (shard.go), each a run loop
//     (an actor) owning the tasks of one partition of task IDs (ids.TaskID.Family, which
//     the children of one task share), their dispatch batches, placement and retries;
//   - the callers of actors (actor.go), one per shard and actor, each behind its own mutex,
//     flushed by its shard;
//   - refs borrowed, lent and pinned (objects.Borrows; the protocol is borrow.go's) and
//     adopted (orphan.go).
//
// User goroutines call Submit, Get, Put, Wait and Release; a submission is handed to its
// shard through the shard's inbox, so the submitter only pays for creating the future and
// counting references. The process's owner actor (owner) is the runtime's identity: the owner that
// refs and the object table name, the address borrowers talk to (actor calls carry their
// shard's caller ID).
type Core struct {
	cfg Config
	// sites: where each live object was created (nil: not recorded, the default;
	// callsite.go)
	sites *callSites
	mem   *objects.MemoryStore
	refs  *objects.RefTable
	// recordDelay is how long a lineage record lives before it is written (lineage.go);
	// recordDelay but for tests
	recordDelay time.Duration
	// creating bounds the actor records being written in the background (CreateActor)
	creating chan struct{}
	root     *actor.RootContext
	owner    *actor.PID
	ownerW   *pb.PID
	shards   []*shard
	mask     uint8
	closed   chan struct{}
	lost     lostState // the cluster is gone for good (lost.go)
	pgs      sync.Map  // placement group ID -> *PlacementGroup (pg.go)
	pgMore   pgShared  // removed groups, tasks in other processes' groups (pg.go)
	once     sync.Once
	wg       sync.WaitGroup // the ticker

	stats    Stats
	collect  collector    // collections for callers whose actors wait (collect.go)
	inflight atomic.Int64 // bytes of objects being pulled from other nodes right now
	// inflightPeak is the most inflight has been since the last TakeInFlightPeak
	inflightPeak atomic.Int64

	borrows *objects.Borrows // refs borrowed, lent and pinned (the protocol: borrow.go)

	orphans orphanState // borrowed objects whose owner died (orphan.go)
	// probeDial, if set, replaces net.DialTimeout for the probe of an owner's address
	// (addressRefuses; tests count the probes with it).
	probeDial func(network, address string, timeout time.Duration) (net.Conn, error)

	// cancelled: the tasks a recursive Cancel cancelled, whose children are refused (shard.go)
	cancelled cancelledParents
	enders    enders    // actors whose handles are all gone, being ended (lifetime.go)
	gone      goneNodes // where the actors of the callers forgotten ran (forgetCaller)

	gens        sync.Map // ids.TaskID -> *Generator: streaming generators running (generator.go)
	callers     sync.Map // callerKey -> *actorCaller
	actorStates sync.Map // ids.ActorID -> *actorState

	// task events (events.go): the wall clock the records use, and how many more records
	// the shards may allocate (nil: recording off)
	clock    clock
	evBudget *atomic.Int64
}

// Stats counts what the runtime did.
type Stats struct {
	Retried       atomic.Int64 // task attempts resubmitted after a failure
	Reconstructed atomic.Int64 // lost objects recreated by running their task again
}

// pending is a task (or actor call) submitted and not finished. Its shard's run loop owns
// its fields but for waiting (counted down by whoever makes an argument ready) and the
// actor-call fields (guarded by actor.mu).
type pending struct {
	tid        ids.TaskID
	spec       *pb.TaskSpec
	argRefs    []ids.ObjectID
	waiting    atomic.Int32
	pinned     bool // refs nested in its argument values are pinned (argsKey)
	dispatched bool
	finished   bool // completed (its shard's loop only)
	hasRes     bool // res is set

	// actor calls
	sh    *shard // the calling shard, which owns the call
	actor *actorCaller
	seq   uint64 // in actor.calls, which keeps the rest of its bookkeeping

	node   ids.NodeID      // where the task was sent (its shape() counted against it by the cluster view unless ev.rides)
	res    sched.Resources // what it asks for (shape())
	lease  string          // the lease it was pushed to ("" while it waits for one)
	worker *actor.PID      // the lease's worker

	// reconstruction (reconstruct.go): the request that made this run, if it reruns a
	// task whose object was lost
	rerun *lineage.RerunRequest

	// specBuf is spec for a task submitted here (newPending): one allocation for both. The
	// spec lives as long as its lineage record, and the pending with it: what else it
	// points to is the task's own (its argument IDs, which the record holds too) or
	// long-lived (its shard, caller, worker PID).
	specBuf pb.TaskSpec
	// ret is the entry of the task's return object in the owner's table
	// (objects.MemoryStore.CreateIn): the object costs no allocation of its own.
	ret objects.Entry
	// ev are the times of its current attempt, for its task record (events.go).
	ev evTimes
}

// newPending returns the pending of a new task or actor call tid, with its spec in the
// same allocation: spec.TaskId is filled in (it points at p.tid); the caller fills in the
// rest.
func newPending(tid ids.TaskID) *pending {
	p := &pending{tid: tid}
	p.spec = &p.specBuf
	p.spec.TaskId = p.tid[:]
	return p
}

// pendingArgs1 and pendingArgs2 are newPendingArgs' allocations.
type (
	pendingArgs1 struct {
		p pending
		a [1]*pb.Arg
		v [1]pb.Arg
	}
	pendingArgs2 struct {
		p pending
		a [2]*pb.Arg
		v [2]pb.Arg
	}
)

// newPendingArgs is newPending and newArgs(n) for a task or actor call of n arguments: for
// one or two (most take few), the pending, its spec and the arguments are one
// allocation of the size the two made (640 bytes of pending, then 768 or 896 in all: no
// size class is crossed). The arguments live as long as the spec, which is in the pending.
func newPendingArgs(tid ids.TaskID, n int) (p *pending, ptrs []*pb.Arg, vals []pb.Arg) {
	switch n {
	case 1:
		a := &pendingArgs1{p: pending{tid: tid}}
		p, ptrs, vals = &a.p, a.a[:], a.v[:]
	case 2:
		a := &pendingArgs2{p: pending{tid: tid}}
		p, ptrs, vals = &a.p, a.a[:], a.v[:]
	default:
		p = newPending(tid)
		ptrs, vals = newArgs(n)
		return p, ptrs, vals
	}
	p.spec = &p.specBuf
	p.spec.TaskId = p.tid[:]
	return p, ptrs, vals
}

// New starts a runtime: it spawns the owner actor and the shards in cfg.System.
func New(cfg Config) (*Core, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.InlineLimit <= 0 {
		cfg.InlineLimit = 100 << 10
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	mem, refs := objects.NewOwned()
	c := &Core{
		sites:       newCallSites(cfg.CallSites),
		recordDelay: recordDelay,
		creating:    make(chan struct{}, maxCreating),
		cfg:         cfg,
		mem:         mem,
		refs:        refs,
		borrows:     objects.NewBorrows(),
		root:        cfg.System.Root,
		closed:      make(chan struct{}),
		lost:        lostState{ch: make(chan struct{})},
		clock:       newClock(),
	}
	c.collect.others = cfg.AskOthersToCollect
	c.enders.ctx, c.enders.cancel = context.WithCancel(context.Background())
	switch {
	case cfg.TaskEvents == 0:
		c.evBudget = new(atomic.Int64)
		c.evBudget.Store(DefaultTaskEvents)
	case cfg.TaskEvents > 0:
		c.evBudget = new(atomic.Int64)
		c.evBudget.Store(int64(cfg.TaskEvents))
	}
	name := "owner-" + string(cfg.Job) + "-" + ids.NewRootTaskID().String()[:8]
	props := func(f actor.ReceiveFunc, role string) *actor.Props {
		p := actor.PropsFromFunc(f)
		if cfg.Dispatcher != nil {
			p = p.Configure(actor.WithDispatcher(cfg.Dispatcher))
		}
		if cfg.Messages != nil {
			p = p.Configure(actor.WithMailbox(cfg.Messages.MailboxFor(role)))
		}
		return p
	}
	pid, err := c.root.SpawnNamed(props(c.receive, "owner"), name)
	if err != nil {
		return nil, fmt.Errorf("core: start owner actor: %w", err)
	}
	c.owner = pid
	c.ownerW = &pb.PID{Address: pid.Address, Id: pid.Id}
	n := shardCount()
	c.shards = make([]*shard, n)
	c.mask = uint8(n - 1)
	for i := range c.shards {
		s := newShard(c, i)
		if s.pid, err = c.root.SpawnNamed(props(s.receive, "shard"), fmt.Sprintf("%s-s%d", name, i)); err != nil {
			c.Close()
			return nil, fmt.Errorf("core: start owner shard %d: %w", i, err)
		}
		s.pidW = &pb.PID{Address: s.pid.Address, Id: s.pid.Id}
		c.shards[i] = s
	}
	c.wg.Add(2)
	go c.ticker()
	go c.idleCollector() // idlegc.go
	return c, nil
}

// shardCount is how many shards a runtime runs: eight per core (a power of two, 8 to 256),
// so that the tasks of many submitters spread over run loops of their own: submitters
// whose families share a shard also share its callers of actors. An idle shard costs a
// mailbox and a tick a second.
func shardCount() int {
	n := 8
	for n < 8*runtime.GOMAXPROCS(0) && n < 256 {
		n *= 2
	}
	return n
}

// shardOf is the shard that owns task t.
func (c *Core) shardOf(t ids.TaskID) *shard { return c.shards[t.Family()&c.mask] }

// Close stops the runtime: pending Gets fail with ErrShutdown.
func (c *Core) Close() {
	c.once.Do(func() {
		c.closePlacementGroups()
		close(c.closed)
		c.closeEnders()
		c.wg.Wait()
		for _, s := range c.shards {
			if s != nil && s.pid != nil {
				c.root.Stop(s.pid)
			}
		}
		c.root.Stop(c.owner)
	})
}

// tickEvery is how often every shard looks for stale actor calls and tasks on nodes that
// left the view.
const tickEvery = time.Second

// ticker ticks the shards each tickEvery.
func (c *Core) ticker() {
	defer c.wg.Done()
	t := time.NewTicker(tickEvery)
	defer t.Stop()
	for {
		select {
		case <-c.closed:
			return
		case <-t.C:
			c.tickShards(c.clock.at(c.clock.now())) // the clock that dates calls sent (clock.at)
		}
	}
}

// tickShards sends a tick to every shard that has something to watch: a shard whose last
// tick found no task, actor caller or missing node, and that has handled no message since
// (shard.quiet), is skipped. Idle, a node's runtime then sends no message a second per
// shard (16 on 2 cores), which the simulated control plane counted per node and per task.
func (c *Core) tickShards(now time.Time) {
	for _, s := range c.shards {
		if !s.quiet.Load() {
			c.root.Send(s.pid, tick{now: now})
		}
	}
}

// OwnerID is the ID of this runtime's owner actor: the owner recorded on what it creates
// and on the actors it creates.
func (c *Core) OwnerID() string { return c.ownerW.Id }

// Stats returns the runtime's counters.
func (c *Core) Stats() *Stats { return &c.stats }

// MessagesHandled is how many messages the actors of this runtime's process handled (0
// when not counted: Config.Messages).
func (c *Core) MessagesHandled() int64 {
	if c.cfg.Messages == nil {
		return 0
	}
	return c.cfg.Messages.Handled()
}

// Refs exposes the reference table (tests and memory reports).
func (c *Core) Refs() *objects.RefTable { return c.refs }

// Objects exposes the memory store (tests and memory reports).
func (c *Core) Objects() *objects.MemoryStore { return c.mem }

// receive is the owner actor: the borrowing protocol, and results sent to the runtime
// rather than to a shard (passed on to their shards).
func (c *Core) receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *pb.TaskResult:
		c.toShard(m)
	case *pb.ResultBatch:
		for _, r := range m.Results {
			c.toShard(r)
		}
	default:
		c.onBorrowMessage(ctx)
	}
}

// toShard passes a result on to the shard of its task.
func (c *Core) toShard(r *pb.TaskResult) {
	if tid, err := ids.TaskIDFromBytes(r.TaskId); err == nil {
		c.root.Send(c.shardOf(tid).pid, r)
	}
}

// AddRef counts a new local reference (an ObjectRef handle) to id.
func (c *Core) AddRef(id ids.ObjectID) { c.refs.AddLocal(id) }

// ReleaseRef drops a local reference and frees what that releases. explicit is true for a
// user's Release, false for a garbage-collection cleanup (which never forces a collection:
// one just ran).
func (c *Core) ReleaseRef(id ids.ObjectID, explicit bool) {
	if c.unborrow(id) {
		return
	}
	c.freeAs(c.refs.RemoveLocal(id), explicit)
}

// ReleaseOwned is ReleaseRef for a reference the caller knows this process owns (it
// submitted the task or made the Put): no borrow-table lookup. e is the object's entry as
// Submit returned it (nil: unknown), through which the release finds the object without
// a lookup.
func (c *Core) ReleaseOwned(id ids.ObjectID, e *objects.Entry, explicit bool) {
	r, v, ready, removed := c.refs.RemoveLocalFreeIn(id, e)
	c.freeIn(r, explicit, removedValue{id: id, v: v, ready: ready, ok: removed})
}

// removedValue is an object whose value the release that freed it removed from the memory
// store already (objects.RefTable.RemoveLocalFreeIn): freeIn does the rest for it.
type removedValue struct {
	id    ids.ObjectID
	v     objects.Value
	ready bool
	ok    bool
}

// holdArgs counts the references a submitted task holds on its ref arguments (a borrow
// for borrowed objects); it returns the owned ones, which the task's lineage depends on.
func (c *Core) holdArgs(refs []ids.ObjectID) (owned []ids.ObjectID) {
	for _, r := range refs {
		if !c.borrows.More(r) {
			c.refs.AddLocal(r)
			owned = append(owned, r)
		}
	}
	return owned
}

// unborrowArgs gives back the borrows among what holdArgs took and returns the owned rest.
func (c *Core) unborrowArgs(refs []ids.ObjectID) []ids.ObjectID {
	var owned []ids.ObjectID
	for _, r := range refs {
		if !c.unborrow(r) {
			owned = append(owned, r)
		}
	}
	return owned
}

// collectAfter is how many bytes of store objects one free must release to wait for the
// shard and then run a garbage collection. Go's GC paces itself by allocation and does not
// know that hundreds of MiB just became garbage; until it runs, the next large object gets
// fresh pages from the OS, and first-touch page faults cost 2-20 µs per 4 KiB on the VMs we
// measured (0.3-2 GB/s for an 800 MiB Put, against 6-7 GB/s into collected, reused memory).
// Object bytes hold no pointers, so the collection costs what scanning the rest of the
// heap costs.
//
// The bytes of one free count, not a running total of many: a stream of smaller objects
// (Ray Data's blocks of a few to tens of MiB) is what the collector's own pacing handles,
// and forcing a collection every 64 MiB of them cost a streaming pipeline 5-10% of its
// throughput (`go run ./benchmarks/data -parts a`) for no gain in the large-Put benchmarks,
// whose objects are each over the threshold.
const collectAfter = 64 << 20

func (c *Core) free(r objects.Released) { c.freeAs(r, false) }

// freeAs frees what r says; collect allows waiting for the shard and collecting garbage
// after a large free (see collectAfter).
func (c *Core) freeAs(r objects.Released, collect bool) { c.freeIn(r, collect, removedValue{}) }

// freeIn is freeAs with one of r's values, done, removed from the store already.
func (c *Core) freeIn(r objects.Released, collect bool, done removedValue) {
	if r.Empty() {
		return
	}
	var inStore map[ids.NodeID][][]byte
	var bytes int64
	for _, id := range r.Values() {
		var v objects.Value
		var ready bool
		if done.ok && id == done.id {
			v, ready = done.v, done.ready
		} else {
			var kept bool
			// Not an object held again since its free was decided (a lineage rerun's
			// argument: restart): it keeps its value, and the refs nested in it.
			if v, ready, kept = c.mem.RemoveFreedIn(id, nil); kept {
				continue
			}
		}
		if c.sites != nil {
			c.sites.forget(id)
		}
		c.unpin(id) // refs nested in the freed object
		if a, ok := id.HandleOf(); ok {
			c.outOfScope(a) // every handle to the actor is gone (lifetime.go)
			continue
		}
		if ready && v.InStore {
			b := id
			node := v.Node
			if node == "" {
				node = c.cfg.Node
			}
			if inStore == nil {
				inStore = map[ids.NodeID][][]byte{}
			}
			inStore[node] = append(inStore[node], b[:])
			bytes += v.Size
		}
	}
	for node, list := range inStore {
		s := c.storeOf(node)
		if s == nil {
			continue // the node is gone, and its objects with it
		}
		if node == c.cfg.Node && bytes >= collectAfter && collect {
			// Bounded wait: a shard that does not answer only costs the collection's benefit.
			pb.SplitCount(list, pb.MaxIDsPerMessage, func(run [][]byte) {
				_, _ = ask.Request(c.root, s, &pb.FreeObjects{ObjectIds: run}, 5*time.Second)
			})
			runtime.GC()
		} else {
			pb.SplitCount(list, pb.MaxIDsPerMessage, func(run [][]byte) { c.root.Send(s, &pb.FreeObjects{ObjectIds: run}) })
		}
	}
	if c.cfg.Lineage != nil {
		for _, t := range r.Recorded() {
			c.cfg.Lineage.Drop(t)
		}
	}
}

// StoreStats asks this node's store shard for its usage and its top largest objects.
func (c *Core) StoreStats(ctx context.Context, top int) (*pb.StoreStatsReply, error) {
	return c.StoreStatsOf(ctx, c.cfg.Node, top)
}

// StoreStatsOf asks the store shard of node for its usage and its top largest objects.
func (c *Core) StoreStatsOf(ctx context.Context, node ids.NodeID, top int) (*pb.StoreStatsReply, error) {
	s := c.storeOf(node)
	if s == nil {
		return nil, fmt.Errorf("ray: no object store shard on node %s", node)
	}
	timeout := 10 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	res, err := ask.Request(c.root, s, &pb.StoreStats{Top: int32(top)}, timeout)
	if err != nil {
		return nil, fmt.Errorf("ray: object store of node %s: %w", node, err)
	}
	r, ok := res.(*pb.StoreStatsReply)
	if !ok {
		return nil, fmt.Errorf("ray: object store of node %s answered %T", node, res)
	}
	return r, nil
}

// InFlightBytes is the size of the objects this runtime is pulling from other nodes now.
func (c *Core) InFlightBytes() int64 { return c.inflight.Load() }

// TakeInFlightPeak returns the most bytes that were in flight at once since the last call
// (or the runtime's start), and starts the next peak from what is in flight now: a pull
// of a few MiB between two nodes of one machine lasts milliseconds, too short for a
// reader of InFlightBytes to be sure to see.
func (c *Core) TakeInFlightPeak() int64 { return c.inflightPeak.Swap(c.inflight.Load()) }

// addInFlight accounts n more bytes in flight (negative: arrived), and the peak.
func (c *Core) addInFlight(n int64) {
	v := c.inflight.Add(n)
	for p := c.inflightPeak.Load(); v > p && !c.inflightPeak.CompareAndSwap(p, v); p = c.inflightPeak.Load() {
	}
}

// NodeInfos lists the nodes that run this job's tasks (nil when the node did not say).
func (c *Core) NodeInfos() []*pb.NodeInfo {
	if c.cfg.Nodes == nil {
		return nil
	}
	return c.cfg.Nodes()
}

// DeadNode is a node that died: its last record, when it died (zero: not known) and why
// ("" not known).
type DeadNode struct {
	Info *pb.NodeInfo
	At   time.Time
	Why  string
}

// DeadNodeInfos lists the nodes that ran tasks and died recently (Config.DeadNodes).
func (c *Core) DeadNodeInfos() []DeadNode {
	if c.cfg.DeadNodes == nil {
		return nil
	}
	return c.cfg.DeadNodes()
}

// AvailableResources returns what each node of the job has not in use (nil when the node
// did not say): the local scheduler's count in local mode, the nodes' last load reports
// in a cluster (a change placement depends on within ~100 ms, a smaller one within a
// second: internal/assembly/node's load reporter).
func (c *Core) AvailableResources() map[string]sched.Resources {
	if c.cfg.Available == nil {
		return nil
	}
	return c.cfg.Available()
}

// Job is this runtime's job ID.
func (c *Core) Job() ids.JobID { return c.cfg.Job }

// Namespace is this runtime's job's namespace of named actors (Config.Namespace).
func (c *Core) Namespace() string { return c.cfg.Namespace }

// Node is this runtime's node ID; StoreBudget its object store budget.
func (c *Core) Node() ids.NodeID { return c.cfg.Node }

// StoreBudget is the node's object store budget in bytes.
func (c *Core) StoreBudget() int64 { return c.cfg.StoreBytes }

// isClosed reports whether Close has run (the runtime is shut down).
func (c *Core) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}
