package membership

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"

	"github.com/ray-go/ray/internal/base/ask"
	"github.com/ray-go/ray/internal/base/gcs"
)

// MembershipActorName is the name of the membership actor every Provider spawns. Peers
// remote-Watch it to learn within milliseconds that this process died.
const MembershipActorName = "ray-membership"

// Config configures a Provider. Zero durations take the defaults shown.
type Config struct {
	// Store is the GCS. Required.
	Store gcs.Store
	// NodeID is this member's node ID, registered as metadata and used to resolve
	// node-pinned identities. Required for StartMember; may be empty for a client.
	NodeID string
	// LeaseTTL is the TTL of the registration lease (default 3 s; etcd counts whole
	// seconds, rounding up, and at least 1 s). A member that stops renewing disappears
	// from the others' topology within about this long.
	LeaseTTL time.Duration
	// CallTimeout bounds one GCS call (default 1 s).
	CallTimeout time.Duration
	// RetryInterval is the first pause after a failed GCS call; it doubles up to LeaseTTL
	// (default 100 ms).
	RetryInterval time.Duration
	// StartTimeout bounds how long StartMember/StartClient try to reach the GCS
	// (default 5 s).
	StartTimeout time.Duration
	// ProbeInterval is the first delay before probing a member whose membership actor
	// reported Terminated; it doubles up to LeaseTTL (default 100 ms).
	ProbeInterval time.Duration
	// ProbeTimeout bounds one probe (default 500 ms).
	ProbeTimeout time.Duration
	// GCSLostAfter and GCSLost (both optional, members only): when the lease was lost and
	// the GCS has still not answered GCSLostAfter later (recover retrying all along), the
	// provider calls GCSLost once, with how long that was, on a goroutine of its own. The
	// lease is lost after LeaseTTL without an answer, so the GCS has then been silent for
	// about LeaseTTL+GCSLostAfter. An outage that ends sooner calls nothing; the provider
	// keeps trying to register again either way: what the silence means is the caller's
	// decision (a driver's node fails its runtime: package node, Config.GCSTimeout).
	GCSLostAfter time.Duration
	GCSLost      func(unanswered time.Duration)
	// GCSAddress is where the GCS is, for the log of an outage (optional).
	GCSAddress string
	// Logger defaults to the actor system's logger.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.LeaseTTL, 3*time.Second)
	def(&c.CallTimeout, time.Second)
	def(&c.RetryInterval, 100*time.Millisecond)
	def(&c.StartTimeout, 5*time.Second)
	def(&c.ProbeInterval, 100*time.Millisecond)
	def(&c.ProbeTimeout, 500*time.Millisecond)
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.Store == nil {
		return errors.New("membership: Config.Store is nil")
	}
	if strings.Contains(c.NodeID, "/") {
		return fmt.Errorf("membership: node ID %q contains '/'", c.NodeID)
	}
	for _, d := range []time.Duration{c.LeaseTTL, c.CallTimeout, c.RetryInterval, c.StartTimeout, c.ProbeInterval, c.ProbeTimeout, c.GCSLostAfter} {
		if d < 0 {
			return errors.New("membership: negative duration in Config")
		}
	}
	return nil
}

// Provider is a cluster.ClusterProvider over the GCS. See the package doc.
//
// It also implements Resolver for Lookup: MemberForNode reads an immutable snapshot
// (an atomic pointer load and a map read).
type Provider struct {
	cfg   Config
	store gcs.Store

	mu          sync.Mutex // guards the lifecycle fields below
	started     bool
	shut        bool
	revoked     bool
	lease       gcs.LeaseID
	incarnation int

	// set once by start, read-only afterwards
	cl      *cluster.Cluster
	system  *actor.ActorSystem
	log     *slog.Logger
	outage  *outage // what the log says of the GCS not answering
	client  bool
	ctx     context.Context
	cancel  context.CancelFunc
	monitor *actor.PID
	host    string
	port    int
	kinds   []string

	wg sync.WaitGroup

	nodes    atomic.Pointer[map[string]MemberInfo] // node ID -> reachable member
	suspects atomic.Pointer[map[string]bool]       // node IDs of Suspects
	self     atomic.Pointer[MemberInfo]            // current own registration (members only)
}

var (
	_ cluster.ClusterProvider = (*Provider)(nil)
	_ Resolver                = (*Provider)(nil)
)

// NewProvider returns a Provider; it does nothing until the cluster starts it.
func NewProvider(cfg Config) (*Provider, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &Provider{cfg: cfg, store: cfg.Store}, nil
}

