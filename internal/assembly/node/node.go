package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/actors"
	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/assembly/clusterview"
	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/assembly/membership"
	"github.com/ray-go/ray/internal/base/ask"
	"github.com/ray-go/ray/internal/base/dispatch"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/etcdstore"
	"github.com/ray-go/ray/internal/base/identity"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/netx"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/lineage"
	"github.com/ray-go/ray/objects/shard"
	"github.com/ray-go/ray/objects/transfer"
	"github.com/ray-go/ray/tasks"
	"github.com/ray-go/ray/tasks/machine"
	"github.com/ray-go/ray/tasks/raylet"
	"github.com/ray-go/ray/tasks/sched"
	"github.com/ray-go/ray/tasks/worker"
)

// Kind names of the node's grains.
const (
	KindRaylet = "raylet"
	KindWorker = "worker"
	KindStore  = "store"
	KindActor  = "actor"
)

// maxMessageBytes raises gRPC's 4 MiB receive limit (DESIGN §2 sharp edges) to what the
// runtime sends, and no further: a peer's message is buffered whole before it is decoded,
// so this bounds what one stream can make a process allocate. protoactor's endpoint writer
// sends up to endpointBatch messages as one gRPC message, and a message over the limit is
// dropped with the whole batch, silently; so every message the runtime makes is bounded
// where it is made (internal/base/pb bounds.go): object bytes cross in chunks of at most
// 1 MiB (objects/transfer), specs, calls and results in messages of about pb.BatchBytes
// (1 MiB) or one item of at most ~1 MiB, ID lists in messages of pb.MaxIDsPerMessage.
// endpointBatch of those is ~40 MiB at worst: 64 MiB leaves room. (With a batch of 100
// and a 64 MiB limit, 32 concurrent pulls of 8 chunks each lost 31 of 32 pulls: measured
// before the batch was made 32.)
const maxMessageBytes = 64 << 20

// endpointBatch is the endpoint writer's batch size (see maxMessageBytes).
const endpointBatch = 32

// endpointQueue is the endpoint writer's initial queue size per peer (it grows as needed).
const endpointQueue = 1024

// dispatchGoroutines is the size of the goroutine pool that runs the node's mailboxes
// (package dispatch): enough for every grain of a node to run at once, and four per core
// (the runtime's shards, eight per core, are mailboxes too).
func dispatchGoroutines() int { return max(16, 4*runtime.GOMAXPROCS(0)) }

// lineageSealDelay is how long a partly filled lineage page waits for more records before
// it is written. The owner's shards hand the packer only the records that outlived their
// own delay (internal/assembly/core lineage.go): short-lived tasks never reach it, so what arrives
// mostly lives, and the page need not wait long for deletes. Lineage in etcd is what
// outlives the owner; in the owner itself the spec is kept from submission on.
const lineageSealDelay = 10 * time.Millisecond

// packerShards is how many lineage Packers a node runs: one per core (a power of two), so
// that tasks submitted on different cores rarely append to the same one.
func packerShards() int {
	n := 1
	for n < runtime.GOMAXPROCS(0) && n < 64 {
		n *= 2
	}
	return n
}

// DefaultNodeLeaseTTL is the node's registration lease. etcd's client renews every TTL/3
// from a 500 ms loop, so leases of 1-2 s are lost under heavy load; a killed node is
// detected much sooner through protoactor's remote Watch (internal/assembly/membership): the
// lease is what catches a node that hangs or is cut off. Config.LeaseTTL overrides it (the
// root package sets it from RAY_NODE_LEASE_TTL, LeaseTTLEnv).
const DefaultNodeLeaseTTL = 6 * time.Second

// LeaseTTLEnv is the environment variable the root package reads Config.LeaseTTL from (a
// Go duration, at least MinNodeLeaseTTL; set it for `rayctl start`: the worker processes
// inherit the agent's environment).
const LeaseTTLEnv = "RAY_NODE_LEASE_TTL"

// MinNodeLeaseTTL is the shortest lease TTL a node takes (see DefaultNodeLeaseTTL).
const MinNodeLeaseTTL = 2 * time.Second

