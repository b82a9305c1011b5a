package membership

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/eventstream"

	"github.com/ray-go/ray/internal/base/ask"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/netx"
)

// ActivatorName is the name of the lookup actor every cluster member (and client) runs:
// it activates grains on request (cluster.ActivationRequest / ActivationResponse, which
// are protobuf and so cross processes) and watches every PID the Lookup caches.
const ActivatorName = "ray-activator"

// Resolver maps node IDs to members. *Provider implements it.
//
// Contract: both methods are cheap and safe for concurrent use (Get calls them on its
// slow path); MemberForNode reports only members believed alive and reachable.
type Resolver interface {
	MemberForNode(nodeID string) (MemberInfo, bool)
	// LocalNodeID is this process's node ID, or "" if it hosts no grains (a client).
	LocalNodeID() string
}

// LookupConfig configures a Lookup. Zero durations take the defaults shown.
type LookupConfig struct {
	// Store is the GCS, for placement/. Required.
	Store gcs.Store
	// Resolver maps node IDs to members. Nil means the cluster's ClusterProvider, which
	// must then implement Resolver (a *Provider does).
	Resolver Resolver
	// ActivationTimeout bounds one activation request (default 1 s).
	ActivationTimeout time.Duration
	// StoreTimeout bounds the direct placement read on a cache miss (default 500 ms).
	StoreTimeout time.Duration
	// ParsePlacement returns the node ID in a placement/<actorID> value. Nil means the
	// value is the node ID itself. (For when the record grows, e.g. a fencing epoch.)
	ParsePlacement func(value []byte) (nodeID string, err error)
	// GCSAddress is where the GCS is, for the log of an outage (optional).
	GCSAddress string
	// Logger defaults to the actor system's logger.
	Logger *slog.Logger
}

// Validate reports a configuration that cannot work.
func (c LookupConfig) Validate() error {
	if c.Store == nil {
		return errors.New("membership: LookupConfig.Store is nil")
	}
	if c.ActivationTimeout < 0 || c.StoreTimeout < 0 {
		return errors.New("membership: negative duration in LookupConfig")
	}
	return nil
}

// Lookup is a cluster.IdentityLookup over the GCS placement table. See the package doc.
type Lookup struct {
	cfg LookupConfig

	// set by Setup, read-only afterwards
	cl       *cluster.Cluster
	system   *actor.ActorSystem
	log      *slog.Logger
	outage   *outage // what the log says of the GCS not answering
	resolver Resolver
	client   bool
	actorPID *actor.PID
	ctx      context.Context
	cancel   context.CancelFunc
	sub      *eventstream.Subscription

	pids   pidCache
	places placementCache

	flightMu sync.Mutex
	flights  map[string]*flight

	wg           sync.WaitGroup
	shutdownOnce sync.Once
}

// flight is one in-progress resolution that concurrent Gets of the same key wait for.
type flight struct {
	done chan struct{}
	pid  *actor.PID
}

var _ cluster.IdentityLookup = (*Lookup)(nil)

// NewLookup returns a Lookup; it does nothing until the cluster calls Setup.
func NewLookup(cfg LookupConfig) (*Lookup, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.ActivationTimeout == 0 {
		cfg.ActivationTimeout = time.Second
	}
	if cfg.StoreTimeout == 0 {
		cfg.StoreTimeout = 500 * time.Millisecond
	}
	if cfg.ParsePlacement == nil {
		cfg.ParsePlacement = func(v []byte) (string, error) { return string(v), nil }
	}
	return &Lookup{cfg: cfg, resolver: cfg.Resolver, flights: map[string]*flight{}}, nil
}