// StartMember registers this member (under a lease kept alive and re-acquired when lost)
// and publishes the topology. Called by cluster.StartMember, which panics on an error.
func (p *Provider) StartMember(c *cluster.Cluster) error { return p.start(c, false) }

// StartClient watches the members without registering. Called by cluster.StartClient.
func (p *Provider) StartClient(c *cluster.Cluster) error { return p.start(c, true) }

// Shutdown stops the provider's goroutines and its membership actor. With graceful it
// also revokes the lease, so the others see this member leave at once; without, the
// registration expires after LeaseTTL, as for a crash. It may be called more than once
// (cluster.Shutdown(true) calls it; cluster.Shutdown(false) does not, so call it yourself).
func (p *Provider) Shutdown(graceful bool) error {
	p.mu.Lock()
	if !p.started {
		p.mu.Unlock()
		return nil
	}
	first := !p.shut
	p.shut = true
	cancel := p.cancel
	monitor := p.monitor
	p.mu.Unlock()

	cancel()
	p.wg.Wait()
	if first && monitor != nil {
		p.system.Root.Poison(monitor)
	}
	if !graceful {
		return nil
	}
	p.mu.Lock()
	lease, revoked := p.lease, p.revoked
	p.revoked = true
	p.mu.Unlock()
	if lease == 0 || revoked {
		return nil
	}
	// The revoke only hastens what the lease's expiry does anyway: a GCS too busy to
	// answer within revokeTimeout (a loaded machine) delays the others' noticing by at
	// most LeaseTTL, and is not a failure of the shutdown.
	rctx, rcancel := context.WithTimeout(context.Background(), max(p.cfg.CallTimeout, revokeTimeout))
	defer rcancel()
	if err := p.store.Revoke(rctx, lease); err != nil && !errors.Is(err, gcs.ErrLeaseNotFound) {
		if rctx.Err() == nil {
			return fmt.Errorf("membership: revoke lease: %w", err)
		}
		p.log.Warn("membership: leaving without revoking the lease: the GCS did not answer in time; the others see this member leave when the lease expires",
			"lease_ttl", p.cfg.LeaseTTL, "err", err)
	}
	return nil
}

// revokeTimeout bounds a graceful leave's lease revoke.
const revokeTimeout = 5 * time.Second

// MemberForNode returns the member incarnation that registered nodeID, if it is live and
// reachable as far as this process knows. This process's own registration is always
// included while the provider runs (even while its lease is being re-acquired).
func (p *Provider) MemberForNode(nodeID string) (MemberInfo, bool) {
	idx := p.nodes.Load()
	if idx == nil {
		return MemberInfo{}, false
	}
	m, ok := (*idx)[nodeID]
	return m, ok
}

// LocalNodeID returns Config.NodeID for a member and "" for a client or before start.
func (p *Provider) LocalNodeID() string {
	if m := p.self.Load(); m != nil {
		return m.NodeID
	}
	return ""
}

// Self returns this member's current registration.
func (p *Provider) Self() (MemberInfo, bool) {
	if m := p.self.Load(); m != nil {
		return *m, true
	}
	return MemberInfo{}, false
}

// Nodes returns the reachable members by node ID (a snapshot; do not modify).
func (p *Provider) Nodes() map[string]MemberInfo {
	if idx := p.nodes.Load(); idx != nil {
		return *idx
	}
	return nil
}

// Suspects returns the node IDs of registered members that are unreachable (their
// connection broke) while nothing says their process is gone: their address has not
// refused a connection and their key is still there, so their process may live (a
// connection broken under load, a stall). They are not in Nodes (nothing is routed or
// placed there); what is final for a dead process, such as an actor's host dying, waits
// until they are reachable again (back in Nodes), refuse connections (MemberDown) or
// their key goes (MemberLeft, MemberGone). A snapshot; do not modify.
func (p *Provider) Suspects() map[string]bool {
	if s := p.suspects.Load(); s != nil {
		return *s
	}
	return nil
}