// ParseLeaseTTL parses a LeaseTTLEnv value: "" is the default; anything that is not a
// duration of at least MinNodeLeaseTTL is an error (and the default).
func ParseLeaseTTL(s string) (time.Duration, error) {
	if s == "" {
		return DefaultNodeLeaseTTL, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < MinNodeLeaseTTL {
		return DefaultNodeLeaseTTL, fmt.Errorf("ray: ignoring %s=%q (want a duration of at least %v); using %v", LeaseTTLEnv, s, MinNodeLeaseTTL, DefaultNodeLeaseTTL)
	}
	return d, nil
}

// Config configures a node. Zero values take the defaults documented per field.
type Config struct {
	Job ids.JobID // default: a new random job ID
	// ActorNamespace is the job's namespace of named actors (core.Config.Namespace); a
	// driver records it in its job, whose worker processes get it from their agent.
	ActorNamespace string
	Resources      sched.Resources // total resources; default: the machine's CPUs
	// ObjectStoreBytes is the store budget (default DefaultObjectStoreBytes). An object
	// larger than the whole budget is refused; beyond it the store shard spills to Dir/spill,
	// or under SpillDir.
	ObjectStoreBytes int64
	// SpillDir, when set, is the directory the node's store spills to instead of
	// Dir/spill: the node makes a directory of its own there, ray-go-spill-<node ID>
	// (its files in its spill/ subdirectory), locked while the node lives and removed by
	// Stop; it removes those of this machine's processes that are gone, and touches
	// nothing else there (shard.OpenSpillDir). A relative path is taken from the current
	// directory; a missing directory is created.
	SpillDir string
	// Dir holds the node's files. Default: a new temporary directory removed by Stop.
	Dir string
	// Lineage turns lineage recording on.
	Lineage bool
	// Workers is the number of worker grains (default: max(2, CPUs)).
	Workers int
	// GCS, when set, is the cluster's GCS this node joins (the caller owns it and closes
	// it after Stop); nil starts an embedded single-member etcd in Dir.
	GCS gcs.Store
	// SyncAddrs are gRPC servers already running in this process (another node's remote,
	// an etcd the caller started) that the node syncs with before its remote starts (see
	// syncGRPCServer): for several nodes in one process under the race detector. An
	// "https://" address is reached over TLS with Credentials (as a peer).
	SyncAddrs []string
	// RemoteStarted, when set, is called with the node's address once its remote (gRPC
	// server) listens; Gate, when set, holds the node's registration in the cluster until
	// it is closed. Together they let a test start several nodes in one process so that no
	// member dials another before the last remote has started (see syncGRPCServer).
	RemoteStarted func(addr string)
	Gate          <-chan struct{}
	// Role is RoleLocal (default), RoleDriver or RoleWorker (see the constants); AgentID
	// names the node agent that started a worker.
	Role    string
	AgentID string
	// Host is the address the node listens on and advertises (default 127.0.0.1; Join
	// uses the local address that reaches the GCS, so that other machines reach it too).
	Host string
	// Credentials are this process's certificate of the cluster's CA: the node's gRPC
	// remote and object data stream speak mutual TLS with them, and accept only peers of
	// the same CA (identity.PeerServerTLS). Nil: plain text (a cluster started with
	// --insecure, a test cluster), except in local mode, which makes its own in memory.
	Credentials *identity.Credentials
	// LeaseTTL is the node's registration lease (default DefaultNodeLeaseTTL; at least
	// MinNodeLeaseTTL).
	LeaseTTL time.Duration
	// GCSTimeout is how long a driver's node waits for the cluster's GCS to answer again
	// once its registration lease lapsed (which takes LeaseTTL of silence) before it takes
	// the cluster for lost and fails its runtime (core.Core.Lose: every pending and later
	// call fails with core.ErrClusterLost). Default DefaultGCSTimeout; negative: never
	// (the driver waits as long as the outage lasts). Drivers only: a worker process ends
	// after its own bound (ServeWorker), a node agent waits.
	GCSTimeout time.Duration
	// GCSAddress names the GCS in the error of a lost cluster (Join sets it).
	GCSAddress string
	// TaskEvents is how many task records the runtime keeps (core.Config.TaskEvents: 0 the
	// default, negative off).
	TaskEvents int
	// CallSites records where each object was created (core.Config.CallSites).
	CallSites bool
	// Machine is the Unix socket of the machine's resource ledger (package tasks/machine)
	// that the node agent which started this worker process serves: the node's raylet
	// obtains its resources there, shared with the other jobs on the machine, instead of
	// counting Resources as its own. Empty: the node's resources are its own.
	Machine string
	// SoftMemoryLimit sets the process's soft memory limit (debug.SetMemoryLimit) to the
	// store budgets of its nodes plus SoftLimitMargin while this node runs, unless the
	// program runs with a limit already (GOMEMLIMIT, or debug.SetMemoryLimit before): the
	// store's objects live in the Go heap, so the collector's default pacing (GOGC 100)
	// alone would let garbage grow as large as the store and the live data together. The
	// root package sets it when GOMEMLIMIT is unset; the last node to stop puts the
	// previous limit back.
	SoftMemoryLimit bool
	// GCHeapFloor is the heap-goal floor in bytes (0: off): while this node runs, the
	// collector does not start a cycle before the heap reaches max(live × (1+GOGC/100),
	// GCHeapFloor), capped at half the soft memory limit (gcfloor.go). It tunes GOGC
	// (debug.SetGCPercent) after every cycle, so it does nothing when the program runs with
	// a GOGC of its own (anything but 100 when the first node starts; the root package
	// passes 0 when the GOGC variable is set), and stops tuning when the program calls
	// debug.SetGCPercent later. The last node to stop gives the program's GOGC back.
	GCHeapFloor int64
	// MessageTap, when set, is called with every message the node's counted actors
	// handle (dispatch.Counter.Tap) and their role: "raylet", "worker", "store", "actor",
	// "owner" or "shard" (the runtime's). For benchmarks/scale's counts by type; it runs on
	// the actors' goroutines, so it must be quick and safe for concurrent use.
	MessageTap func(role string, msg any)
	Logger     *slog.Logger
}

// maxSocketPath: a Unix socket's path must fit sockaddr_un (108 bytes on Linux with its
// terminating zero, 104 elsewhere).
const maxSocketPath = 100

// gatedProvider holds the member's registration until the gate opens.
type gatedProvider struct {
	*membership.Provider
	gate <-chan struct{}
}

func (g gatedProvider) StartMember(c *cluster.Cluster) error {
	<-g.gate
	return g.Provider.StartMember(c)
}

// returnedProvider reports when the provider's StartMember returned (its error, nil when
// it worked). cluster.StartMember calls it last, then sleeps a fixed second (protoactor-go
// cluster.go) before it returns; the member is whole once the provider has registered it
// and published the first topology (membership.Provider.StartMember waits for that), so
// the node goes on from there and leaves that second to a goroutine: every Init, agent and
// driver start was a second longer for nothing.
type returnedProvider struct {
	cluster.ClusterProvider
	returned chan<- error
}

func (r returnedProvider) StartMember(c *cluster.Cluster) error {
	err := r.ClusterProvider.StartMember(c)
	r.returned <- err
	return err
}

// signalLookup reports that cluster.StartMember reached the lookup's Setup, which it
// calls after the remote started.
type signalLookup struct {
	*membership.Lookup
	started func()
}

func (s signalLookup) Setup(c *cluster.Cluster, kinds []string, isClient bool) {
	s.started()
	s.Lookup.Setup(c, kinds, isClient)
}

// Node is a running node with its process runtime.
type Node struct {
	ID   ids.NodeID
	Core *core.Core

	cfg        Config
	quietPeers func() // from now on a peer's departure is logged at DEBUG (Stop)
	// setConcern sets which peers' departures peerLog may log at WARN (peerConcern).
	setConcern func(func(addr string) bool)
	exitedMu   sync.Mutex
	exited     map[string]time.Time // node IDs whose process the membership saw exit (gone.go)
	machine    *machine.Client
	dir        string
	ownDir     bool
	dirLock    *os.File        // local mode's session directory's lock, held while this node lives (tempdir.go)
	spillDir   string          // the store's spill directory
	spillOwn   *shard.SpillDir // with Config.SpillDir: the node's own directory there, removed by Stop
	etcd       *etcdstore.Embedded
	store      gcs.Store
	pgRecords  pgRecords // placement groups' records (pgrecords.go)
	pgCache    pgCache   // other processes' groups' records (pgrecords.go)
	writer     *gcs.Writer
	packer     *gcs.ShardedPacker
	system     *actor.ActorSystem
	cluster    *cluster.Cluster
	memberDone chan struct{} // closed when cluster.StartMember returned (a second after the node goes on: returnedProvider)
	wentOn     bool          // the node went on before cluster.StartMember returned (tests)
	provider   *membership.Provider
	lookup     *membership.Lookup
	pool       *dispatch.Pool
	msgs       dispatch.Counter // messages the node's actors handle
	probes     []net.Conn       // see syncGRPCServer
	actors     *actors.Manager
	table      *actors.Table
	compactor  *gcs.Compactor
	nodes      *nodeView
	view       *clusterview.View         // cluster mode only
	lease      atomic.Int64              // cluster mode: the node record's, job alive key's and load report's lease (gcs.LeaseID; keepLease replaces it)
	record     atomic.Pointer[[]byte]    // the node record (encoded), for keepLease
	jobAlive   atomic.Bool               // a driver's jobalive key is to be kept (join to endJob)
	lostGCS    atomic.Pointer[error]     // a driver took its cluster for lost (gcsLost): why; Stop does not wait on the GCS
	keepStop   context.CancelFunc        // stops keepLease (cluster mode)
	keepDone   chan struct{}             // closed when keepLease returned
	loads      *loadReporter             // cluster mode
	ownGCS     gcs.Store                 // a GCS client Join opened (closed by Stop)
	core       atomic.Pointer[core.Core] // Core, for goroutines started before it exists
	data       *transfer.Server          // cluster mode: serves this node's objects to other nodes
	job        *pb.JobInfo               // the job a driver registered (ended by Stop)
	exeStop    context.CancelFunc        // a driver: stops holding its executable in the GCS
	exeDone    <-chan struct{}           // closed when the executable is no longer held
	exeFile    *os.File                  // a driver's executable, open from registration on
	sub        *eventstream.Subscription
	// the state API's server (taskstate.Server): stopped by Stop
	stateStop context.CancelFunc
	stateDone chan struct{}
	// revokedStop ends the watch of revoked certificates (watchRevoked); revokedDone is
	// closed when it has ended.
	revokedStop context.CancelFunc
	revokedDone chan struct{}
	// ActorStats counts what this node's actor grains did.
	ActorStats *actors.Stats

	softLimit int64 // the store budget this node added to processLimit (0: none)
	gcFloor   int64 // the heap-goal floor this node added to processGC (0: none)

	mu      sync.Mutex
	rayletP atomic.Pointer[actor.PID] // resolved once: read on every task's placement
	storeP  atomic.Pointer[actor.PID]
	stopped bool
	crashed bool // Crash: Stop hands nothing over

	// rayletChanges counts the messages the raylet handled but Stats
	// (raylet.Config.Changes): the load reporter asks for Stats only when it moved.
	rayletChanges atomic.Uint64
	// live is the raylet's live load (raylet.Config.Live): the view's placers judge this
	// node by it (clusterview.Config.Local).
	live *raylet.Live

	// lostCtx is done once the driver took its cluster for lost (gcsLost calls loseCtx),
	// its cause that error: work that would wait on the GCS for good (the executable's
	// upload and hold) ends with it.
	lostCtx context.Context
	loseCtx context.CancelCauseFunc
}

// Start starts a single node with an embedded GCS.
func Start(ctx context.Context, cfg Config) (n *Node, err error) {
	if cfg.Job == "" {
		cfg.Job = ids.NewJobID()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	switch cfg.Role {
	case "":
		cfg.Role = RoleLocal
	case RoleLocal, RoleWorker, RoleDriver:
	default:
		return nil, fmt.Errorf("node: unknown role %q", cfg.Role)
	}
	if cfg.Role != RoleLocal && cfg.GCS == nil {
		return nil, fmt.Errorf("node: a %s node needs Config.GCS (the cluster it joins)", cfg.Role)
	}
	if cfg.Role == RoleDriver {
		cfg.Resources = sched.Resources{} // a driver runs no tasks
		cfg.Workers = 1
	} else if cfg.Resources.IsZero() && cfg.Role != RoleWorker {
		// (A worker process has what its agent offers, which may be nothing: it runs
		// only tasks and actors that need nothing.)
		return nil, errors.New("node: Config.Resources is empty; give the node at least one resource")
	}
	if cfg.ObjectStoreBytes == 0 {
		cfg.ObjectStoreBytes = DefaultObjectStoreBytes()
	}
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = DefaultNodeLeaseTTL
	}
	if cfg.LeaseTTL < MinNodeLeaseTTL {
		return nil, fmt.Errorf("node: lease TTL %v is under the minimum %v", cfg.LeaseTTL, MinNodeLeaseTTL)
	}
	n = &Node{ID: ids.NewNodeID(), cfg: cfg, ActorStats: &actors.Stats{}}
	n.lostCtx, n.loseCtx = context.WithCancelCause(context.Background())
	n.pgRecords.n = n
	n.pgCache.n = n
	started := n // the failure paths below return nil for n
	defer func() {
		if err != nil {
			started.Stop(context.Background())
		}
	}()
	if cfg.SoftMemoryLimit && processLimit.acquire(cfg.ObjectStoreBytes) {
		n.softLimit = cfg.ObjectStoreBytes
	}
	if cfg.GCHeapFloor > 0 && processGC.acquire(cfg.GCHeapFloor) {
		n.gcFloor = cfg.GCHeapFloor
	}
	if cfg.Dir == "" {
		if n.dir, n.dirLock, err = makeTempDir(); err != nil {
			return nil, fmt.Errorf("node: create a session directory: %w (set a writable directory with ray.WithDir)", err)
		}
		n.ownDir = true
	} else {
		n.dir = cfg.Dir
		if err = os.MkdirAll(n.dir, 0o700); err != nil {
			return nil, fmt.Errorf("node: session directory %s: %w", n.dir, err)
		}
	}
	n.spillDir = filepath.Join(n.dir, "spill")
	if cfg.SpillDir != "" {
		if n.spillOwn, err = shard.OpenSpillDir(cfg.SpillDir, shard.NodeSpillPrefix+string(n.ID)); err != nil {
			return nil, fmt.Errorf("node: %w", err)
		}
		n.spillDir = filepath.Join(n.spillOwn.Dir, "spill")
	}
	if cfg.GCS != nil {
		n.store = cfg.GCS
	} else {
		// Local mode: the etcd listens on loopback with mutual TLS under a CA made now, in
		// memory; only its member's credentials are written, private to this user, because
		// etcd reads them from files. The node itself uses the in-process client.
		creds, err := localCredentials(n.dir, string(n.ID))
		if err != nil {
			return nil, err
		}
		if n.etcd, err = etcdstore.StartEmbedded(ctx, etcdstore.EmbedConfig{Dir: filepath.Join(n.dir, "gcs"), Name: "gcs-" + string(n.ID),
			Logger: cfg.Logger, TLS: creds.files, NoPeerListener: true}); err != nil {
			return nil, fmt.Errorf("node: start the embedded GCS: %w", err)
		}
		for _, ep := range n.etcd.Endpoints() {
			conn, err := syncGRPCServer(ep, creds.ClientTLS())
			if err != nil {
				return nil, err
			}
			n.probes = append(n.probes, conn)
		}
		n.store = n.etcd.Client()
		if n.cfg.Credentials == nil {
			n.cfg.Credentials = creds.Credentials
		}
		// This node owns the GCS: it keeps etcd's history short (see gcs.Compactor).
		n.compactor = gcs.NewCompactor(n.store, gcs.CompactorConfig{Logger: cfg.Logger})
	}
	if err = n.watchRevoked(ctx); err != nil {
		return nil, err
	}
	n.writer = gcs.NewWriter(n.store, gcs.WriterConfig{Logger: cfg.Logger})
	if n.packer, err = gcs.NewShardedPacker(n.writer, gcs.PackerConfig{Prefix: gcs.LineagePrefix, Owner: string(n.ID), SealDelay: lineageSealDelay, Logger: cfg.Logger}, packerShards()); err != nil {
		return nil, err
	}
	n.pool = dispatch.New(dispatchGoroutines(), dispatch.DefaultThroughput)
	n.msgs.Tap = cfg.MessageTap
	for _, addr := range cfg.SyncAddrs {
		conn, err := syncGRPCServer(addr, peerClientTLS(n.cfg.Credentials))
		if err != nil {
			return nil, err
		}
		n.probes = append(n.probes, conn)
	}
	if err = n.startMember(ctx); err != nil {
		return nil, err
	}
	var lin core.Lineage
	if cfg.Lineage {
		lin = lineage.NewRecorder(n.packer)
	}
	total := cfg.Resources
	feasible := func(req sched.Resources) error {
		if total.Fits(req) {
			return nil
		}
		return fmt.Errorf("%w: task requires %v but the cluster's only node has %v", sched.ErrInfeasible, req, total)
	}
	var cluster core.Cluster
	if cfg.GCS != nil {
		// Cluster mode: the node's record and load report live on its own lease, so a node
		// that dies leaves the tables within the lease TTL.
		lease, err := n.store.Grant(ctx, cfg.LeaseTTL)
		if err != nil {
			return nil, fmt.Errorf("node: lease for the node record: %w", err)
		}
		n.lease.Store(int64(lease))
		kctx, cancel := context.WithCancel(context.Background())
		lost, err := n.store.KeepAlive(kctx, lease)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("node: keep the node lease alive: %w", err)
		}
		n.keepStop = cancel
		n.keepDone = make(chan struct{})
		go n.keepLease(kctx, lost)
		if n.view, err = n.startView(ctx); err != nil {
			return nil, err
		}
		if n.setConcern != nil {
			n.setConcern(n.peerConcern)
		}
		// Peers on this machine read over a Unix socket in the node's directory (0700):
		// no TLS, no TCP; a path too long for a socket goes without.
		var sock string
		if p, err := filepath.Abs(filepath.Join(n.dir, "data.sock")); err == nil && len(p) <= maxSocketPath {
			sock = p
		}
		if n.data, err = transfer.NewServer(transfer.ServerConfig{Addr: net.JoinHostPort(cfg.Host, "0"), Get: n.readObject, Logger: cfg.Logger,
			TLS: peerServerTLS(cfg.Credentials), TrackPeer: trackPeer(cfg.Credentials), Socket: sock}); err != nil {
			return nil, fmt.Errorf("node: start the object data server: %w", err)
		}
		cluster, feasible = viewCluster{n.view}, n.view.Feasible
	}
	var self *pb.NodeInfo
	listNodes := func() []*pb.NodeInfo {
		if n.view != nil {
			return n.view.Nodes()
		}
		return []*pb.NodeInfo{self}
	}
	var deadNodes func() []core.DeadNode
	var groupRecord func(string) (*pb.PlacementGroupInfo, bool)
	var groupGrace time.Duration
	if n.view != nil {
		deadNodes = func() []core.DeadNode {
			var out []core.DeadNode
			for _, d := range n.view.DeadNodes() {
				out = append(out, core.DeadNode{Info: d.Info, At: d.At, Why: d.Why})
			}
			return out
		}
		groupRecord = n.pgCache.get // a cluster: groups other processes created
		// A group whose creator died ends (its actors, tasks) once the death is confirmed,
		// or its record has been missing as long as an owner's death takes to confirm.
		groupGrace = ownerGraceLeases * cfg.LeaseTTL
	}
	if n.Core, err = core.New(core.Config{
		Job: cfg.Job, Namespace: cfg.ActorNamespace, Node: n.ID, System: n.system, Cluster: cluster,
		Raylet: n.raylet, Store: n.objectStore, Dispatcher: n.pool, Messages: &n.msgs,
		Feasible: feasible, Nodes: listNodes, DeadNodes: deadNodes, Available: n.available, OrphanLineage: n.orphanLineage, RecordGroup: n.pgRecords.put, GroupRecord: groupRecord, GroupGoneGrace: groupGrace,
		Lineage: lin, InlineLimit: worker.DefaultInlineLimit, DataTLS: peerClientTLS(cfg.Credentials), StoreBytes: cfg.ObjectStoreBytes, Logger: cfg.Logger,
		TaskEvents: cfg.TaskEvents, CallSites: cfg.CallSites, AskOthersToCollect: n.askOthersToCollect,
		Actors: &core.ActorConfig{Table: n.table, PID: n.actorPID,
			Info:    func(id string) (*pb.ActorInfo, bool) { return n.actors.Info(id) },
			InGroup: n.actorsInGroup},
	}); err != nil {
		return nil, err
	}
	n.core.Store(n.Core)
	if lost := n.lostGCS.Load(); lost != nil {
		n.Core.Lose(*lost) // gcsLost ran before the runtime existed
	}
	if n.raylet() == nil || n.objectStore() == nil {
		return nil, errors.New("node: the node's raylet or store grain could not be activated")
	}
	host, _ := os.Hostname()
	info := &pb.NodeInfo{NodeId: string(n.ID), Address: n.system.Address(), Total: tasks.ResourcesToPB(total),
		ObjectStoreBytes: cfg.ObjectStoreBytes, StartedUnixMs: time.Now().UnixMilli(),
		Role: cfg.Role, JobId: string(cfg.Job), AgentId: cfg.AgentID, Hostname: host, Pid: int32(os.Getpid())}
	if n.data != nil {
		info.DataAddress, info.DataSocket, info.MachineId = n.data.Addr(), n.data.Socket(), netx.MachineID()
	}
	self = info
	infoB, _ := proto.Marshal(info)
	n.record.Store(&infoB)
	if _, err := n.store.Put(ctx, gcs.NodeKey(string(n.ID)), infoB, n.leaseID()); err != nil {
		return nil, fmt.Errorf("node: register the node: %w", err)
	}
	n.nodes.set(info)
	n.serveState()
	if n.view != nil {
		n.loads = startLoadReporter(n) // a driver's: its object store only (load.go)
	}
	if n.actors, err = actors.NewManager(actors.ManagerConfig{Node: string(n.ID), Job: string(cfg.Job), Table: n.table, Nodes: n.nodes,
		Activate: func(id string) { n.actorPID(id) }, GroupGoneGrace: groupGrace, Logger: cfg.Logger}); err != nil {
		return nil, err
	}
	n.actors.Subscribe(n.Core.ActorChanged)
	n.sub = membership.SubscribeMemberEvents(n.system, func(e *membership.MemberEvent) {
		n.actors.NodesChanged()
		// MemberGone, not MemberLeft: a member that lost its lease in a GCS outage leaves
		// and registers again as a new incarnation of the same node, which lives on.
		if !e.Self && (e.Type == membership.MemberUnreachable || e.Type == membership.MemberGone) {
			if n.view != nil {
				// Placement avoids it from now on; ray.Nodes lists it dead, for this reason.
				n.view.MarkGone(ids.NodeID(e.Member.NodeID), memberGoneWhy(e.Type))
			}
			// Off the publisher's goroutine: failing tasks sends messages and takes locks,
			// and what the tasks' errors say of the node is read from the GCS (gone.go).
			go func(node ids.NodeID) { n.Core.NodeGone(node, n.goneWhy(node)) }(ids.NodeID(e.Member.NodeID))
			// The objects this process borrows from the runtime there are adopted.
			go n.Core.OwnerGone(e.Member.Address, ids.NodeID(e.Member.NodeID))
		}
		if !e.Self && (e.Type == membership.MemberDown || e.Type == membership.MemberGone) {
			n.markExited(e.Member.NodeID, true) // the state API does not wait for it
			// A borrow of a ref it owns fails at once, without probing its address.
			n.Core.ProcessExited(e.Member.Address)
		}
		if !e.Self && (e.Type == membership.MemberReachable || e.Type == membership.MemberJoined) {
			n.markExited(e.Member.NodeID, false)
		}
		if !e.Self && (e.Type == membership.MemberReachable || e.Type == membership.MemberJoined) {
			// A process at that address again (a broken connection that healed, or a new
			// process on a dead one's port): not a dead owner.
			n.Core.ProcessBack(e.Member.Address)
			n.actors.OwnerBack(e.Member.Address)
		}
		if !e.Self && (e.Type == membership.MemberReachable || e.Type == membership.MemberJoined) && n.view != nil {
			// A member reported unreachable can come back: a broken connection that healed,
			// or a new process on the address of a dead one (protoactor's stale endpoint
			// to that address fails the first Watch on it). It is placed on again.
			n.view.MarkAlive(ids.NodeID(e.Member.NodeID))
		}
		if !e.Self && e.Type == membership.MemberGone {
			go n.Core.BorrowersGone(e.Member.Address) // its runtime's borrows end with it
			// The actors its runtime created die with it (the leader steps them OwnerDied),
			// and lookups of what it owned are answered without asking it: once the death
			// is sure (ownergone.go), since both are final.
			m := e.Member
			go n.confirmOwnerGone(m, func() {
				n.Core.ProcessGone(m.Address)
				n.actors.OwnerGone(m.Address)
			})
		}
	})
	return n, nil
}

