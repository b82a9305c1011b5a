package node

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/etcdstore"
	"github.com/ray-go/ray/internal/base/identity"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/internal/base/ship"
)

// DefaultJoinTimeout bounds how long a driver waits for the node agents to start its job's
// worker processes.
const DefaultJoinTimeout = 60 * time.Second

// ErrCredentials: the GCS refused the connection for want of the right credentials.
var ErrCredentials = errors.New("node: no valid credentials for the cluster")

// JoinConfig configures a driver or worker process joining a cluster.
type JoinConfig struct {
	// Address are the GCS's etcd client endpoints (host:port).
	Address   []string
	Namespace string
	// Node configures the node; Role must be RoleDriver or RoleWorker, GCS is set by Join.
	Node Config
	// Timeout bounds a driver's wait for its job's worker processes (default
	// DefaultJoinTimeout).
	Timeout time.Duration
	// SubmissionID is recorded in the job (a driver started by rayctl job submit).
	SubmissionID string
	// Credentials are this process's certificate of the cluster's CA: the GCS client and
	// the node's peer connections (Config.Credentials) use them. Nil talks plain text, to
	// a cluster started with --insecure.
	Credentials *identity.Credentials
	// OwnCredentials says that Credentials are this driver's own (it joined with the
	// token): the job records their GCS user (JobInfo.driver_user), whose certificate
	// records the head removes when it takes the driver for dead. Credentials shared with
	// other processes (files an agent gave) are not named.
	OwnCredentials bool
}

// Join connects to the GCS at cfg.Address and starts a node that joins the cluster.
//
// A driver registers its job (jobs/<job>: its executable, content hash and arguments, so
// node agents can start worker processes from the same binary), keeps jobalive/<job> on
// its node's lease, and waits until every live node agent has started the job's worker
// process (or said it cannot run the binary). Stopping the node ends the job.
//
// A worker records itself as running in jobworkers/<job>/<agent>.
func Join(ctx context.Context, cfg JoinConfig) (*Node, error) {
	if len(cfg.Address) == 0 {
		return nil, errors.New("node: join: no GCS address")
	}
	if cfg.Node.Role != RoleDriver && cfg.Node.Role != RoleWorker {
		return nil, fmt.Errorf("node: join: role %q cannot join a cluster", cfg.Node.Role)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultJoinTimeout
	}
	var gcsTLS *tls.Config
	if cfg.Credentials != nil {
		gcsTLS = cfg.Credentials.ClientTLS()
	}
	store, err := etcdstore.New(ctx, etcdstore.Config{Endpoints: cfg.Address, Namespace: cfg.Namespace, Logger: cfg.Node.Logger, TLS: gcsTLS})
	if errors.Is(err, etcdstore.ErrNeedsTLS) || errors.Is(err, etcdstore.ErrTLSRefused) {
		return nil, fmt.Errorf("%w: the cluster's GCS at %s refused this process: %w", ErrCredentials, strings.Join(cfg.Address, ","), err)
	}
	if err != nil {
		return nil, fmt.Errorf("node: the cluster's GCS at %s is unreachable (is `rayctl start` running there?): %w",
			strings.Join(cfg.Address, ","), err)
	}
	ncfg := cfg.Node
	ncfg.GCS = store
	if ncfg.GCSAddress == "" {
		ncfg.GCSAddress = strings.Join(cfg.Address, ",")
	}
	ncfg.Credentials = cfg.Credentials
	if ncfg.Host == "" {
		ncfg.Host = HostFor(cfg.Address[0])
	}
	n, err := Start(ctx, ncfg)
	if err != nil {
		store.Close()
		return nil, err
	}
	n.ownGCS = store
	if ncfg.Role == RoleWorker {
		if err := n.recordWorker(ctx); err != nil {
			n.Stop(context.WithoutCancel(ctx))
			return nil, err
		}
		return n, nil
	}
	if err := n.registerJob(ctx, cfg); err != nil {
		n.Stop(context.WithoutCancel(ctx))
		return nil, err
	}
	if err := n.awaitWorkers(ctx, cfg.Timeout); err != nil {
		n.Stop(context.WithoutCancel(ctx))
		return nil, err
	}
	return n, nil
}

// HostFor returns the address this machine is reached at by the peers of a cluster whose
// GCS is at gcsAddr (host:port): 127.0.0.1 for a GCS on this machine's loopback, else the
// local address of the route to the GCS.
func HostFor(gcsAddr string) string {
	host, _, err := net.SplitHostPort(gcsAddr)
	if err != nil {
		host = gcsAddr
	}
	if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
		return "127.0.0.1"
	}
	c, err := net.Dial("udp", gcsAddr) // no packet is sent: this only picks a route
	if err != nil {
		return "127.0.0.1"
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).IP.String()
}

