package ray

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ray-go/ray/internal/assembly/agent"
	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/assembly/node"
	"github.com/ray-go/ray/internal/base/identity"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/workerenv"
	"github.com/ray-go/ray/tasks/sched"
)

// AddressEnv is the environment variable naming a cluster to join (as Ray's RAY_ADDRESS).
const AddressEnv = "RAY_ADDRESS"

type runtimeKey struct{}

// session is what Init started and Shutdown stops.
type session struct {
	node    *node.Node
	metrics *metricsServer // WithMetricsPort (nil: none)
	renewal *renewal       // a joined driver's renewal of its certificate (nil: none)
	once    sync.Once
	err     error

	// output stops showing the worker processes' output (WithLogToDriver; nil: none).
	output func(grace time.Duration)
}

// Init starts ray-go and returns a context carrying the runtime; pass it (or contexts
// derived from it) to every ray call. With no address (WithAddress or RAY_ADDRESS) it starts
// a complete single-node cluster inside this process: an embedded etcd as the GCS in a
// temporary directory, one protoactor cluster member with the node's scheduler, worker and
// object store grains. Shutdown stops all of it and removes what it created.
//
// With an address (the GCS's host:port, as `rayctl start` prints it) the program is a
// driver of a cluster: Init registers a job with this program's executable, and the node
// agents (`rayctl start`) start a worker process from the same executable on every
// machine; tasks and actors run there, and objects move between nodes as needed. Init
// returns once the workers serve (at most a minute; an agent that cannot run the binary
// says why). Shutdown ends the job, and the agents stop its workers. The node options
// (CPUs, resources) are ignored: a driver runs no tasks, the agents' flags set the nodes'.
//
// A cluster is secure unless started with --insecure: a driver needs its join token
// (WithToken, RAY_GO_TOKEN or RAY_GO_TOKEN_FILE) or GCS credential files (RAY_GO_GCS_CA,
// RAY_GO_GCS_CERT, RAY_GO_GCS_KEY: what `rayctl job submit` drivers get from their agent),
// else Init fails with ErrNoCredentials saying what to set. Local mode needs nothing: its
// GCS listens on loopback with mutual TLS under a CA that exists only in this process.
//
// Each job runs in a namespace of named actors (Ray's namespace): WithNamespace's, else
// RAY_GO_JOB_NAMESPACE's, else an anonymous one of its own (a new random UUID); its worker
// processes get the same from their agent (GetRuntimeContext reports it).
//
// Worker mode: in a process an agent started, Init never returns. It joins the cluster as
// the job's worker process, serves tasks and actors until the job ends, and exits. So
// everything a program does before Init runs in its workers too (flag parsing is fine;
// side effects such as writing files are not); remote functions and actor classes must be
// registered at package level (var X = ray.Task1(...)), as they are.
func Init(ctx context.Context, opts ...InitOption) (context.Context, error) {
	cfg := initConfig{cpus: float64(runtime.NumCPU())}
	for _, o := range opts {
		o(&cfg)
	}
	cfg.leaseTTL = leaseTTLFromEnv()
	cfg.gcsTimeout = gcsTimeoutFromEnv()
	floor, floorErr := cfg.heapFloor()
	if w, ok, err := workerenv.FromEnv(os.Getenv); ok {
		if err == nil {
			err = floorErr
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "ray: worker mode:", err)
			os.Exit(2)
		}
		cfg.gcHeapFloor = floor
		serveWorker(ctx, w, cfg) // never returns
	}
	if floorErr != nil {
		return nil, floorErr
	}
	if err := sentTypesErr(); err != nil {
		return nil, err
	}
	cfg.gcHeapFloor = floor
	if cfg.address == "" {
		cfg.address = os.Getenv(AddressEnv)
	}
	if cfg.namespace == "" {
		cfg.namespace = os.Getenv(workerenv.JobNamespace)
	}
	if cfg.spillDir == "" {
		cfg.spillDir = os.Getenv(workerenv.SpillDir)
	}
	if cfg.namespace == "" {
		cfg.namespace = anonymousNamespace()
	}
	if cfg.address != "" {
		if err := checkAddress(cfg.address); err != nil {
			return nil, err
		}
		return join(ctx, cfg)
	}
	res, err := cfg.nodeResources()
	if err != nil {
		return nil, err
	}
	if cfg.objectStoreBytes < 0 {
		return nil, fmt.Errorf("ray: Init: object store memory must be positive, got %d", cfg.objectStoreBytes)
	}
	metricsPort, err := metricsPortOf(&cfg)
	if err != nil {
		return nil, err
	}
	n, err := node.Start(ctx, node.Config{
		Resources: res, ObjectStoreBytes: cfg.objectStoreBytes, Dir: cfg.dir, SpillDir: cfg.spillDir, ActorNamespace: cfg.namespace,
		Lineage: !cfg.noLineage, Logger: cfg.logger, LeaseTTL: cfg.leaseTTL, TaskEvents: cfg.taskEvents, CallSites: callSitesOn(),
		SoftMemoryLimit: softLimitOn(), GCHeapFloor: cfg.gcHeapFloor,
	})
	if err != nil {
		return nil, rayErrorf("ray: Init: %w", err)
	}
	s := &session{node: n}
	if metricsPort != metricsOff {
		if s.metrics, err = serveMetrics(n, metricsPort, res, cfg.logger); err != nil {
			_ = n.Stop(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	ctx = context.WithValue(ctx, runtimeKey{}, s)
	return core.WithTask(ctx, n.Core.NewDriver()), nil
}

// anonymousNamespace returns a new namespace for a job that names none (Ray's anonymous
// namespace: a random UUID, version 4).
func anonymousNamespace() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// gcsTimeoutFromEnv reads how long a driver waits for a GCS that does not answer from
// node.GCSTimeoutEnv (a bad value is reported and the default used).
func gcsTimeoutFromEnv() time.Duration {
	d, err := node.ParseGCSTimeout(os.Getenv(node.GCSTimeoutEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return d
}

// leaseTTLFromEnv reads the node lease TTL from node.LeaseTTLEnv (a bad value is reported
// and the default used).
func leaseTTLFromEnv() time.Duration {
	d, err := node.ParseLeaseTTL(os.Getenv(node.LeaseTTLEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return d
}

func (cfg *initConfig) nodeResources() (sched.Resources, error) {
	m := map[string]float64{sched.CPU: cfg.cpus, sched.GPU: cfg.gpus}
	for k, v := range cfg.resources {
		if k == sched.CPU || k == sched.GPU {
			return sched.Resources{}, fmt.Errorf("ray: Init: set %s with WithNumCPUs/WithNumGPUs, not WithResources", k)
		}
		m[k] = v
	}
	res, err := sched.FromMap(m)
	if err != nil {
		return res, rayErrorf("ray: Init: node resources: %w", err)
	}
	return res, nil
}

// join connects a driver to the cluster at cfg.address.
func join(ctx context.Context, cfg initConfig) (context.Context, error) {
	addr := workerenv.SplitAddress(cfg.address)
	creds, joinAddr, err := driverCredentials(ctx, cfg, addr)
	if err != nil {
		return nil, err
	}
	// The renewal starts with the certificate, not once node.Join returns: Join ships the
	// executable and waits up to a minute for the job's worker processes, which under load
	// can outlast a short certificate (the head's --driver-cert-validity), and a certificate
	// that lapsed cannot be renewed.
	var renew *renewal
	if joinAddr != "" {
		renew = startRenewal(joinAddr, creds, cfg.logger)
	}
	n, err := node.Join(ctx, node.JoinConfig{
		Address: addr, Namespace: os.Getenv(workerenv.Namespace), Credentials: creds,
		SubmissionID: os.Getenv(workerenv.Submission), OwnCredentials: joinAddr != "",
		Node: node.Config{Role: node.RoleDriver, ActorNamespace: cfg.namespace, Dir: cfg.dir, SpillDir: cfg.spillDir, Lineage: !cfg.noLineage, Logger: cfg.logger, TaskEvents: cfg.taskEvents,
			ObjectStoreBytes: cfg.objectStoreBytes, LeaseTTL: cfg.leaseTTL, GCSTimeout: cfg.gcsTimeout, CallSites: callSitesOn(), SoftMemoryLimit: softLimitOn(), GCHeapFloor: cfg.gcHeapFloor},
	})
	if err != nil {
		renew.stop()
	}
	if errors.Is(err, node.ErrCredentials) {
		return nil, rayErrorf("ray: Init: join the cluster at %s: %w: %w", cfg.address, ErrNoCredentials, err)
	}
	if err != nil {
		return nil, rayErrorf("ray: Init: join the cluster at %s: %w", cfg.address, err)
	}
	s := &session{node: n, renewal: renew}
	if cfg.logToDriver() {
		s.output = agent.FollowWorkerOutput(n.GCS(), string(n.Core.Job()), os.Stderr, cfg.logger)
	}
	ctx = context.WithValue(ctx, runtimeKey{}, s)
	logger := cfg.logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	lateLogger.Store(logger)
	return core.WithTask(ctx, n.Core.NewDriver()), nil
}

// lateLogger is the logger of a driver that joined a cluster, set by Init: a remote
// function, actor class or method this process registers from then on exists in the
// driver alone, as the job's worker processes run the program only up to Init, and
// warnLateRegistration says so, once (lateWarned). In local mode tasks run in the
// driver's process, which has everything it registered.
var (
	lateLogger atomic.Pointer[slog.Logger]
	lateWarned atomic.Bool
)

// warnLateRegistration logs, once, that what (a remote function, an actor class or a
// method) name is registered after Init joined a cluster.
func warnLateRegistration(what, name string) {
	l := lateLogger.Load()
	if l == nil || !lateWarned.CompareAndSwap(false, true) {
		return
	}
	l.Warn("ray: "+what+" "+strconv.Quote(name)+" is registered after ray.Init joined a cluster: the job's worker processes "+
		"run the program only up to ray.Init and will not have it, so its tasks or calls fail there with ErrUnknownFunction; "+
		"register remote functions, actor classes and methods at package level (var F = ray.Task1(\"name\", ...))",
		"name", name)
}

// serveWorker runs this process as a worker process of a job (worker mode: a node agent
// started it from the job's executable with workerenv's variables set). It joins the
// cluster, serves the job's tasks and actors and exits when the job ends, its agent goes
// away or it is signalled. It never returns.
func serveWorker(ctx context.Context, w workerenv.Worker, cfg initConfig) {
	logger := cfg.logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	fail := func(err error) {
		logger.Error("ray: worker process cannot serve its job", "job", w.Job, "err", err)
		os.Exit(1)
	}
	res, err := sched.FromMap(w.Resources)
	if err != nil {
		fail(fmt.Errorf("resources %v: %w", w.Resources, err))
	}
	if len(w.Resources) == 0 {
		// No resources given: the machine's CPUs. A node whose agent offers none (rayctl
		// start --num-cpus 0) gives its worker processes none either, and they say so
		// (ray.Nodes): its machine ledger grants them nothing, so the scheduler places
		// there only what needs nothing. (Before, a worker process took the machine's CPUs
		// as its total whenever its agent offered zero of everything.)
		if res, err = sched.FromMap(map[string]float64{sched.CPU: float64(runtime.NumCPU())}); err != nil {
			fail(err)
		}
	}
	var creds *identity.Credentials
	if !w.Insecure {
		if creds, err = identity.Load(identity.Files{CA: w.GCSCA, Cert: w.GCSCert, Key: w.GCSKey}); err != nil {
			fail(err)
		}
	}
	sctx, stop := signal.NotifyContext(context.WithoutCancel(ctx), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	n, err := node.Join(sctx, node.JoinConfig{
		Address: w.Address, Namespace: w.Namespace, Credentials: creds,
		Node: node.Config{Role: node.RoleWorker, Job: ids.JobID(w.Job), ActorNamespace: w.JobNamespace, AgentID: w.Agent, Resources: res,
			ObjectStoreBytes: w.ObjectStoreBytes, Dir: w.Dir, SpillDir: w.SpillDir, Lineage: !cfg.noLineage, Logger: logger, LeaseTTL: cfg.leaseTTL,
			TaskEvents: cfg.taskEvents, CallSites: callSitesOn(), Machine: w.Machine, SoftMemoryLimit: softLimitOn(), GCHeapFloor: cfg.gcHeapFloor},
	})
	if err != nil {
		fail(err)
	}
	reason := n.ServeWorker(sctx)
	logger.Info("ray: worker process stopped", "job", w.Job, "reason", reason)
	os.Exit(0)
}

// Shutdown stops what Init started. Calling it again returns the first result.
func Shutdown(ctx context.Context) error {
	s, ok := ctx.Value(runtimeKey{}).(*session)
	if !ok {
		return errors.New("ray: Shutdown needs the context returned by Init")
	}
	s.once.Do(func() {
		if s.output != nil {
			// What the tasks printed last is on its way: an agent sends within
			// agent.WorkerOutInterval.
			s.output(outputGrace)
		}
		if s.metrics != nil {
			s.metrics.stop()
		}
		s.renewal.stop()
		s.err = s.node.Stop(context.WithoutCancel(ctx))
		if s.err == nil { // a stop that failed (the GCS lost) leaves it to the head
			s.renewal.release(context.WithoutCancel(ctx))
		}
	})
	return s.err
}

// outputGrace is how long Shutdown waits for the worker processes' last output
// (WithLogToDriver): a few of the agents' intervals.
const outputGrace = 3 * agent.WorkerOutInterval

// nodeOf returns the node Init started (tests and benchmarks).
func nodeOf(ctx context.Context) *node.Node {
	if s, ok := ctx.Value(runtimeKey{}).(*session); ok {
		return s.node
	}
	return nil
}

// callSitesOn reports whether this process records where each object was created (Ray's
// RAY_record_ref_creation_sites=1; core.CallSitesEnv).
func callSitesOn() bool { return os.Getenv(core.CallSitesEnv) == "1" }

// softLimitOn reports whether the runtime sets the process's soft memory limit from its
// object store budget (node.Config.SoftMemoryLimit): when the program does not choose one
// with GOMEMLIMIT (GOMEMLIMIT=off keeps the process without a limit).
func softLimitOn() bool { return os.Getenv("GOMEMLIMIT") == "" }

// heapFloor is the process's heap-goal floor (node.Config.GCHeapFloor): none when the
// program sets GOGC, else WithGCHeapFloor, else workerenv.GCHeapFloor, else the default.
func (cfg *initConfig) heapFloor() (int64, error) {
	if os.Getenv("GOGC") != "" {
		return 0, nil
	}
	if cfg.gcHeapFloorSet {
		if cfg.gcHeapFloor < 0 {
			return 0, fmt.Errorf("ray: Init: WithGCHeapFloor(%d): want a number of bytes, 0 (off) or more", cfg.gcHeapFloor)
		}
		return cfg.gcHeapFloor, nil
	}
	floor, set, err := workerenv.ParseGCHeapFloor(os.Getenv(workerenv.GCHeapFloor))
	if err != nil {
		return 0, rayErrorf("ray: Init: %w", err)
	}
	if !set {
		floor = DefaultGCHeapFloor
	}
	return floor, nil
}

// checkAddress refuses the forms of Ray's RAY_ADDRESS that ray-go does not take, saying
// what to give instead: "auto" (Ray's "the cluster running on this machine") and Ray
// Client's ray://HOST:PORT. A driver joins the head's GCS directly.
func checkAddress(addr string) error {
	const want = "set RAY_ADDRESS (or WithAddress) to HOST:PORT of the head's GCS, as `rayctl start --head` printed it (`rayctl status` on the head shows it)"
	switch {
	case strings.EqualFold(addr, "auto") || strings.EqualFold(addr, "local"):
		return fmt.Errorf("ray: Init: address %q (Ray's \"find the running cluster\") is not supported: %s; "+
			"or leave it unset for a local cluster of this process", addr, want)
	case strings.Contains(addr, "://"):
		return fmt.Errorf("ray: Init: address %q: a URL (Ray Client's ray://...) is not supported: a driver joins the GCS directly: %s", addr, want)
	}
	return nil
}