// startView starts the view of the cluster that n's runtime places tasks with (cluster
// mode): it resolves nodes' grains through n's cluster member and tells n's runtime when
// the nodes change.
func (n *Node) startView(ctx context.Context) (*clusterview.View, error) {
	grain := func(node ids.NodeID, what, kind string) *actor.PID {
		n.mu.Lock()
		stopped := n.stopped
		n.mu.Unlock()
		if stopped {
			return nil
		}
		return n.cluster.Get(membership.NodeIdentity(string(node), what), kind)
	}
	return clusterview.Start(ctx, clusterview.Config{
		Self: n.ID, Store: n.store, Job: string(n.cfg.Job),
		RunsTasks:  func(info *pb.NodeInfo) bool { return runsTasks(info, n.cfg.Job) },
		Member:     func(node string) bool { _, ok := n.provider.Nodes()[node]; return ok },
		Suspect:    func(node string) bool { return n.provider.Suspects()[node] },
		Raylet:     func(node ids.NodeID) *actor.PID { return grain(node, "raylet", KindRaylet) },
		StoreGrain: func(node ids.NodeID) *actor.PID { return grain(node, "store/0", KindStore) },
		Changed: func() {
			if c := n.core.Load(); c != nil {
				c.ClusterChanged()
			}
		},
		Local: func(known uint64) (clusterview.LocalLoad, bool) {
			l, ok := n.live.Load(known)
			return clusterview.LocalLoad{Version: l.Version, Available: l.Available, Queued: l.Queued}, ok
		},
	})
}

