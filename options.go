package ray

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strings"
	"time"

	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/tasks/sched"
)

// InitOption configures Init.
type InitOption func(*initConfig)

type initConfig struct {
	cpus, gpus       float64
	resources        map[string]float64
	objectStoreBytes int64
	dir              string
	spillDir         string // WithSpillDir
	logger           *slog.Logger
	address          string
	namespace        string // WithNamespace (else workerenv.JobNamespace, else anonymous)
	noLineage        bool
	token            string        // WithToken (else RAY_GO_TOKEN / RAY_GO_TOKEN_FILE)
	insecure         bool          // WithInsecure (else RAY_GO_INSECURE)
	leaseTTL         time.Duration // node.LeaseTTLEnv, read by Init
	gcsTimeout       time.Duration // node.GCSTimeoutEnv, read by Init
	taskEvents       int           // WithTaskEvents
	metricsPort      int           // WithMetricsPort (metrics.go)
	metricsSet       bool
	gcHeapFloor      int64 // WithGCHeapFloor (else workerenv.GCHeapFloor, else DefaultGCHeapFloor)
	gcHeapFloorSet   bool
	logToDriverOpt   *bool // WithLogToDriver (nil: LogToDriverEnv, else on)
}

// LogToDriverEnv turns the worker processes' output off in the driver when "0" or
// "false" (Ray's log_to_driver=False), unless WithLogToDriver says otherwise.
const LogToDriverEnv = "RAY_LOG_TO_DRIVER"

// WithLogToDriver says whether a driver that joins a cluster shows what its job's worker
// processes print (Ray's log_to_driver; default on). On, every line a task or actor
// writes to its stdout or stderr is written to the driver's stderr, prefixed with
// "(worker pid=N, ip=H) ", within a fraction of a second (so it is in the driver's
// console and, for `rayctl job submit`, in `rayctl job logs`). The runtime's own log
// records below ERROR in those processes are not shown (they stay in `rayctl logs
// worker`). It costs the tasks nothing: the node agents read the worker processes' log
// files; output that comes faster than it can be sent is dropped with a note saying how
// many lines. Off (or RAY_LOG_TO_DRIVER=0), the output is only in the worker processes'
// logs (`rayctl logs task ID`, `rayctl logs worker`). In local mode tasks run in the
// driver's process and print to its stdout and stderr themselves; the option changes
// nothing there.
func WithLogToDriver(on bool) InitOption { return func(c *initConfig) { c.logToDriverOpt = &on } }

// logToDriver reports whether the driver shows its worker processes' output.
func (c *initConfig) logToDriver() bool {
	if c.logToDriverOpt != nil {
		return *c.logToDriverOpt
	}
	v := strings.ToLower(strings.TrimSpace(os.Getenv(LogToDriverEnv)))
	return v != "0" && v != "false" && v != "no" && v != "off"
}

// WithNumCPUs sets the node's CPUs (default: the machine's).
func WithNumCPUs(n float64) InitOption { return func(c *initConfig) { c.cpus = n } }

// WithNumGPUs sets the node's GPUs (default 0).
func WithNumGPUs(n float64) InitOption { return func(c *initConfig) { c.gpus = n } }

// WithResources adds custom resources to the node, e.g. {"accel": 2}.
func WithResources(r map[string]float64) InitOption {
	return func(c *initConfig) { c.resources = r }
}

// WithObjectStoreMemory sets the node's object store budget in bytes (default 30% of the
// machine's memory). An object larger than the whole budget is refused with
// ErrObjectTooLarge, whether Put or a task returns it (the task fails, not retried);
// beyond the budget, least recently used objects spill to disk in the node's directory
// (see WithDir; WithSpillDir chooses another) and are read back transparently. The store's objects live in the Go heap:
// unless GOMEMLIMIT is set, Init sets the process's soft memory limit (debug.SetMemoryLimit)
// to this budget plus 640 MiB (node.SoftLimitMargin), and Shutdown puts it back.
func WithObjectStoreMemory(bytes int64) InitOption {
	return func(c *initConfig) { c.objectStoreBytes = bytes }
}

// DefaultGCHeapFloor is the heap-goal floor of runtime processes when neither
// WithGCHeapFloor nor RAY_GO_GC_HEAP_FLOOR says otherwise (benchmarks/RESULTS.md, "heap-goal
// floor").
const DefaultGCHeapFloor = 256 << 20