// holdExecutable hashes this program's executable and ships it: the bytes go to the GCS by
// content hash (package internal/base/ship; stored once however many jobs run the same
// build) and stay there while this driver runs, so agents on machines that do not have the
// file fetch, verify and cache it. The file is kept open from here on: it is uploaded
// again from that descriptor after a GCS outage longer than the blob's lease, even if the
// path was removed or replaced meanwhile.
func (n *Node) holdExecutable(ctx context.Context, exe string) (string, error) {
	f, err := os.Open(exe)
	if err != nil {
		return "", fmt.Errorf("node: open this program's executable %s (worker processes run it): %w", exe, err)
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() > ship.MaxExecutableBytes {
		err = fmt.Errorf("it has %d MiB, more than the %d MiB a cluster ships", fi.Size()>>20, ship.MaxExecutableBytes>>20)
	}
	var sum string
	if err == nil {
		h := sha256.New()
		if _, err = io.Copy(h, io.NewSectionReader(f, 0, fi.Size())); err == nil {
			sum = hex.EncodeToString(h.Sum(nil))
		}
	}
	if err != nil {
		f.Close()
		return "", fmt.Errorf("node: hash this program's executable %s: %w", exe, err)
	}
	// The hold outlives Join (not ctx); the upload does not: Init's ctx ending cuts it short,
	// and so does the loss of the cluster (gcsLost), which also ends the hold for good.
	hctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := func() { cancel(nil) }
	initDone := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	if n.lostCtx != nil {
		context.AfterFunc(n.lostCtx, func() { cancel(context.Cause(n.lostCtx)) })
	}
	done, err := ship.Hold(hctx, n.store, sum, f, fi.Size(), ship.MaxExecutableBytes, n.cfg.Logger)
	if !initDone() && err == nil {
		err = context.Cause(hctx) // ctx ended as the upload did: the hold was stopped
	}
	if err != nil {
		if cause := context.Cause(hctx); cause != nil && !errors.Is(err, cause) {
			err = fmt.Errorf("%w (%v)", cause, err)
		}
		stop()
		f.Close()
		return "", fmt.Errorf("node: ship this program's executable %s (%d bytes) through the GCS: %w", exe, fi.Size(), err)
	}
	n.exeFile, n.exeStop, n.exeDone = f, stop, done
	return sum, nil
}

// releaseExecutable stops holding the executable in the GCS (the blob goes within
// ship.TTL unless another job holds the same build).
func (n *Node) releaseExecutable() {
	if n.exeStop == nil {
		return
	}
	n.exeStop()
	select {
	case <-n.exeDone:
	case <-time.After(5 * time.Second): // the store's keep-alive did not say it stopped
	}
	n.exeFile.Close()
	n.exeStop = nil
}

// commandLine is argv as a shell would take it back (Ray's job entrypoint: the driver's
// command line).
func commandLine(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
		}) < 0 {
			q[i] = a
		} else {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

func (n *Node) registerJob(ctx context.Context, cfg JoinConfig) error {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return fmt.Errorf("node: find this program's executable (worker processes run it): %w", err)
	}
	sum, err := n.holdExecutable(ctx, exe)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	n.job = &pb.JobInfo{JobId: string(n.cfg.Job), State: pb.JobInfo_RUNNING, Executable: exe, Sha256: sum,
		Goos: runtime.GOOS, Goarch: runtime.GOARCH, DriverNode: string(n.ID), DriverHost: host, DriverPid: int32(os.Getpid()),
		StartUnixMs: time.Now().UnixMilli(), SubmissionId: cfg.SubmissionID, Args: os.Args[1:], Namespace: cfg.Namespace,
		RayNamespace:  n.cfg.ActorNamespace,
		DriverAddress: n.system.Address(), Entrypoint: commandLine(os.Args)}
	if cfg.OwnCredentials && cfg.Credentials != nil {
		n.job.DriverUser = cfg.Credentials.User()
	}
	b, _ := proto.Marshal(n.job)
	if _, err := n.store.Put(ctx, gcs.JobKey(string(n.cfg.Job)), b, 0); err != nil {
		return fmt.Errorf("node: register the job: %w", err)
	}
	n.jobAlive.Store(true)
	if _, err := n.store.Put(ctx, gcs.JobAliveKey(string(n.cfg.Job)), []byte(n.ID), n.leaseID()); err != nil {
		return fmt.Errorf("node: register the job: %w", err)
	}
	return nil
}