// peerConcern reports whether this process depends on the peer at addr, for peerLog: a
// lost connection to it is a WARN only if so. It does when the node record last seen at
// that address (clusterview's JobAt: kept after the record is deleted) names this
// process's job, or no job, or when no record was seen there (it cannot tell), or when
// this process borrows objects the process at addr owns. Another job's process is
// otherwise not its concern: every process connects to every other now and then (a
// request to collect, the state API), so another job's processes ending, even cleanly,
// is routine. (A detached actor of another job this process calls is not checked here:
// its calls fail with an error that says the actor died.)
func (n *Node) peerConcern(addr string) bool {
	if n.view == nil || addr == "" {
		return true
	}
	job, ok := n.view.JobAt(addr)
	if !ok || job == "" || job == string(n.cfg.Job) {
		return true
	}
	c := n.core.Load()
	return c != nil && c.BorrowsFrom(addr)
}

// viewCluster is the view as the runtime's core.Cluster.
type viewCluster struct{ *clusterview.View }

func (v viewCluster) Placer(seed uint64) core.Placer { return v.View.Placer(seed) }

// orphanLineage reads the lineage pages the runtime of node wrote (its packer's pages).
func (n *Node) orphanLineage(ctx context.Context, node ids.NodeID) (map[string][]byte, error) {
	recs, _, err := gcs.ReadAll(ctx, n.store, gcs.LineageOf(string(node)))
	return recs, err
}