// WithGCHeapFloor sets the heap-goal floor of this process in bytes (0 turns it off;
// default DefaultGCHeapFloor; also RAY_GO_GC_HEAP_FLOOR, which the worker processes and
// submitted drivers of a cluster inherit from the environment of their `rayctl start`). A
// job's worker processes run the same program, so the same Init call sets theirs.
// The runtime allocates fast and keeps a small live heap, so with Go's default pacing
// (GOGC 100: a cycle each time the heap doubles) the collector runs many times a second.
// With a floor, the collector does not start a cycle before the heap reaches the larger of
// the floor and live × (1+GOGC/100): after each cycle the runtime sets GOGC
// (debug.SetGCPercent) for the next goal, and gives GOGC 100 back once the live heap is
// large enough for it to reach the floor by itself. The soft memory limit (GOMEMLIMIT or
// the one WithObjectStoreMemory sets) stays in force: the floor is at most half of it.
// A program that chooses its own pacing keeps it: with the GOGC variable set (to any
// value), or a debug.SetGCPercent other than 100 before Init, the runtime sets nothing,
// and a debug.SetGCPercent after Init stops the tuning. Shutdown gives GOGC back.
// The cost is memory: up to the floor of garbage between cycles.
func WithGCHeapFloor(bytes int64) InitOption {
	return func(c *initConfig) { c.gcHeapFloor, c.gcHeapFloorSet = bytes, true }
}

// WithTaskEvents sets how many task records (one per ended attempt of a task or actor
// call this process submitted) the process keeps for ListTasks, the timeline and `rayctl
// list tasks`; past it the oldest are dropped. Default 1,048,576 (88 bytes each, about 92 MB when full,
// allocated as they come); 0 keeps the default, a negative number turns recording off.
// The budget is per process: a job's worker processes run the same program, and the same
// Init call sets theirs (they record the tasks their tasks submit).
func WithTaskEvents(n int) InitOption { return func(c *initConfig) { c.taskEvents = n } }

// WithDir sets the directory for the node's files (etcd data, spill files). Default: a new
// temporary directory, removed by Shutdown (or, when the process was killed before
// Shutdown, by a later Init of the same user once the process is gone). A directory given
// here is kept.
func WithDir(dir string) InitOption { return func(c *initConfig) { c.dir = dir } }

// WithSpillDir sets the directory the node's object store spills to when it is over its
// budget (Ray's object_spilling_config / `ray start --object-spilling-directory`; default:
// the node's directory, see WithDir), e.g. a scratch disk with room to spare. The node
// makes a directory of its own in it, ray-go-spill-<node ID>, and removes it at Shutdown;
// it touches nothing else there, so several programs (and `rayctl start --spill-dir`
// agents) can share one directory. A program killed before Shutdown leaves its directory
// behind: the next Init that uses the same spill directory on this machine removes it
// once its process is gone (each live node holds a lock on its ray-go.lock file). A
// relative path is taken from the current directory; a missing directory is created
// (0700). Init fails, saying what to do, when dir is a file, is not writable or is on a
// read-only filesystem. Without this option, RAY_GO_SPILL_DIR gives the directory. A
// job's worker processes spill where their node agent says (`rayctl start --spill-dir`).
func WithSpillDir(dir string) InitOption { return func(c *initConfig) { c.spillDir = dir } }

// WithLogger sets the logger of the runtime (default: slog.Default at warning level).
func WithLogger(l *slog.Logger) InitOption { return func(c *initConfig) { c.logger = l } }

// WithAddress joins an existing cluster instead of starting one (also RAY_ADDRESS).
func WithAddress(addr string) InitOption { return func(c *initConfig) { c.address = addr } }

// WithNamespace sets the job's namespace (Ray's ray.init(namespace=...); also
// RAY_GO_JOB_NAMESPACE, e.g. `rayctl job submit --env RAY_GO_JOB_NAMESPACE=NS`). A
// namespace groups named actors: a name is unique within its namespace, an actor created
// with Name and without Namespace is named in its job's namespace, and GetActor without a
// namespace looks there. Without one a job gets an anonymous namespace of its own (a new
// random ID), so the named actors of two jobs never collide and one job's GetActor does
// not find the other's; jobs that share actors by name (a detached actor found by a later
// job) give the same namespace here, or name it with Namespace and GetActor's namespace
// argument. The job's tasks and actors (in its worker processes) are in the same namespace
// as its driver; GetRuntimeContext reports it. "" is the same as no option.
func WithNamespace(ns string) InitOption { return func(c *initConfig) { c.namespace = ns } }