// Setup is called by cluster.StartMember / StartClient (before the provider starts): it
// spawns the activator, loads placement/ and starts watching it.
func (l *Lookup) Setup(c *cluster.Cluster, _ []string, isClient bool) {
	l.cl = c
	l.system = c.ActorSystem
	l.client = isClient
	l.log = l.cfg.Logger
	if l.log == nil {
		l.log = c.Logger()
	}
	l.log = l.log.With(slog.String("component", "lookup"))
	l.outage = newOutage(l.log, l.cfg.GCSAddress)
	if l.resolver == nil {
		if r, ok := c.Config.ClusterProvider.(Resolver); ok {
			l.resolver = r
		} else {
			l.log.Error("no Resolver: LookupConfig.Resolver is nil and the cluster provider is not one; every Get will return nil")
		}
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())

	pid, err := l.system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return newActivator(l) }), ActivatorName)
	if err != nil {
		l.log.Error("cannot spawn the activator", slog.Any("error", err))
	}
	l.actorPID = pid

	l.sub = SubscribeMemberEvents(l.system, func(e *MemberEvent) {
		if e.Self || (e.Type != MemberUnreachable && e.Type != MemberGone) {
			return
		}
		for _, d := range l.pids.removeAddress(e.Member.Address) {
			l.cl.PidCache.RemoveByValue(d.identity, d.kind, d.pid)
		}
	})

	// Load placement/ now so that the first Gets need no store read; on failure the
	// watch loop keeps trying.
	var rev int64
	ctx, cancel := context.WithTimeout(l.ctx, 2*l.cfg.StoreTimeout)
	kvs, listRev, err := l.cfg.Store.List(ctx, gcs.PlacementPrefix)
	cancel()
	if err != nil {
		l.log.Warn("cannot list placements; will retry", slog.Any("error", err))
	} else {
		l.applyListing(kvs, listRev)
		rev = listRev
	}
	l.wg.Add(2)
	go l.placementLoop(rev)
	go l.stopWatcher()
}

// Get returns the PID of the grain, activating it where its identity says. The hot path is
// a cache read; a miss resolves the target node (the identity itself, or placement/),
// asks that member's activator, and caches the answer. It returns nil, quickly, when the
// identity is malformed, the actor has no placement, the node is unknown or unreachable,
// or the activation fails; and blocks at most StoreTimeout + ActivationTimeout.
func (l *Lookup) Get(ci *cluster.ClusterIdentity) *actor.PID {
	if pid := l.pids.get(ci.Identity, ci.Kind); pid != nil {
		return pid
	}
	return l.getSlow(ci)
}

func (l *Lookup) getSlow(ci *cluster.ClusterIdentity) *actor.PID {
	if l.resolver == nil || l.actorPID == nil {
		return nil
	}
	key := ci.Kind + "/" + ci.Identity
	l.flightMu.Lock()
	if f, ok := l.flights[key]; ok {
		l.flightMu.Unlock()
		<-f.done
		return f.pid
	}
	f := &flight{done: make(chan struct{})}
	l.flights[key] = f
	l.flightMu.Unlock()
	defer func() {
		l.flightMu.Lock()
		delete(l.flights, key)
		l.flightMu.Unlock()
		close(f.done)
	}()
	if pid := l.pids.get(ci.Identity, ci.Kind); pid != nil {
		f.pid = pid
		return pid
	}
	f.pid = l.resolve(ci)
	return f.pid
}

func (l *Lookup) resolve(ci *cluster.ClusterIdentity) *actor.PID {
	id, err := ParseIdentity(ci.Identity)
	if err != nil {
		l.log.Warn("unknown identity format: want n/<nodeID>[/<rest>] or a/<actorID>",
			slog.String("identity", ci.Identity), slog.String("kind", ci.Kind))
		return nil
	}
	nodeID, rev, ok := l.target(id)
	if !ok {
		l.log.Debug("actor has no placement", slog.String("identity", ci.Identity), slog.String("kind", ci.Kind))
		return nil
	}
	var activator *actor.PID
	remoteAddr := ""
	if !l.client && nodeID == l.resolver.LocalNodeID() {
		activator = l.actorPID
	} else {
		m, ok := l.resolver.MemberForNode(nodeID)
		if !ok {
			l.log.Debug("node unknown or unreachable", slog.String("node", nodeID),
				slog.String("identity", ci.Identity), slog.String("kind", ci.Kind))
			return nil
		}
		if !m.HasKind(ci.Kind) {
			l.log.Debug("member does not host kind", slog.String("member", m.ID),
				slog.String("identity", ci.Identity), slog.String("kind", ci.Kind))
			return nil
		}
		activator = actor.NewPID(m.Address, ActivatorName)
		remoteAddr = m.Address
	}
	req := &cluster.ActivationRequest{
		ClusterIdentity: &cluster.ClusterIdentity{Identity: ci.Identity, Kind: ci.Kind},
		RequestId:       nodeID,      // the node the requester resolved
		TopologyHash:    uint64(rev), // the placement revision it resolved at (0 for node-pinned)
	}
	res, err := l.activate(activator, req, remoteAddr)
	resp, _ := res.(*cluster.ActivationResponse)
	if err != nil || resp == nil || resp.Failed || resp.Pid == nil {
		l.log.Debug("activation failed", slog.String("node", nodeID), slog.String("identity", ci.Identity),
			slog.String("kind", ci.Kind), slog.Any("error", err), slog.Any("response", res))
		return nil
	}
	if id.Kind == ActorPlaced {
		if p, ok := l.places.get(id.ActorID); ok && p.rev > rev && (p.deleted || p.node != nodeID) {
			l.log.Debug("placement moved during activation", slog.String("identity", ci.Identity))
			return nil
		}
	}
	l.pids.put(ci.Identity, ci.Kind, resp.Pid)
	// Watch it so that the entry goes when the grain stops (a PID that is already gone
	// gets Terminated at once).
	l.system.Root.Send(l.actorPID, &watchMsg{ci: req.ClusterIdentity, pid: resp.Pid})
	return resp.Pid
}