// actorPID resolves (activating if need be) the grain of an actor.
func (n *Node) actorPID(actorID string) *actor.PID {
	n.mu.Lock()
	stopped := n.stopped
	n.mu.Unlock()
	if stopped {
		return nil
	}
	return n.cluster.Get(membership.ActorIdentity(actorID), KindActor)
}

// readObject reads an object from this node's store shard for the data server (in
// process, the shard hands over its slice without a copy).
func (n *Node) readObject(ctx context.Context, id ids.ObjectID) ([]byte, error) {
	s := n.objectStore()
	if s == nil {
		return nil, errors.New("node: stopping")
	}
	timeout := time.Minute
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	res, err := ask.Request(n.system.Root, s, &pb.GetObject{ObjectId: id[:]}, timeout)
	if err != nil {
		return nil, fmt.Errorf("node: read object %s from the store: %w", id, err)
	}
	reply, ok := res.(*pb.GetObjectReply)
	switch {
	case ok && reply.Error != "":
		return nil, fmt.Errorf("%w: %s", transfer.ErrUnreadable, reply.Error)
	case !ok || !reply.Found:
		return nil, fmt.Errorf("%w: %s is not in the store of node %s", transfer.ErrNotFound, id, n.ID)
	}
	return reply.Data, nil
}

// Actors is the node's actor manager (the actor table as this node sees it).
func (n *Node) Actors() *actors.Manager { return n.actors }

// nodeView is the actors.NodeView of a node: alive members of its job that host actors,
// with the resources their node records say they have.
type nodeView struct {
	provider *membership.Provider
	store    gcs.Store
	job      ids.JobID
	mu       sync.Mutex
	totals   map[string]sched.Resources
	skip     map[string]bool // drivers and other jobs' nodes
}

func (v *nodeView) set(info *pb.NodeInfo) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !runsTasks(info, v.job) {
		v.skip[info.NodeId] = true
		return
	}
	v.totals[info.NodeId] = tasks.ResourcesFromPB(info.Total)
}

// Alive implements actors.NodeView. A node whose record is not known yet is read once.
func (v *nodeView) Alive() map[string]sched.Resources {
	out := map[string]sched.Resources{}
	for id, m := range v.provider.Nodes() {
		if !m.HasKind(KindActor) {
			continue
		}
		v.mu.Lock()
		r, ok := v.totals[id]
		skip := v.skip[id]
		v.mu.Unlock()
		if skip {
			continue
		}
		if !ok {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			kv, found, err := v.store.Get(ctx, gcs.NodeKey(id))
			cancel()
			if err != nil || !found {
				continue
			}
			info, err := clusterview.DecodeNode(id, kv.Value)
			if err != nil {
				continue // a corrupt record names no node this view can use
			}
			v.set(info)
			if !runsTasks(info, v.job) {
				continue
			}
			r = tasks.ResourcesFromPB(info.Total)
		}
		out[id] = r
	}
	return out
}

// Suspects implements actors.SuspectView: the job's actor-hosting nodes whose connection
// broke while nothing says their process is gone (membership.Provider.Suspects).
func (v *nodeView) Suspects() map[string]bool {
	all := v.provider.Suspects()
	if len(all) == 0 {
		return nil
	}
	out := make(map[string]bool, len(all))
	v.mu.Lock()
	defer v.mu.Unlock()
	for id := range all {
		if _, ok := v.totals[id]; ok && !v.skip[id] {
			out[id] = true
		}
	}
	return out
}