// endJob records the job's end (Stop of a driver).
func (n *Node) endJob(ctx context.Context) {
	if n.job == nil {
		return
	}
	n.jobAlive.Store(false)
	n.job.State = pb.JobInfo_SUCCEEDED
	n.job.EndUnixMs = time.Now().UnixMilli()
	b, _ := proto.Marshal(n.job)
	jctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if ended := n.endedJob(jctx); ended != nil {
		// The head ended it while this driver was unreachable (driverback.go): final.
		n.cfg.Logger.Warn("node: the job was ended while this driver was unreachable; its record stays", "state", ended.GetState(), "message", ended.GetMessage())
	} else if _, err := n.store.Put(jctx, gcs.JobKey(string(n.cfg.Job)), b, 0); err != nil {
		n.cfg.Logger.Warn("node: cannot record the end of the job", "err", err)
	}
	_, _ = n.store.Delete(jctx, gcs.JobAliveKey(string(n.cfg.Job)))
}

// awaitWorkers waits until every live agent has a running worker process for the job (its
// node is in the view) or said it cannot run it.
func (n *Node) awaitWorkers(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	job := string(n.cfg.Job)
	warned := map[string]bool{} // each problem is logged once, not once per look (every 250 ms)
	for {
		agents, _, err := n.store.List(ctx, gcs.AgentAlivePrefix)
		if err != nil {
			return fmt.Errorf("node: list the node agents: %w", err)
		}
		if len(agents) == 0 {
			return errors.New("node: no node agent is running in the cluster; start one with `rayctl start --head` " +
				"(and `rayctl start --address ...` on other machines)")
		}
		workers, rev, err := n.store.List(ctx, gcs.JobWorkersOf(job))
		if err != nil {
			return fmt.Errorf("node: list the job's worker processes: %w", err)
		}
		state := map[string]*pb.JobWorker{}
		for _, kv := range workers {
			agent, ok := gcs.TrimKey(gcs.JobWorkersOf(job), kv.Key)
			if !ok {
				continue
			}
			w, err := pb.DecodeJobWorker(job, agent, kv.Value)
			if err != nil {
				n.cfg.Logger.Warn("ray: ignoring a corrupt worker record of this job", "key", kv.Key, "err", err)
				continue
			}
			state[agent] = w
		}
		known := map[string]bool{}
		for _, ni := range n.view.Nodes() {
			known[ni.NodeId] = true
		}
		var waiting, problems []string
		running := 0
		for _, kv := range agents {
			agent, _ := gcs.TrimKey(gcs.AgentAlivePrefix, kv.Key)
			w := state[agent]
			switch {
			case w == nil || w.State == pb.JobWorker_STARTING:
				waiting = append(waiting, agent)
			case w.State == pb.JobWorker_RUNNING && known[w.NodeId]:
				running++
			case w.State == pb.JobWorker_RUNNING:
				waiting = append(waiting, agent)
			case w.State == pb.JobWorker_UNSUPPORTED:
				problems = append(problems, fmt.Sprintf("agent %s cannot run this program: %s", agent, w.Message))
			default:
				waiting = append(waiting, agent)
				if w.Message != "" {
					problems = append(problems, fmt.Sprintf("agent %s: worker process exited: %s (log: %s)", agent, w.Message, w.LogPath))
				}
			}
		}
		sort.Strings(problems)
		for _, p := range problems {
			if !warned[p] {
				warned[p] = true
				n.cfg.Logger.Warn("ray: " + p)
			}
		}
		if len(waiting) == 0 {
			if running == 0 {
				return fmt.Errorf("node: no node of the cluster can run this job: %s", strings.Join(problems, "; "))
			}
			return nil
		}
		// Wait for a change of the job's worker records (or a node joining the view).
		wctx, wcancel := context.WithTimeout(ctx, 250*time.Millisecond)
		for resp := range n.store.Watch(wctx, gcs.JobWorkersOf(job), rev+1) {
			if resp.Err != nil || len(resp.Events) > 0 {
				break
			}
		}
		wcancel()
		if ctx.Err() != nil {
			if running > 0 {
				n.cfg.Logger.Warn("ray: starting the job without some nodes: their worker processes did not start in time",
					"agents", strings.Join(waiting, ","), "timeout", timeout)
				return nil
			}
			msg := fmt.Sprintf("node: no worker process of this job started within %v on agents %s", timeout, strings.Join(waiting, ","))
			if len(problems) > 0 {
				msg += ": " + strings.Join(problems, "; ")
			}
			return errors.New(msg + "; see the agents' logs under their session directories (rayctl status shows them)")
		}
	}
}

// recordWorker marks the worker process as running (the agent wrote STARTING).
func (n *Node) recordWorker(ctx context.Context) error {
	key := gcs.JobWorkerKey(string(n.cfg.Job), n.cfg.AgentID)
	w := &pb.JobWorker{}
	if kv, ok, err := n.store.Get(ctx, key); err == nil && ok {
		_ = proto.Unmarshal(kv.Value, w)
	}
	w.JobId, w.AgentId, w.State, w.Pid, w.NodeId, w.Message = string(n.cfg.Job), n.cfg.AgentID, pb.JobWorker_RUNNING, int32(os.Getpid()), string(n.ID), ""
	b, _ := proto.Marshal(w)
	if _, err := n.store.Put(ctx, key, b, 0); err != nil {
		return fmt.Errorf("node: record the worker process: %w", err)
	}
	return nil
}