// activate sends an activation request and waits for the answer. For a remote member it
// also dials the member's address: a refused connection (no process listens there: a
// member killed and not yet reported, to this process, as gone) fails the request at once
// instead of after ActivationTimeout, since protoactor drops messages to an address it
// cannot connect to rather than failing them.
func (l *Lookup) activate(activator *actor.PID, req *cluster.ActivationRequest, remoteAddr string) (any, error) {
	call := ask.Start(l.system.Root, activator, req)
	if remoteAddr == "" {
		return call.Wait(context.Background(), l.cfg.ActivationTimeout)
	}
	type answer struct {
		res any
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := call.Wait(context.Background(), l.cfg.ActivationTimeout)
		done <- answer{res, err}
	}()
	probe := make(chan bool, 1)
	go func() { probe <- netx.Refused(remoteAddr, l.cfg.ActivationTimeout) }()
	for {
		select {
		case a := <-done:
			return a.res, a.err
		case r := <-probe:
			if r {
				return nil, fmt.Errorf("membership: %s refuses connections (the member is gone)", remoteAddr)
			}
			probe = nil // reachable: wait for the answer
		}
	}
}

// target returns the node an identity lives on and the placement revision it read.
func (l *Lookup) target(id Identity) (node string, rev int64, ok bool) {
	if id.Kind == NodePinned {
		return id.NodeID, 0, true
	}
	if p, ok := l.places.get(id.ActorID); ok {
		if p.deleted || p.node == "" {
			return "", 0, false
		}
		return p.node, p.rev, true
	}
	// Not seen by the watch (yet): read it once. The result is not cached; the watch
	// delivers it within milliseconds.
	ctx, cancel := context.WithTimeout(l.ctx, l.cfg.StoreTimeout)
	defer cancel()
	kv, found, err := l.cfg.Store.Get(ctx, gcs.PlacementKey(id.ActorID))
	if err != nil {
		l.log.Debug("placement read failed", slog.String("actor", id.ActorID), slog.Any("error", err))
		return "", 0, false
	}
	if !found {
		return "", 0, false
	}
	node = l.parsePlacement(kv)
	return node, kv.ModRev, node != ""
}

// parsePlacement returns the node a placement value names, or "" (logged) if it is bad.
func (l *Lookup) parsePlacement(kv gcs.KV) string {
	node, err := l.cfg.ParsePlacement(kv.Value)
	if err != nil || node == "" {
		l.log.Warn("bad placement value", slog.String("key", kv.Key), slog.Any("error", err))
		return ""
	}
	return node
}

// owns says whether this process should host identity. claimedNode and reqRev are what
// the requester resolved; a newer placement known here overrides them.
func (l *Lookup) owns(identity, claimedNode string, reqRev int64) bool {
	local := ""
	if l.resolver != nil {
		local = l.resolver.LocalNodeID()
	}
	if local == "" || l.client {
		return false
	}
	id, err := ParseIdentity(identity)
	if err != nil {
		return false
	}
	if id.Kind == NodePinned {
		return id.NodeID == local
	}
	node := claimedNode
	if p, ok := l.places.get(id.ActorID); ok && p.rev > reqRev {
		if p.deleted {
			return false
		}
		node = p.node
	}
	return node == local
}

// RemovePid drops a cached PID (if the cache still holds it).
func (l *Lookup) RemovePid(ci *cluster.ClusterIdentity, pid *actor.PID) {
	l.drop(ci.Identity, ci.Kind, pid)
}