// WithToken gives the cluster's join token (what `rayctl start --head` printed; also
// RAY_GO_TOKEN, or RAY_GO_TOKEN_FILE naming a file that holds it). A driver joining a
// cluster presents it once to the head (by default at the GCS port + 1; RAY_GO_JOIN_ADDRESS
// says otherwise) for a certificate, and then speaks mutual TLS with the cluster. The token
// pins the cluster's CA, so a server that is not the cluster never sees it.
func WithToken(token string) InitOption { return func(c *initConfig) { c.token = token } }

// WithInsecure joins a cluster started with `rayctl start --insecure` (plain text, no
// certificates; also RAY_GO_INSECURE=1). It has no effect in local mode, which is always
// private to its process.
func WithInsecure() InitOption { return func(c *initConfig) { c.insecure = true } }

// WithoutLineage turns lineage recording off. It exists for benchmarks that measure what
// recording costs; without lineage, lost objects cannot be reconstructed.
func WithoutLineage() InitOption { return func(c *initConfig) { c.noLineage = true } }

// TaskOption configures one submission (Ray's .options()).
type TaskOption func(*callOpts)

type callOpts struct {
	cpus, gpus      float64
	cpuSet          bool
	resources       map[string]float64
	maxRetries      int
	retryExceptions bool
	strategy        string
	affinityNode    string
	affinitySoft    bool
	pg              string // PlacementGroupBundle: the group's ID
	pgBundle        int32
	genWindow       int // generators only: GeneratorBackpressure

	// actors only
	name, namespace string
	detached        bool
	maxRestarts     int
	maxTaskRetries  int
	maxConcurrency  int
	// maxConcurrencySet: MaxConcurrency was given (0 is then an error, not the default).
	maxConcurrencySet bool
	atMostOnce        bool
	unboundedLog      bool
	checkpointEvery   int
}

func defaultActorOpts() callOpts { return callOpts{maxRetries: 0} }

// Name names an actor, so that GetActor finds it (actors only). Names are unique per
// namespace among live actors; the actor's namespace is its job's (WithNamespace) unless
// Namespace says otherwise. A name a live actor holds fails the creation at once: the
// handle's Err matches ErrNameTaken and names the actor that holds it, and every call
// through the handle fails with that error. (An actor whose constructor takes refs is
// recorded once they are ready: a taken name then makes its calls fail with
// ErrActorDied, with the same words.)
// A named actor that is not Detached still dies once every handle to it is gone, as in
// Ray: see ActorClass0.Remote on keeping its handle.
func Name(name string) TaskOption { return func(o *callOpts) { o.name = name } }

// Namespace sets the namespace of a named actor (actors only; Ray's
// .options(namespace=...)). Default, and with "": the namespace of the job that creates it
// (WithNamespace, else the job's anonymous one).
func Namespace(ns string) TaskOption { return func(o *callOpts) { o.namespace = ns } }

// Detached makes an actor outlive the runtime that created it (actors only; it needs a
// Name), as Ray's lifetime="detached". Its handles do not keep it alive and their loss does
// not end it: it lives until Kill (with noRestart) or until the cluster stops. In cluster
// mode it also outlives its job: after the creating driver's Shutdown (or death) the job
// table says the job ended while the actor stays alive with its state, another job finds it
// with GetActor by name and namespace (by name alone when it runs in the same namespace:
// WithNamespace), and a host that dies restarts it (MaxRestarts, its
// method log replayed) as before. It lives in its job's worker processes, which the node
// agents keep running (with the resources they hold) until the job's last detached actor is
// dead. Objects it returns are owned by the caller, as always; objects owned by the ended
// job's driver are not adopted by other jobs. In local mode the whole cluster ends with
// Shutdown, detached actors too.
func Detached() TaskOption { return func(o *callOpts) { o.detached = true } }