func (p *Provider) start(c *cluster.Cluster, client bool) error {
	if !client && p.cfg.NodeID == "" {
		return errors.New("membership: StartMember needs Config.NodeID")
	}
	host, port, err := splitHostPort(c.ActorSystem.Address())
	if err != nil {
		return fmt.Errorf("membership: actor system address: %w", err)
	}
	p.mu.Lock()
	if p.started {
		p.mu.Unlock()
		return errors.New("membership: provider already started")
	}
	p.started = true
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.mu.Unlock()

	p.cl = c
	p.system = c.ActorSystem
	p.client = client
	p.log = p.cfg.Logger
	if p.log == nil {
		p.log = c.Logger()
	}
	p.log = p.log.With(slog.String("component", "membership"))
	p.outage = newOutage(p.log, p.cfg.GCSAddress)
	p.host, p.port = host, port
	p.kinds = c.GetClusterKinds()

	monitor, err := p.system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return newMonitor(p) }), MembershipActorName)
	if err != nil {
		p.cancel()
		return fmt.Errorf("membership: spawn membership actor: %w", err)
	}
	p.mu.Lock()
	p.monitor = monitor
	p.mu.Unlock()

	fail := func(err error) error {
		p.cancel()
		p.system.Root.Poison(p.monitor)
		return err
	}
	sctx, scancel := context.WithTimeout(p.ctx, p.cfg.StartTimeout)
	defer scancel()
	var (
		kvs []gcs.KV
		rev int64
	)
	err = p.retry(sctx, "list members", func(ctx context.Context) error {
		var err error
		kvs, rev, err = p.store.List(ctx, gcs.MembersPrefix)
		return err
	})
	if err != nil {
		return fail(err)
	}
	p.system.Root.Send(p.monitor, &snapshotMsg{kvs: kvs})

	var (
		lease gcs.LeaseID
		lost  <-chan struct{}
	)
	if !client {
		lease, lost, err = p.register(sctx)
		if err != nil {
			return fail(err)
		}
	}
	// Let the membership actor publish the first topology before we return, as the stock
	// providers do.
	if _, err := ask.Request(p.system.Root, p.monitor, syncMsg{}, p.cfg.StartTimeout); err != nil {
		return fail(fmt.Errorf("membership: first topology: %w", err))
	}

	p.wg.Add(2)
	go p.watchLoop(rev)
	go p.stopWatcher()
	if !client {
		p.wg.Add(1)
		go p.leaseLoop(lease, lost)
	}
	return nil
}

// register grants a lease, writes our key under it and starts the keep-alive, retrying
// until it works or ctx ends. Every attempt uses a new incarnation: an ID that peers may
// have seen deleted is blocked in their MemberList for good.
func (p *Provider) register(ctx context.Context) (gcs.LeaseID, <-chan struct{}, error) {
	var (
		info  MemberInfo
		lease gcs.LeaseID
		lost  <-chan struct{}
	)
	err := p.retry(ctx, "register member", func(cctx context.Context) error {
		p.mu.Lock()
		p.incarnation++
		inc := p.incarnation
		p.mu.Unlock()
		info = MemberInfo{
			ID:      p.system.ID + "#" + strconv.Itoa(inc),
			NodeID:  p.cfg.NodeID,
			Address: p.system.Address(),
			Host:    p.host,
			Port:    p.port,
			Kinds:   p.kinds,
		}
		id, err := p.store.Grant(cctx, p.cfg.LeaseTTL)
		if err != nil {
			return fmt.Errorf("grant: %w", err)
		}
		rev, err := p.store.Put(cctx, gcs.MemberKey(info.ID), info.marshal(), id)
		if err != nil {
			p.revokeQuietly(id)
			return fmt.Errorf("put: %w", err)
		}
		l, err := p.store.KeepAlive(p.ctx, id)
		if err != nil {
			p.revokeQuietly(id)
			return fmt.Errorf("keepalive: %w", err)
		}
		info.Rev = rev
		lease, lost = id, l
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	p.mu.Lock()
	p.lease = lease
	p.mu.Unlock()
	p.self.Store(&info)
	p.system.Root.Send(p.monitor, &selfMsg{info: info})
	p.log.Debug("registered", slog.String("member", info.ID), slog.String("node", info.NodeID), slog.Int64("lease", int64(lease)))
	return lease, lost, nil
}

func (p *Provider) revokeQuietly(id gcs.LeaseID) {
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.CallTimeout)
	defer cancel()
	_ = p.store.Revoke(ctx, id)
}

// leaseLoop re-registers after the lease is lost (expired while the GCS was unreachable,
// or revoked), which the stock etcd provider cannot do.
func (p *Provider) leaseLoop(lease gcs.LeaseID, lost <-chan struct{}) {
	defer p.wg.Done()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-lost:
		}
		if p.ctx.Err() != nil {
			return
		}
		var silent *time.Timer
		if p.cfg.GCSLost != nil && p.cfg.GCSLostAfter > 0 {
			since := time.Now()
			silent = time.AfterFunc(p.cfg.GCSLostAfter, func() {
				if p.ctx.Err() == nil {
					p.cfg.GCSLost(p.cfg.LeaseTTL + time.Since(since))
				}
			})
		}
		var err error
		lease, lost, err = p.recover(lease)
		if silent != nil {
			silent.Stop() // the GCS answered (or the provider stops): the outage is over
		}
		if err != nil {
			return // only when p.ctx ended or the store was closed
		}
	}
}