var _ actors.JoiningView = (*nodeView)(nil)

// Joining implements actors.JoiningView: the nodes about to host the job's actors that
// alive (the membership's view) does not list yet. Those are the job's nodes whose record
// is in the node table (registered; the member is not in this process's view yet), and
// the live node agents whose worker process for the job is not running in alive: no
// record yet, STARTING, or RUNNING on a node alive lacks (keyed "agent <ID>", with the
// agent's resources, which its worker process gets). An agent that cannot run the job
// (UNSUPPORTED) or whose worker exited is left out (clusterview.ComingAgents, which the
// task path's view reads too). It reads the GCS: the node table, the job's worker records,
// and the live agents and their records.
func (v *nodeView) Joining(ctx context.Context, alive map[string]sched.Resources) (map[string]sched.Resources, error) {
	out := map[string]sched.Resources{}
	nodes, _, err := v.store.List(ctx, gcs.NodesPrefix)
	if err != nil {
		return nil, err
	}
	for _, kv := range nodes {
		id, _ := gcs.TrimKey(gcs.NodesPrefix, kv.Key)
		if _, ok := alive[id]; ok {
			continue
		}
		info, err := clusterview.DecodeNode(id, kv.Value)
		if err != nil || !runsTasks(info, v.job) {
			continue
		}
		out[id] = tasks.ResourcesFromPB(info.Total)
	}
	if v.job == "" {
		return out, nil // no agents start this process's peers
	}
	agents, err := clusterview.ComingAgents(ctx, v.store, string(v.job), func(node string) bool {
		_, in := alive[node]
		_, registered := out[node] // counted with its own record's resources
		return in || registered
	})
	if err != nil {
		return nil, err
	}
	for id, res := range agents {
		out["agent "+id] = res
	}
	return out, nil
}

func (n *Node) startMember(ctx context.Context) error {
	logger := n.cfg.Logger
	sysLogger, quiet, concern := peerLogger(logger) // protoactor's own logs, with a peer's departure quieted
	n.quietPeers, n.setConcern = quiet, concern
	n.system = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return sysLogger }))
	var err error
	pcfg := membership.Config{Store: n.store, NodeID: string(n.ID), LeaseTTL: n.cfg.LeaseTTL, Logger: logger, GCSAddress: n.cfg.GCSAddress}
	if n.cfg.Role == RoleDriver && n.cfg.GCSTimeout >= 0 {
		pcfg.GCSLostAfter = cmp.Or(n.cfg.GCSTimeout, DefaultGCSTimeout)
		pcfg.GCSLost = n.gcsLost
	}
	if n.provider, err = membership.NewProvider(pcfg); err != nil {
		return err
	}
	lookup, err := membership.NewLookup(membership.LookupConfig{Store: n.store, Resolver: n.provider, Logger: logger, GCSAddress: n.cfg.GCSAddress})
	if err != nil {
		return err
	}
	n.lookup = lookup
	n.nodes = &nodeView{provider: n.provider, store: n.store, job: n.cfg.Job, totals: map[string]sched.Resources{}, skip: map[string]bool{}}
	workers := n.cfg.Workers
	if workers <= 0 {
		workers = max(2, int(n.cfg.Resources.Get(sched.CPU).Float()+0.999))
	}
	rcfg := raylet.Config{Node: n.ID, Total: n.cfg.Resources, Workers: workers, Logger: logger,
		Worker: func(i int) *actor.PID {
			return n.cluster.Get(membership.NodeIdentity(string(n.ID), "worker/"+strconv.Itoa(i)), KindWorker)
		}, Changes: &n.rayletChanges}
	if n.cfg.Machine != "" {
		// The ledger's answers go to the raylet, which says where it is when it starts
		// (raylet.Config.Started): GRANT and DENY answer its asks, and RECLAIM goes only to
		// a holder, so none comes before it; the client keeps FREE's figures, and FREE
		// tells the raylet too (MachineFree: a raylet whose ask waits may ask for another
		// demand that fits now); one before the raylet starts is dropped (it asks nothing yet).
		var target atomic.Pointer[actor.PID]
		rcfg.Started = func(self *actor.PID) { target.Store(self) }
		var live atomic.Pointer[raylet.Live]
		mc, err := machine.Dial(n.cfg.Machine, string(n.ID), func(m *pb.MachineMsg) {
			if l := live.Load(); l != nil && m.Op != pb.MachineMsg_RECLAIM {
				l.MachineChanged() // the client took the machine's free resources in
			}
			rl := target.Load()
			if rl == nil {
				return
			}
			switch m.Op {
			case pb.MachineMsg_GRANT:
				n.system.Root.Send(rl, raylet.MachineGrant{ID: m.Id, Res: tasks.ResourcesFromPB(m.Resources)})
			case pb.MachineMsg_DENY:
				n.system.Root.Send(rl, raylet.MachineDeny{ID: m.Id, Message: m.Message})
			case pb.MachineMsg_RECLAIM:
				n.system.Root.Send(rl, raylet.MachineReclaim{Res: tasks.ResourcesFromPB(m.Resources)})
			case pb.MachineMsg_FREE:
				n.system.Root.Send(rl, raylet.MachineFree{})
			}
		})
		if err != nil {
			return err
		}
		n.machine = mc
		rcfg.Machine = mc
		n.live = raylet.NewLive(mc)
		live.Store(n.live)
	} else {
		n.live = raylet.NewLive(nil)
	}
	rcfg.Live = n.live
	if err := rcfg.Validate(); err != nil {
		return err
	}
	// A worker process an agent started logs to a file: record where each task's output
	// is in it (`rayctl logs task`).
	var logOffset func() int64
	logAt := new(atomic.Int64) // the last read, shared by the workers and the actors
	if n.cfg.Role == RoleWorker {
		logOffset = stdoutLogOffset()
	}
	wenv := worker.Env{Node: n.ID, StoreBytes: n.cfg.ObjectStoreBytes, Store: n.objectStore, Raylet: n.raylet, Logger: logger,
		LogOffset: logOffset, LogAt: logAt,
		Context: func(base context.Context, spec *pb.TaskSpec, r *actor.PID) (*worker.TaskCtx, context.Context) {
			return n.Core.TaskContextFor(base, spec, r)
		},
		Fetch: func(ctx context.Context, a *pb.Arg) ([]byte, error) { return n.Core.FetchArg(ctx, a) },
		// A recursive Cancel of a task running here: this process owns what it submitted.
		Cancelled: func(task ids.TaskID) {
			if n.Core != nil {
				n.Core.CancelChildren(task)
			}
		},
		Nested: core.NestedOf,
		Meta:   core.MetaOf,
	}
	if err := wenv.Validate(); err != nil {
		return err
	}
	objTable := objectTable{w: n.writer, node: string(n.ID)}
	n.table = &actors.Table{Store: n.store}
	aenv := actors.Env{Node: n.ID, Table: n.table, Logger: logger, Stats: n.ActorStats, Raylet: n.raylet, NodeResources: n.ownResources,
		Runner: worker.Runner{Node: n.ID, StoreBytes: n.cfg.ObjectStoreBytes, Store: n.objectStore, Fetch: wenv.Fetch, Nested: core.NestedOf, Meta: core.MetaOf,
			LogOffset: logOffset, LogAt: logAt,
			// A call's argument lost with its node is recreated by its caller, and read.
			Recover: func(ctx context.Context, spec *pb.TaskSpec, a *pb.Arg, err error) ([]byte, error) {
				return n.Core.RecoverArg(ctx, spec, a, err)
			}},
		Context: func(parent context.Context, spec *pb.TaskSpec, actorID string, incarnation uint64, resources []*pb.ResourceQty) context.Context {
			return n.Core.ActorCallContext(parent, spec, actorID, incarnation, resources)
		},
		// Results for callers in this process go to them from the executor (no mailbox hop).
		Local: func(owner *pb.PID, actor ids.ActorID) func([]uint64, []*pb.TaskResult) {
			if n.Core == nil {
				return nil
			}
			return n.Core.LocalResults(owner, actor)
		},
	}
	if err := aenv.Validate(); err != nil {
		return err
	}
	pooled := func(p *actor.Props, role string) *actor.Props {
		return p.Configure(actor.WithDispatcher(n.pool), actor.WithMailbox(n.msgs.MailboxFor(role)))
	}
	kinds := []*cluster.Kind{
		cluster.NewKind(KindRaylet, pooled(raylet.Props(rcfg), "raylet")),
		cluster.NewKind(KindWorker, pooled(worker.Props(wenv), "worker")),
		cluster.NewKind(KindStore, pooled(shard.Props(shard.Config{Node: n.ID, Table: objTable, Logger: logger,
			Budget: n.cfg.ObjectStoreBytes, SpillDir: n.spillDir, Grant: n.storeGrant(logger),
			// Over 70% of its budget: refs dropped without Release may hold objects in
			// it until collections here and elsewhere find them (core/collect.go).
			Pressure: func() {
				if c := n.core.Load(); c != nil {
					c.CollectForStore()
				}
			}}), "store")),
		cluster.NewKind(KindActor, pooled(actors.Props(aenv), "actor")),
	}
	rem := remote.Configure(n.cfg.Host, 0, remoteOptions(n.cfg.Credentials)...)
	// Gossip keys members by actor-system ID and blocks IDs on missed heartbeats, which
	// fights our lease-based membership (internal/assembly/membership); it is turned off.
	var prov cluster.ClusterProvider = n.provider
	if n.cfg.Gate != nil {
		prov = gatedProvider{n.provider, n.cfg.Gate}
	}
	var look cluster.IdentityLookup = lookup
	if n.cfg.RemoteStarted != nil {
		look = signalLookup{lookup, func() { n.cfg.RemoteStarted(n.system.Address()) }}
	}
	returned := make(chan error, 1)
	prov = returnedProvider{prov, returned}
	ccfg := cluster.Configure("ray-"+string(n.ID), prov, look, rem, cluster.WithKinds(kinds...), membership.WithoutGossip())
	n.cluster = cluster.New(n.system, ccfg)
	started := make(chan any, 1)
	n.memberDone = make(chan struct{})
	go func() {
		defer close(n.memberDone)
		defer func() { started <- recover() }()
		n.cluster.StartMember()
	}()
	select {
	case p := <-started: // a panic before the provider ran
		if p != nil {
			return fmt.Errorf("node: start the cluster member: %v", p)
		}
	case err := <-returned:
		if err != nil {
			return fmt.Errorf("node: start the cluster member: %v", err)
		}
	case <-ctx.Done():
		return fmt.Errorf("node: start the cluster member: %w", ctx.Err())
	}
	select {
	case <-n.memberDone:
	default:
		n.wentOn = true
	}
	return nil
}