// MaxRestarts sets how often an actor is restarted after its host or instance died, or
// after Kill without noRestart (actors only; default 0, -1 for no limit). A constructor
// that returns an error or panics is not retried: the actor dies at once with that
// error, as in Ray.
func MaxRestarts(n int) TaskOption { return func(o *callOpts) { o.maxRestarts = n } }

// MaxTaskRetries sets how often an at-most-once actor's in-flight call is resent after a
// restart (actors only; default 0: such calls fail with ErrActorDied; -1 resends it after
// every restart, without limit, as Ray's max_task_retries=-1; below -1 is an error).
// Logged actors resend every unanswered call and run it exactly once.
func MaxTaskRetries(n int) TaskOption { return func(o *callOpts) { o.maxTaskRetries = n } }

// MaxConcurrency lets an actor run up to n calls at once (actors only; default 1: one at
// a time, in each caller's order; n < 1 is an error). With n > 1 calls may run out of
// order, and a logged actor's replay runs them one at a time in log order.
func MaxConcurrency(n int) TaskOption {
	return func(o *callOpts) { o.maxConcurrency, o.maxConcurrencySet = n, true }
}

// AtMostOnce opts an actor out of the method log (actors only): Ray's default. Calls are
// faster (no GCS write before each batch), but a restart loses the state since the last
// checkpoint and calls in flight fail (or are resent with MaxTaskRetries).
func AtMostOnce() TaskOption { return func(o *callOpts) { o.atMostOnce = true } }

// CheckpointEvery sets how many calls a checkpointable actor runs between checkpoints
// (actors only; default 1000; a logged actor also checkpoints after 8 MiB of method log).
// An AtMostOnce actor checkpoints by itself only when given this option (otherwise on
// Checkpoint alone), since each checkpoint is a write to the GCS.
// An actor is checkpointable when its type implements Checkpointer or when the codec keeps
// all of its state (exported fields, no interfaces: codec.Lossless), which the runtime then
// saves by itself.
func CheckpointEvery(n int) TaskOption { return func(o *callOpts) { o.checkpointEvery = n } }

// UnboundedMethodLog lets an exactly-once actor whose state cannot be checkpointed (no
// Checkpointer, state the codec cannot encode whole) be created anyway (actors only): its
// method log then keeps every call in the GCS for the actor's whole life, and a restart
// replays all of it. Without this option creating such an actor fails and says what to
// do instead; long-lived actors should implement Checkpointer or use AtMostOnce.
func UnboundedMethodLog() TaskOption { return func(o *callOpts) { o.unboundedLog = true } }

func defaultCallOpts() callOpts { return callOpts{cpus: 1, maxRetries: 3} }

// NumCPUs sets the CPUs a task needs (default 1; 0 is allowed).
func NumCPUs(n float64) TaskOption { return func(o *callOpts) { o.cpus, o.cpuSet = n, true } }

// NumGPUs sets the GPUs a task needs (default 0).
func NumGPUs(n float64) TaskOption { return func(o *callOpts) { o.gpus = n } }

// Resources sets custom resources a task needs, e.g. {"accel": 1}.
func Resources(r map[string]float64) TaskOption {
	return func(o *callOpts) { o.resources = r }
}

// MaxRetries sets how often a task is retried after a system failure (default 3), and
// after an application error when RetryExceptions is set; -1 retries without limit (Ray's
// max_retries=-1), below -1 is an error.
//
// As in Ray, it also bounds lineage reconstruction: running the task again to recreate a
// result that was lost (its node died, its spill file is gone) uses one of its retries.
// A task with no retries left (MaxRetries(0), or every retry used) is not run again: a Get
// of its lost result fails with an error that matches ErrObjectLost and says so. Use
// MaxRetries(0) for a task with side effects that must not run twice.
func MaxRetries(n int) TaskOption { return func(o *callOpts) { o.maxRetries = n } }

// Spread spreads tasks over the cluster's nodes (Ray's "SPREAD" scheduling strategy): each
// task goes to the next node, in rotation, that can run it now. The default strategy
// keeps work on the submitting node while it is lightly loaded and otherwise picks the
// node with the most free resources, the shortest queue and the most argument bytes.
// Actors are spread already (each goes to the node of the job with the fewest of its
// actors that can hold it), so for an actor Spread changes nothing.
func Spread() TaskOption {
	return func(o *callOpts) { o.strategy, o.affinityNode, o.affinitySoft = core.StrategySpread, "", false }
}

