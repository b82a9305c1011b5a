// Package testcluster runs a cluster of several nodes inside one process, on 127.0.0.1,
// sharing one embedded etcd (the GCS), for tests that need more than one node: actor
// failover, placement across members. Each node is a real protoactor cluster member with
// its own remote (gRPC server), raylet, workers, store shard, actor grains and runtime.
//
// Security is on, as in local mode and a real cluster: a CA made in memory for the
// cluster (its key never written), the embedded etcd listening with mutual TLS under it
// (the nodes use its in-process client), and each node holding a certificate of the CA,
// so their protoactor remotes and object data streams speak mutual TLS to each other.
//
// Fault injection: StopNode takes a node out of the cluster (its grains stop, its
// membership lease is revoked, its remote shuts down) while the others keep running;
// CrashNode does it as a killed process would (nothing handed over, leases left to expire).
//
// Several protoactor remotes in one process need care under the race detector (see
// internal/assembly/node's syncGRPCServer): the nodes start one after another, each synced with
// every gRPC server started before it. A process should start at most one Cluster under
// -race: the remotes of a stopped cluster leave gRPC goroutines behind.
package testcluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/assembly/node"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/etcdstore"
	"github.com/ray-go/ray/internal/base/identity"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/tasks/sched"
)

// Config configures a Cluster.
type Config struct {
	Nodes int     // default 2
	CPUs  float64 // per node, default 2
	// Custom gives node i custom resources besides its CPUs, e.g. {1: {"accel": 1}}.
	Custom map[int]map[string]float64
	Logger *slog.Logger
	// TuneGCS, when set, adjusts the embedded etcd's configuration before it starts (a
	// small QuotaBytes, a frequent defragmentation).
	TuneGCS func(*etcdstore.EmbedConfig)
	// WrapGCS, if set, wraps the GCS client the nodes use (not the compactor's): what
	// benchmarks/scale counts the control plane's GCS traffic with.
	WrapGCS func(gcs.Store) gcs.Store
	// MessageTap, if set, is node i's node.Config.MessageTap (node(i)): what
	// benchmarks/scale counts the nodes' messages by type with.
	MessageTap func(node int) func(role string, msg any)
	// LeaseTTL is each node's node.Config.LeaseTTL (0: the default): benchmarks/scale
	// lengthens it so that dozens of nodes in one process on a loaded machine keep their
	// registrations while they starve for CPU.
	LeaseTTL time.Duration
}

// Cluster is a running in-process cluster.
type Cluster struct {
	Nodes []*node.Node
	GCS   gcs.Store
	// CA is the cluster's certificate authority (in memory only): tests issue
	// certificates of it, e.g. to reach the GCS or a node as a member would.
	CA *identity.CA
	// GCSEndpoints are the embedded etcd's client URLs (https, mutual TLS under CA).
	GCSEndpoints []string

	dir       string
	etcd      *etcdstore.Embedded
	compactor *gcs.Compactor

	mu      sync.Mutex
	stopped []bool
}