func (l *Lookup) drop(identity, kind string, pid *actor.PID) {
	if l.pids.removeIfEqual(identity, kind, pid) && l.cl != nil {
		l.cl.PidCache.RemoveByValue(identity, kind, pid)
	}
}

// Shutdown stops the placement watch and the activator, which stops every grain it
// activated. cluster.Shutdown(true) calls it (twice); after cluster.Shutdown(false) call
// it yourself.
func (l *Lookup) Shutdown() {
	l.shutdownOnce.Do(func() {
		if l.cancel == nil {
			return
		}
		l.cancel()
		l.wg.Wait()
		l.system.EventStream.Unsubscribe(l.sub)
		if l.actorPID != nil {
			if err := l.system.Root.PoisonFuture(l.actorPID).Wait(); err != nil {
				l.log.Warn("activator did not stop", slog.Any("error", err))
			}
		}
	})
}

// CachedPIDs returns how many PIDs the lookup caches (for tests and metrics).
func (l *Lookup) CachedPIDs() int { return l.pids.len() }

func (l *Lookup) placementLoop(rev int64) {
	defer l.wg.Done()
	for {
		if rev == 0 {
			var (
				kvs     []gcs.KV
				listRev int64
			)
			err := retryCall(l.ctx, l.outage, "list placements", 2*l.cfg.StoreTimeout, 100*time.Millisecond, 3*time.Second,
				func(ctx context.Context) error {
					var err error
					kvs, listRev, err = l.cfg.Store.List(ctx, gcs.PlacementPrefix)
					return err
				})
			if err != nil {
				return
			}
			l.applyListing(kvs, listRev)
			rev = listRev
		}
		for resp := range l.cfg.Store.Watch(l.ctx, gcs.PlacementPrefix, rev+1) {
			if resp.Err != nil {
				l.log.Warn("placement watch failed; re-listing", slog.Any("error", resp.Err))
				continue
			}
			for _, ev := range resp.Events {
				actorID := ev.KV.Key[len(gcs.PlacementPrefix):]
				if ev.Type == gcs.EventDelete {
					l.applyPlacement(actorID, placement{rev: ev.KV.ModRev, deleted: true, at: time.Now()})
				} else {
					l.applyPlacement(actorID, placement{node: l.parsePlacement(ev.KV), rev: ev.KV.ModRev})
				}
			}
		}
		if !sleepCtx(l.ctx, 100*time.Millisecond) {
			return
		}
		rev = 0
	}
}

func (l *Lookup) applyListing(kvs []gcs.KV, rev int64) {
	seen := make(map[string]struct{}, len(kvs))
	for _, kv := range kvs {
		actorID := kv.Key[len(gcs.PlacementPrefix):]
		seen[actorID] = struct{}{}
		l.applyPlacement(actorID, placement{node: l.parsePlacement(kv), rev: kv.ModRev})
	}
	l.places.mu.RLock()
	var gone []string
	for id, p := range l.places.m {
		if _, ok := seen[id]; !ok && !p.deleted {
			gone = append(gone, id)
		}
	}
	l.places.mu.RUnlock()
	for _, id := range gone {
		l.applyPlacement(id, placement{rev: rev, deleted: true, at: time.Now()})
	}
}

// applyPlacement records a placement change; when the node changes it drops the cached
// PIDs of the identity and tells the activator, which stops a local activation that is
// no longer placed here.
func (l *Lookup) applyPlacement(actorID string, p placement) {
	old, had := l.places.set(actorID, p)
	if !had || old.deleted == p.deleted && old.node == p.node {
		// Unchanged, or the first news of this key since the listing: any cached PID was
		// resolved from this very value (by a direct read), so it stays valid.
		return
	}
	for _, d := range l.pids.removeIdentity(ActorIdentity(actorID)) {
		l.cl.PidCache.RemoveByValue(d.identity, d.kind, d.pid)
	}
	if l.actorPID != nil {
		l.system.Root.Send(l.actorPID, &placementMsg{actorID: actorID, node: p.node, deleted: p.deleted})
	}
}

func (l *Lookup) stopWatcher() {
	defer l.wg.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-t.C:
			if l.system.IsStopped() {
				l.cancel()
				return
			}
		}
	}
}