// ownerGoneGrace is how long a worker process keeps serving while its job's alive key or
// its agent's liveness key is missing from the GCS: both are on leases that a GCS outage
// longer than their TTL expires, and a live driver and agent write them again within
// seconds of the GCS answering (node.keepLease, the agent's liveness loop). A job that
// really ended says so sooner: its record leaves RUNNING (the driver's Shutdown, or the
// head failing a job whose driver died) and the agent stops its worker.
const ownerGoneGrace = 15 * time.Second

// agentHere reports whether this worker process's agent is alive: its machine ledger
// connection (a Unix socket to the agent of this machine) is open. False without one.
func (n *Node) agentHere() bool {
	if n.machine == nil {
		return false
	}
	select {
	case <-n.machine.Done():
		return false
	default:
		return true
	}
}

// ServeWorker runs a worker process until ctx ends or its job or agent goes away, then
// stops the node. It returns the reason it stopped. A job that ended (or whose driver is
// gone) does not stop it while its actor manager knows a detached actor of the job that is
// not dead: detached actors outlive their job. A GCS that does not answer stops it only
// when no agent of this machine is alive either (gcsUnreachableTicks looks in a row): the
// agent rides out a head's outage, and the worker process, with its actors, does too.
func (n *Node) ServeWorker(ctx context.Context) string {
	reason := n.serveWorker(ctx)
	n.Stop(context.Background())
	return reason
}

// serveWorkerTick is how often ServeWorker looks at its job and agent, and
// gcsUnreachableTicks how many looks in a row may find the GCS unreachable, with no agent
// alive here, before it stops.
var (
	serveWorkerTick     = time.Second
	gcsUnreachableTicks = 30
)

// serveWorker is ServeWorker's loop: it returns the reason to stop.
func (n *Node) serveWorker(ctx context.Context) string {
	job, agent := string(n.cfg.Job), n.cfg.AgentID
	t := time.NewTicker(serveWorkerTick)
	defer t.Stop()
	unreachable := 0
	var jobGone, agentGone time.Time // when the key was first seen missing (zero: present)
	reason := ""
	for reason == "" {
		select {
		case <-ctx.Done():
			reason = "signalled"
			continue
		case <-t.C:
		}
		now := time.Now()
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, jobAlive, err1 := n.store.Get(cctx, gcs.JobAliveKey(job))
		agentAlive := true
		var err2 error
		if agent != "" {
			_, agentAlive, err2 = n.store.Get(cctx, gcs.AgentAliveKey(agent))
		}
		var ended bool
		var err3 error
		if err1 == nil && !jobAlive {
			ended, err3 = n.jobEnded(cctx)
		}
		cancel()
		if err1 != nil || err2 != nil || err3 != nil {
			if n.agentHere() {
				// The GCS is down or unreachable, and this machine's agent, which rides
				// out such an outage (it rejoins a restarted head), is alive: so is this
				// process, with its job's actors, detached ones included. It ends when its
				// agent does (the agent stops its worker processes).
				unreachable = 0
				continue
			}
			unreachable++ // GCS unreachable, and no agent to tell: give it a while
			if unreachable >= gcsUnreachableTicks {
				reason = "the GCS is unreachable"
			}
			continue
		}
		unreachable = 0
		switch {
		case jobAlive:
			jobGone = time.Time{}
		case n.actors != nil && n.actors.LiveDetached():
			// The job's detached actors outlive it: its worker processes serve on (the
			// agent keeps them) until the last of them dies.
			jobGone = time.Time{}
		case ended:
			reason = "the job ended"
		case jobGone.IsZero():
			jobGone = now
		case now.Sub(jobGone) >= ownerGoneGrace:
			reason = "the job's driver is gone"
		}
		switch {
		case agentAlive:
			agentGone = time.Time{}
		case agentGone.IsZero():
			agentGone = now
		case now.Sub(agentGone) >= ownerGoneGrace && reason == "":
			reason = "its node agent is gone"
		}
	}
	return reason
}

// jobEnded reports whether the job's record says it is no longer running (or is gone).
func (n *Node) jobEnded(ctx context.Context) (bool, error) {
	kv, ok, err := n.store.Get(ctx, gcs.JobKey(string(n.cfg.Job)))
	if err != nil {
		return false, err
	}
	if !ok {
		return true, nil
	}
	info := &pb.JobInfo{}
	if err := proto.Unmarshal(kv.Value, info); err != nil {
		return false, nil // a record this worker cannot read ends nothing; the agent decides
	}
	return info.GetState() != pb.JobInfo_RUNNING, nil
}