func (n *Node) raylet() *actor.PID { return n.grain(&n.rayletP, "raylet", KindRaylet) }

// available is what the job's nodes have not in use: in a cluster as their load reports
// said, alone as this node's scheduler counts it now.
func (n *Node) available() map[string]sched.Resources {
	if n.view != nil {
		return n.view.Available()
	}
	rl := n.raylet()
	if rl == nil {
		return nil
	}
	res, err := ask.Request(n.system.Root, rl, raylet.Stats{}, 5*time.Second)
	if s, ok := res.(*raylet.StatsReply); err == nil && ok {
		return map[string]sched.Resources{string(n.ID): s.Available}
	}
	return nil
}

// ownResources is this node's total resources and those free now, as its raylet counts
// them (an actor that waits for its resources says so with them).
func (n *Node) ownResources() (total, available sched.Resources, ok bool) {
	rl := n.raylet()
	if rl == nil {
		return total, available, false
	}
	res, err := ask.Request(n.system.Root, rl, raylet.Stats{}, 5*time.Second)
	if s, isStats := res.(*raylet.StatsReply); err == nil && isStats {
		return s.Total, s.Available, true
	}
	return total, available, false
}

func (n *Node) objectStore() *actor.PID { return n.grain(&n.storeP, "store/0", KindStore) }