// Messages to the activator (local only).
type (
	watchMsg struct {
		ci  *cluster.ClusterIdentity
		pid *actor.PID
	}
	placementMsg struct {
		actorID, node string
		deleted       bool
	}
)

type tracked struct {
	ci    *cluster.ClusterIdentity
	child bool // activated here (we are its parent) rather than watched
}

// activator hosts this member's activations (as its children, so that it learns when
// they stop) and watches the PIDs the Lookup caches.
type activator struct {
	l       *Lookup
	local   map[string]map[string]*actor.PID // identity -> kind -> child
	tracked map[string]tracked               // PID key -> what it is
}

func newActivator(l *Lookup) *activator {
	return &activator{l: l, local: map[string]map[string]*actor.PID{}, tracked: map[string]tracked{}}
}

func (a *activator) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *cluster.ActivationRequest:
		a.activate(ctx, msg)
	case *watchMsg:
		key := pidKey(msg.pid)
		if _, ok := a.tracked[key]; ok {
			return
		}
		a.tracked[key] = tracked{ci: msg.ci}
		ctx.Watch(msg.pid)
	case *actor.Terminated:
		a.terminated(msg.Who)
	case *placementMsg:
		if !msg.deleted && a.l.resolver != nil && msg.node == a.l.resolver.LocalNodeID() {
			return
		}
		for _, pid := range a.local[ActorIdentity(msg.actorID)] {
			ctx.Poison(pid) // its Terminated cleans up
		}
	}
}

func (a *activator) activate(ctx actor.Context, req *cluster.ActivationRequest) {
	fail := func(why string) {
		a.l.log.Debug("activation refused", slog.String("why", why), slog.Any("identity", req.ClusterIdentity))
		ctx.Respond(&cluster.ActivationResponse{Failed: true})
	}
	if req.ClusterIdentity == nil {
		fail("no identity")
		return
	}
	ci := &cluster.ClusterIdentity{Identity: req.ClusterIdentity.Identity, Kind: req.ClusterIdentity.Kind}
	if !a.l.owns(ci.Identity, req.RequestId, int64(req.TopologyHash)) {
		fail("not placed on this node")
		return
	}
	if pid := a.local[ci.Identity][ci.Kind]; pid != nil {
		ctx.Respond(&cluster.ActivationResponse{Pid: pid})
		return
	}
	kind, ok := a.l.cl.TryGetClusterKind(ci.Kind)
	if !ok {
		fail("unknown kind")
		return
	}
	pid, err := spawnGrain(ctx, kind, ci)
	if err != nil {
		a.l.log.Warn("grain activation failed", slog.String("identity", ci.Identity), slog.String("kind", ci.Kind), slog.Any("error", err))
		ctx.Respond(&cluster.ActivationResponse{Failed: true})
		return
	}
	kind.Inc()
	byKind := a.local[ci.Identity]
	if byKind == nil {
		byKind = map[string]*actor.PID{}
		a.local[ci.Identity] = byKind
	}
	byKind[ci.Kind] = pid
	a.tracked[pidKey(pid)] = tracked{ci: ci, child: true}
	ctx.Respond(&cluster.ActivationResponse{Pid: pid})
}

func (a *activator) terminated(who *actor.PID) {
	key := pidKey(who)
	t, ok := a.tracked[key]
	if !ok {
		return
	}
	delete(a.tracked, key)
	ci := t.ci
	if t.child {
		if byKind := a.local[ci.Identity]; byKind != nil && byKind[ci.Kind].Equal(who) {
			delete(byKind, ci.Kind)
			if len(byKind) == 0 {
				delete(a.local, ci.Identity)
			}
		}
		if kind, ok := a.l.cl.TryGetClusterKind(ci.Kind); ok {
			kind.Dec()
		}
	}
	a.l.drop(ci.Identity, ci.Kind, who)
}

// spawnGrain spawns the grain as a child, with its cluster identity set so that the kind's
// cluster middleware (cluster.NewKind) sends it *cluster.ClusterInit after Started, as
// with the stock lookups.
func spawnGrain(ctx actor.Context, kind *cluster.ActivatedKind, ci *cluster.ClusterIdentity) (pid *actor.PID, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("membership: spawn %s: %v", ci.AsKey(), r)
		}
	}()
	return ctx.SpawnPrefix(cluster.WithClusterIdentity(kind.Props, ci), ci.AsKey()), nil
}

func pidKey(pid *actor.PID) string { return pid.Address + "/" + pid.Id }