// Start starts the GCS and cfg.Nodes nodes.
func Start(ctx context.Context, cfg Config) (c *Cluster, err error) {
	if cfg.Nodes <= 0 {
		cfg.Nodes = 2
	}
	if cfg.CPUs <= 0 {
		cfg.CPUs = 2
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	c = &Cluster{}
	started := c // the error returns below set c to nil before this runs
	defer func() {
		if err != nil {
			started.Stop(context.Background())
		}
	}()
	if c.dir, err = os.MkdirTemp("", "ray-go-testcluster-"); err != nil {
		return nil, err
	}
	if c.CA, err = identity.NewCA("ray-go testcluster", time.Now()); err != nil {
		return nil, fmt.Errorf("testcluster: %w", err)
	}
	gcsCreds, err := c.CA.Issue(identity.Request{Name: "gcs", Role: identity.RoleHead})
	if err != nil {
		return nil, fmt.Errorf("testcluster: %w", err)
	}
	files, err := gcsCreds.Save(filepath.Join(c.dir, "tls"))
	if err != nil {
		return nil, fmt.Errorf("testcluster: %w", err)
	}
	ecfg := etcdstore.EmbedConfig{Dir: filepath.Join(c.dir, "gcs"), Name: "gcs-test", Logger: cfg.Logger, TLS: files, NoPeerListener: true}
	if cfg.TuneGCS != nil {
		cfg.TuneGCS(&ecfg)
	}
	if c.etcd, err = etcdstore.StartEmbedded(ctx, ecfg); err != nil {
		return nil, fmt.Errorf("testcluster: start etcd: %w", err)
	}
	c.GCS = c.etcd.Client()
	c.GCSEndpoints = c.etcd.Endpoints()
	c.compactor = gcs.NewCompactor(c.GCS, gcs.CompactorConfig{Logger: cfg.Logger})
	nodeGCS := c.GCS
	if cfg.WrapGCS != nil {
		nodeGCS = cfg.WrapGCS(c.GCS)
	}
	// Every gRPC server a node syncs with before its remote starts (see below) speaks
	// TLS: the etcd's URLs are https already, the nodes' addresses are given the scheme.
	sync := c.etcd.Endpoints()
	resOf := func(i int) (sched.Resources, error) {
		m := map[string]float64{sched.CPU: cfg.CPUs}
		for k, v := range cfg.Custom[i] {
			m[k] = v
		}
		return sched.FromMap(m)
	}
	_, err = resOf(0)
	if err != nil {
		return nil, err
	}
	// The nodes' remotes start one after another, each synced with every gRPC server
	// started before it, and none registers (so none dials another) until all have
	// started: protoactor's remote.Start writes a gRPC global that running gRPC
	// goroutines read (see internal/assembly/node's syncGRPCServer).
	gate := make(chan struct{})
	job := ids.NewJobID() // one job: every node runs the others' tasks and actors
	type result struct {
		n   *node.Node
		err error
	}
	results := make([]chan result, cfg.Nodes)
	opened := false
	defer func() {
		if !opened {
			close(gate)
		}
		for _, r := range results {
			if r == nil {
				continue
			}
			// started, not c: an error return has set c to nil by now, and the nodes that
			// did start must still be collected for the Stop above.
			if res := <-r; res.n != nil {
				started.Nodes = append(started.Nodes, res.n)
				started.stopped = append(started.stopped, false)
			} else if err == nil {
				err = res.err
			}
		}
	}()
	for i := range cfg.Nodes {
		started := make(chan string, 1)
		res, err := resOf(i)
		if err != nil {
			return nil, err
		}
		creds, err := c.CA.Issue(identity.Request{Name: fmt.Sprintf("testcluster-node-%d", i), Role: identity.RoleNode})
		if err != nil {
			return nil, fmt.Errorf("testcluster: %w", err)
		}
		ncfg := node.Config{
			Job: job, Resources: res, GCS: nodeGCS, Dir: filepath.Join(c.dir, fmt.Sprintf("node-%d", i)),
			Lineage: true, SyncAddrs: append([]string(nil), sync...), Logger: cfg.Logger,
			Gate: gate, RemoteStarted: func(addr string) { started <- addr }, Credentials: creds,
		}
		if cfg.MessageTap != nil {
			ncfg.MessageTap = cfg.MessageTap(i)
		}
		ncfg.LeaseTTL = cfg.LeaseTTL
		results[i] = make(chan result, 1) // from here on, node i's start is collected (deferred above)
		go func(i int) {
			n, err := node.Start(ctx, ncfg)
			if err != nil {
				err = fmt.Errorf("testcluster: start node %d: %w", i, err)
				select {
				case started <- "":
				default:
				}
			}
			results[i] <- result{n, err}
		}(i)
		addr := <-started
		if addr == "" {
			res := <-results[i]
			results[i] <- res // for the deferred collection
			return nil, fmt.Errorf("testcluster: node %d did not start: %w", i, res.err)
		}
		sync = append(sync, "https://"+addr)
	}
	close(gate)
	opened = true
	return c, nil
}

// AwaitViews waits until every running node's cluster view lists every running node
// (node records reach the others through an etcd watch, a few milliseconds after Start).
func (c *Cluster) AwaitViews(ctx context.Context) error {
	for {
		running := 0
		for i := range c.Nodes {
			if !c.Stopped(i) {
				running++
			}
		}
		complete := true
		for i, n := range c.Nodes {
			if !c.Stopped(i) && len(n.Core.NodeInfos()) != running {
				complete = false
			}
		}
		if complete {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testcluster: the nodes' views did not converge: %w", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Context returns a driver context on node i: the root API (package ray) called with it
// submits through that node's runtime.
func (c *Cluster) Context(ctx context.Context, i int) context.Context {
	return core.WithTask(ctx, c.Nodes[i].Core.NewDriver())
}

// Index returns the index of the node with the given ID, or -1.
func (c *Cluster) Index(nodeID string) int {
	for i, n := range c.Nodes {
		if string(n.ID) == nodeID {
			return i
		}
	}
	return -1
}

// Stopped reports whether node i was stopped.
func (c *Cluster) Stopped(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopped[i]
}

// StopNode takes node i out of the cluster.
func (c *Cluster) StopNode(ctx context.Context, i int) error {
	return c.takeOut(i, func() error { return c.Nodes[i].Stop(ctx) })
}

// CrashNode takes node i out of the cluster as if its process had been killed
// (node.Node.Crash): its runtime removes nothing and hands nothing over, its leases expire
// with their TTL and connections to it are refused.
func (c *Cluster) CrashNode(ctx context.Context, i int) error {
	return c.takeOut(i, func() error { return c.Nodes[i].Crash(ctx) })
}

// takeOut marks node i stopped and calls stop, once.
func (c *Cluster) takeOut(i int, stop func() error) error {
	c.mu.Lock()
	if c.stopped[i] {
		c.mu.Unlock()
		return nil
	}
	c.stopped[i] = true
	c.mu.Unlock()
	return stop()
}

// Stop stops every node, then the GCS, and removes the cluster's files.
func (c *Cluster) Stop(ctx context.Context) error {
	var errs []error
	for i := range c.Nodes {
		if err := c.StopNode(ctx, i); err != nil {
			errs = append(errs, err)
		}
	}
	if c.compactor != nil {
		c.compactor.Stop()
	}
	if c.etcd != nil {
		if err := c.etcd.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.dir != "" {
		errs = append(errs, os.RemoveAll(c.dir))
	}
	return errors.Join(errs...)
}