// reregisterRetry is the longest pause between recover's attempts to reach the GCS.
const reregisterRetry = time.Second

// recover resumes the keep-alive if the lease still holds our key (the client gives up
// when renewals come late, e.g. under load, while the server may still have the lease);
// otherwise it registers a new incarnation.
func (p *Provider) recover(lease gcs.LeaseID) (gcs.LeaseID, <-chan struct{}, error) {
	self, _ := p.Self()
	var lost <-chan struct{}
	// Retried at most reregisterRetry apart: once the GCS answers again the new
	// incarnation must be in well within the grace period in which peers keep this node
	// (LeaseTTL, see MemberGone).
	err := retryCall(p.ctx, p.outage, "check lease", p.cfg.CallTimeout, p.cfg.RetryInterval, min(reregisterRetry, p.cfg.LeaseTTL), func(ctx context.Context) error {
		kv, found, err := p.store.Get(ctx, gcs.MemberKey(self.ID))
		if err != nil || !found || kv.Lease != lease {
			return err
		}
		l, err := p.store.KeepAlive(p.ctx, lease)
		if err != nil && !errors.Is(err, gcs.ErrLeaseNotFound) {
			return err
		}
		lost = l
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	if lost != nil {
		p.log.Info("membership keep-alive resumed", slog.String("member", self.ID), slog.Int64("lease", int64(lease)))
		return lease, lost, nil
	}
	p.log.Warn("membership lease lost; registering a new incarnation",
		slog.String("member", self.ID), slog.Int64("lease", int64(lease)))
	p.revokeQuietly(lease) // in case it survives after all
	return p.register(p.ctx)
}

// watchLoop follows members/ from rev+1, re-listing when the watch fails.
func (p *Provider) watchLoop(rev int64) {
	defer p.wg.Done()
	from := rev + 1
	for {
		wch := p.store.Watch(p.ctx, gcs.MembersPrefix, from)
		for resp := range wch {
			if resp.Err != nil {
				p.log.Warn("members watch failed; re-listing", slog.Any("error", resp.Err))
				continue // the store closes the channel after an error
			}
			if len(resp.Events) == 0 {
				continue
			}
			// A watch that ends is followed by a fresh listing, which sets from again.
			p.system.Root.Send(p.monitor, &eventsMsg{events: resp.Events})
		}
		if !sleepCtx(p.ctx, p.cfg.RetryInterval) {
			return
		}
		var kvs []gcs.KV
		err := p.retry(p.ctx, "list members", func(ctx context.Context) error {
			var err error
			kvs, rev, err = p.store.List(ctx, gcs.MembersPrefix)
			return err
		})
		if err != nil {
			return
		}
		p.system.Root.Send(p.monitor, &snapshotMsg{kvs: kvs})
		from = rev + 1
	}
}

// stopWatcher ends the provider's loops once the actor system is shut down, which is all
// cluster.Shutdown(false) does to it: the keep-alive stops and the registration expires
// after LeaseTTL, as it would for a crash.
func (p *Provider) stopWatcher() {
	defer p.wg.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
			if p.system.IsStopped() {
				p.log.Debug("actor system stopped; stopping membership")
				p.cancel()
				return
			}
		}
	}
}

// retry calls f with a CallTimeout context until it succeeds, ctx ends or the store is
// closed, pausing RetryInterval (doubling up to LeaseTTL) between attempts.
func (p *Provider) retry(ctx context.Context, what string, f func(context.Context) error) error {
	return retryCall(ctx, p.outage, what, p.cfg.CallTimeout, p.cfg.RetryInterval, p.cfg.LeaseTTL, f)
}

// retryCall calls f (GCS call what) with a timeout context until it succeeds, ctx ends or
// the store is closed, pausing first (doubling up to max) between attempts. The failures
// and the success after them go to o, which logs the outage once, not every attempt.
func retryCall(ctx context.Context, o *outage, what string, timeout, first, max time.Duration, f func(context.Context) error) error {
	backoff := first
	for {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		err := f(cctx)
		cancel()
		if err == nil {
			o.answered()
			return nil
		}
		if ctx.Err() != nil || errors.Is(err, gcs.ErrClosed) {
			return fmt.Errorf("membership: %s: %w", what, err)
		}
		o.failed(what, err)
		if !sleepCtx(ctx, backoff) {
			return fmt.Errorf("membership: %s: %w", what, err)
		}
		backoff = min(2*backoff, max)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func splitHostPort(addr string) (string, int, error) {
	h, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(ps)
	if err != nil {
		return "", 0, err
	}
	return h, port, nil
}