// NodeAffinity runs the task on the node with the given ID (see Nodes and NodeID), or, in a
// cluster, on the job's worker process of the machine whose agent has that ID (Node.AgentID:
// the IDs `rayctl list nodes` and `rayctl status` show). With soft false the task fails with an error when that node is dead, unknown or cannot run
// it, and waits while the node is only unreachable for now (its connection broke but its
// process may live) until it answers again or is known dead; with soft true it is placed
// like any other task whenever that node cannot take it. For an actor (ActorClass0.Remote)
// it places the actor: with soft false there only, and the actor dies instead of
// restarting elsewhere once that node is gone; with soft true there when it can.
func NodeAffinity(nodeID string, soft bool) TaskOption {
	return func(o *callOpts) {
		o.strategy, o.affinityNode, o.affinitySoft = core.StrategyNodeAffinity, nodeID, soft
	}
}

// RetryExceptions makes application errors and panics retriable too (default false).
func RetryExceptions(on bool) TaskOption { return func(o *callOpts) { o.retryExceptions = on } }

func (o *callOpts) resourcesOf() (sched.Resources, error) {
	m := map[string]float64{}
	for k, v := range o.resources {
		m[k] = v
	}
	if o.cpus != 0 {
		m[sched.CPU] = o.cpus
	}
	if o.gpus != 0 {
		m[sched.GPU] = o.gpus
	}
	r, err := sched.FromMap(m)
	if err != nil {
		return r, rayErrorf("ray: bad task resources: %w", err)
	}
	if o.strategy == core.StrategyPlacementGroup && o.pg == "" {
		return r, errors.New("ray: PlacementGroupBundle was given a nil placement group handle: pass the handle that PlacementGroup or GetPlacementGroup returned")
	}
	if err := countOption("MaxRetries", o.maxRetries, true); err != nil {
		return r, err
	}
	return r, nil
}

// CancelOption configures Cancel.
type CancelOption func(*cancelOpts)

type cancelOpts struct {
	nonRecursive bool
}

// NonRecursive makes Cancel cancel only the task, not the tasks it submitted (Ray's
// ray.cancel(ref, recursive=False)); by default Cancel is recursive.
func NonRecursive() CancelOption { return func(o *cancelOpts) { o.nonRecursive = true } }

// countOption checks an option that counts (retries, restarts): from 0 to math.MaxInt32,
// or -1 for no limit when unlimited says it has one.
func countOption(name string, n int, unlimited bool) error {
	switch {
	case n >= 0 && n <= math.MaxInt32, n == -1 && unlimited:
		return nil
	case unlimited:
		return fmt.Errorf("ray: %s(%d): want a count from 0 to %d, or -1 for no limit", name, n, math.MaxInt32)
	}
	return fmt.Errorf("ray: %s(%d): want a count from 0 to %d", name, n, math.MaxInt32)
}

// actorOptsErr checks the options only actors take.
func (o *callOpts) actorOptsErr() error {
	if err := countOption("MaxRestarts", o.maxRestarts, true); err != nil {
		return err
	}
	if err := countOption("MaxTaskRetries", o.maxTaskRetries, true); err != nil {
		return err
	}
	if err := countOption("CheckpointEvery", o.checkpointEvery, false); err != nil {
		return err
	}
	if o.maxConcurrencySet && (o.maxConcurrency < 1 || o.maxConcurrency > math.MaxInt32) {
		return fmt.Errorf("ray: MaxConcurrency(%d): want at least 1 (the calls the actor runs at once; 1, the default, runs them one at a time)", o.maxConcurrency)
	}
	return nil
}

// WaitOption configures Wait.
type WaitOption func(*waitOpts)

type waitOpts struct {
	k          int
	timeout    time.Duration // < 0: no bound (the default)
	timeoutSet bool          // Timeout was given (a negative one is an error)
}

// NumReady sets how many refs must be ready for Wait to return (default 1).
func NumReady(k int) WaitOption { return func(o *waitOpts) { o.k = k } }

// Timeout bounds how long Wait waits (default: no bound). Timeout(0) only checks; a
// negative one is an error (as in Ray).
func Timeout(d time.Duration) WaitOption {
	return func(o *waitOpts) { o.timeout, o.timeoutSet = d, true }
}