// grain returns the node's grain of kind named what, resolving it on first use (not once
// the node stopped).
func (n *Node) grain(cache *atomic.Pointer[actor.PID], what, kind string) *actor.PID {
	if p := cache.Load(); p != nil {
		return p
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if p := cache.Load(); p != nil || n.stopped {
		return p
	}
	p := n.cluster.Get(membership.NodeIdentity(string(n.ID), what), kind)
	cache.Store(p)
	return p
}

// System is the node's actor system.
func (n *Node) System() *actor.ActorSystem { return n.system }

// GCS is the node's GCS client.
func (n *Node) GCS() gcs.Store { return n.store }

// Flush makes every GCS write issued so far durable (lineage pages, object table).
func (n *Node) Flush(ctx context.Context) error {
	if n.Core != nil {
		if err := n.Core.FlushLineage(ctx); err != nil {
			return err
		}
	}
	if err := n.packer.Flush(ctx); err != nil {
		return err
	}
	return n.writer.Flush(ctx)
}

// DataSocket is the Fetch address of the Unix socket of the node's object data server
// ("" without one: local mode, or a directory path too long for a socket).
func (n *Node) DataSocket() string {
	if n.data == nil {
		return ""
	}
	return n.data.Socket()
}

// DataConns counts the connections the node's object data server accepted: in all, and
// through its Unix socket (peers on this machine).
func (n *Node) DataConns() (all, local int64) {
	if n.data == nil {
		return 0, 0
	}
	return n.data.Accepted()
}

// Raylet returns the node's scheduler grain.
func (n *Node) Raylet() *actor.PID { return n.raylet() }

// Store returns the node's object store shard grain.
func (n *Node) Store() *actor.PID { return n.objectStore() }

// Dir is the node's session directory.
func (n *Node) Dir() string { return n.dir }

// SpillDir is the directory the node's store writes its spill files in.
func (n *Node) SpillDir() string { return n.spillDir }

// DataAddress is the address of the node's object data server (objects/transfer's
// stream), "" for a node not in a cluster.
func (n *Node) DataAddress() string {
	if n.data == nil {
		return ""
	}
	return n.data.Addr()
}

// Crash stops the node as if its process had been killed, for tests of what the cluster
// does then (internal/assembly/testcluster CrashNode): nothing is handed over or cleaned
// up. Its runtime's placement groups are not removed and the actors it owns not ended;
// its node record and membership are not taken back but expire with their leases' TTL;
// its remote shuts down, so connections to it are refused.
func (n *Node) Crash(ctx context.Context) error {
	n.mu.Lock()
	n.crashed = true
	n.mu.Unlock()
	return n.Stop(ctx)
}

// Stop stops everything Start started and removes what it created. It is safe to call
// more than once.
func (n *Node) Stop(ctx context.Context) error {
	n.mu.Lock()
	if n.stopped {
		n.mu.Unlock()
		return nil
	}
	n.stopped = true
	// A driver that lost its cluster (gcsLost) hands nothing over either: the GCS does not
	// answer, and every write would wait out its timeout.
	lost := n.lostGCS.Load() != nil
	crashed := n.crashed || lost
	n.mu.Unlock()
	flushWait := 5 * time.Second
	if lost {
		flushWait = 500 * time.Millisecond
	}
	if n.quietPeers != nil {
		n.quietPeers() // the peers this node's processes leave now are its own shutdown's
	}
	var errs []error
	if n.actors != nil {
		if !crashed {
			n.releaseOwnedActors(ctx)
		}
		n.actors.Stop()
	}
	if n.sub != nil {
		n.system.EventStream.Unsubscribe(n.sub)
	}
	if n.stateStop != nil {
		if !crashed {
			n.archiveTasks(ctx)
		}
		n.stateStop()
		<-n.stateDone
	}
	if n.revokedStop != nil {
		n.revokedStop()
		<-n.revokedDone
	}
	if n.loads != nil {
		n.loads.stop()
	}
	if n.machine != nil {
		defer n.machine.Close() // after the member: what the raylet holds goes back with it
	}
	if n.data != nil {
		n.data.Close()
	}
	if n.view != nil {
		n.view.Stop()
	}
	if n.Core != nil {
		if crashed {
			n.Core.Abandon()
		}
		n.Core.Close()
	}
	// A node that runs tasks leaves the node table first, so that no more work is placed
	// on it. A driver ends its job (and with it the job's worker processes) only after its
	// own member has shut down, so that it does not watch them go.
	leave := func() {
		if n.writer == nil || n.store == nil {
			return
		}
		dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		n.stopKeeping()
		if crashed {
			return // its lease expires
		}
		_, _ = n.store.Delete(dctx, gcs.NodeKey(string(n.ID)))
		if l := n.leaseID(); l != 0 {
			_ = n.store.Revoke(dctx, l)
		}
	}
	if n.job == nil {
		leave()
	}
	if n.cluster != nil {
		// Shutdown(true) sleeps 2 s for ownership hand-over we do not use; the provider
		// is shut down (its lease revoked) explicitly instead. Shutdown(false) leaves the
		// gossip's loop, which looks only at its next tick (an hour: membership's config),
		// and the cluster it holds: one goroutine and ~5 MiB left per Init and Shutdown.
		n.cluster.Gossip.Shutdown()
		n.cluster.Shutdown(false)
		if n.lookup != nil {
			n.lookup.Shutdown()
		}
		if n.provider != nil {
			if err := n.provider.Shutdown(!crashed); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if n.job != nil {
		if !crashed {
			n.endJob(ctx)
		}
		leave()
	}
	n.releaseExecutable()
	if n.packer != nil {
		pctx, cancel := context.WithTimeout(ctx, flushWait)
		if err := n.packer.Close(pctx); err != nil {
			errs = append(errs, fmt.Errorf("node: flush lineage: %w", err))
		}
		cancel()
	}
	if n.writer != nil {
		fctx, cancel := context.WithTimeout(ctx, flushWait)
		if err := n.writer.Close(fctx); err != nil {
			errs = append(errs, fmt.Errorf("node: flush GCS writes: %w", err))
		}
		cancel()
		if !crashed && n.etcd == nil && n.store != nil {
			// The object table entries of this node's store go with it (nothing reads
			// them once the store is gone). Its lineage pages stay: a borrower in another
			// job that adopts this runtime's objects reads them; the head deletes them a
			// grace period later (package agent, gcssweep.go).
			dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, _, _ = n.store.Txn(dctx, nil, []gcs.Op{{Kind: gcs.OpDeletePrefix, Key: gcs.ObjectsOf(string(n.ID))}})
			cancel()
		}
	}
	if n.pool != nil {
		n.pool.Close()
	}
	if n.compactor != nil {
		n.compactor.Stop()
	}
	if n.etcd != nil {
		n.etcd.Close()
	}
	if n.ownGCS != nil {
		n.ownGCS.Close()
	}
	for _, c := range n.probes { // closed already when etcd said GOAWAY; see syncGRPCServer
		c.Close()
	}
	if n.ownDir {
		if err := os.RemoveAll(n.dir); err != nil {
			errs = append(errs, err)
		}
	}
	if n.spillOwn != nil {
		// After the actor system: a late spill write does not make the directory again
		// (objects/shard makes the spill directory only, not its parent).
		if err := n.spillOwn.Close(); err != nil {
			errs = append(errs, fmt.Errorf("node: remove the spill directory: %w", err))
		}
	}
	if n.dirLock != nil {
		n.dirLock.Close()
	}
	n.stopKeeping()
	if n.softLimit != 0 {
		processLimit.release(n.softLimit)
	}
	if n.gcFloor != 0 {
		processGC.release(n.gcFloor)
	}
	if err := n.lostGCS.Load(); err != nil && len(errs) > 0 {
		// What could not be written (lineage, the object table) failed for that reason,
		// which the program's calls were told already: said once, not as a timeout each.
		return *err
	}
	return errors.Join(errs...)
}

// objectTable writes object table records through the writer.
// Its keys are under the node's own prefix (gcs.ObjectsOf), which the node deletes when it
// stops and the head when the node died (package agent, gcssweep.go).
type objectTable struct {
	w    *gcs.Writer
	node string
}

func (t objectTable) Record(id ids.ObjectID, entry []byte) {
	t.w.Put(gcs.ObjectKey(t.node, id.String()), entry)
}
func (t objectTable) Drop(id ids.ObjectID) { t.w.Delete(gcs.ObjectKey(t.node, id.String())) }

// releaseOwnedActors ends the actors this node's runtime created that are not detached
// (Ray: an actor dies with its owner). With an embedded GCS everything ends anyway.
func (n *Node) releaseOwnedActors(ctx context.Context) {
	if n.etcd != nil || n.Core == nil {
		return
	}
	owner := n.Core.OwnerID()
	for _, info := range n.actors.All() {
		if info.Detached || info.Owner == nil || info.Owner.Id != owner || lifecycle.Phase(info.Phase) == lifecycle.Dead {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, _, _, err := n.actors.Table().Step(sctx, fmt.Sprintf("%x", info.ActorId), lifecycle.OwnerDied{})
		cancel()
		if err != nil && !errors.Is(err, lifecycle.ErrInvalidTransition) {
			n.cfg.Logger.Warn("node: cannot end an actor owned by this runtime", "err", err)
		}
	}
}
