package membership

import (
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/netx"
)

// Messages to the membership actor (local only, so not protobuf).
type (
	snapshotMsg struct{ kvs []gcs.KV }       // full members/ listing (start, or after a failed watch)
	eventsMsg   struct{ events []gcs.Event } // watch events in revision order
	selfMsg     struct{ info MemberInfo }    // we (re-)registered
	syncMsg     struct{}                     // answered once everything before it is applied
	probeMsg    struct{ addr string }        // time to probe an unreachable peer
	refreshMsg  struct{}                     // a departed peer's grace period is over
	refusedMsg  struct{ addr string }        // a peer's address refuses connections
)

// peer is another process, keyed by address: one process may hold several member
// incarnations for a moment (after a lost lease), and liveness is per process.
//
// The topology given to protoactor's MemberList has one entry per process, under the ID of
// the first incarnation this process saw (topoID), kept while any incarnation of it is
// registered, and for a grace period (LeaseTTL) after the last one went if the process is
// still reachable. A lost lease and the re-registration that follows thus change nothing
// in the MemberList, which otherwise would block the old ID, tear down the connection to the
// live process (EndpointTerminatedEvent) and fail every remote Watch on it.
type peer struct {
	addr        string
	topoID      string
	last        MemberInfo // newest incarnation seen
	members     map[string]struct{}
	goneAt      time.Time // when the last registered incarnation went (zero while one is)
	watching    bool
	unreachable bool
	refused     bool // unreachable, and its address refused a connection since: its process is gone
	probing     bool
	probeDelay  time.Duration
}

// monitor is the membership actor: the single owner of the member table. It applies GCS
// watch events, publishes the topology to the cluster's MemberList, keeps the node index
// the Lookup reads, remote-Watches every peer's membership actor, probes peers reported
// Terminated, and publishes MemberEvents. It is also what peers Watch.
type monitor struct {
	p        *Provider
	selfAddr string
	members  map[string]MemberInfo // from the GCS, by member ID (may include our own)
	peers    map[string]*peer      // by address, others only
	self     *MemberInfo           // our current registration (nil for a client)
	selfTopo string                // the member ID we publish for ourselves (the first one)
}

func newMonitor(p *Provider) *monitor {
	return &monitor{
		p:        p,
		selfAddr: p.system.Address(),
		members:  map[string]MemberInfo{},
		peers:    map[string]*peer{},
	}
}

func (m *monitor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *snapshotMsg:
		m.applySnapshot(ctx, msg.kvs)
		m.refresh(ctx)
	case *eventsMsg:
		for _, ev := range msg.events {
			m.applyEvent(ctx, ev)
		}
		m.refresh(ctx)
	case *selfMsg:
		info := msg.info
		m.self = &info
		if m.selfTopo == "" {
			m.selfTopo = info.ID
		}
		m.refresh(ctx)
	case refreshMsg:
		m.refresh(ctx)
	case syncMsg:
		ctx.Respond(true)
	case *actor.Terminated:
		m.onTerminated(ctx, msg)
	case *probeMsg:
		m.probe(ctx, msg.addr)
	case *refusedMsg:
		m.onRefused(ctx, msg.addr)
	}
}

func (m *monitor) applySnapshot(ctx actor.Context, kvs []gcs.KV) {
	seen := make(map[string]struct{}, len(kvs))
	for _, kv := range kvs {
		info, err := unmarshalMember(kv.Value, kv.CreateRev)
		if err != nil {
			m.p.log.Warn("ignoring member key", slog.String("key", kv.Key), slog.Any("error", err))
			continue
		}
		seen[info.ID] = struct{}{}
		m.put(ctx, info)
	}
	for _, id := range slices.Sorted(maps.Keys(m.members)) {
		if _, ok := seen[id]; !ok {
			m.remove(ctx, id)
		}
	}
}

func (m *monitor) applyEvent(ctx actor.Context, ev gcs.Event) {
	switch ev.Type {
	case gcs.EventPut:
		info, err := unmarshalMember(ev.KV.Value, ev.KV.CreateRev)
		if err != nil {
			m.p.log.Warn("ignoring member key", slog.String("key", ev.KV.Key), slog.Any("error", err))
			return
		}
		m.put(ctx, info)
	case gcs.EventDelete:
		m.remove(ctx, ev.KV.Key[len(gcs.MembersPrefix):])
	}
}

func (m *monitor) put(ctx actor.Context, info MemberInfo) {
	_, known := m.members[info.ID]
	m.members[info.ID] = info
	if pr := m.peers[info.Address]; known && pr != nil && info.Rev >= pr.last.Rev {
		pr.last = info
	}
	if known {
		return
	}
	if info.Address != m.selfAddr {
		pr := m.peers[info.Address]
		if pr == nil {
			pr = &peer{addr: info.Address, topoID: info.ID, members: map[string]struct{}{}}
			m.peers[info.Address] = pr
		}
		pr.members[info.ID] = struct{}{}
		pr.goneAt = time.Time{}
		if info.Rev >= pr.last.Rev {
			pr.last = info
		}
		switch {
		case pr.unreachable:
			// A new registration is a sign of life (e.g. a restart on the same address):
			// probe now rather than at the next back-off step.
			pr.probeDelay = m.p.cfg.ProbeInterval
			ctx.Send(ctx.Self(), &probeMsg{addr: pr.addr})
		case !pr.watching:
			ctx.Watch(membershipPID(pr.addr))
			pr.watching = true
			m.checkRefused(ctx, pr.addr)
		}
	}
	m.publish(MemberJoined, info)
}

// checkRefused dials a peer seen for the first time, off the mailbox: a refused
// connection means no process listens there any more (a member killed before its lease
// lapsed, seen by a process that joined since). The remote Watch would report it only
// once protoactor gave up connecting (MaxRetryCount attempts 2 s apart) or the lease
// lapsed, and meanwhile placement would pick the dead node and every grain lookup on it
// would wait for its activation timeout: the chaos suite measured ~1 s stalls from that.
func (m *monitor) checkRefused(ctx actor.Context, addr string) {
	self, root := ctx.Self(), ctx.ActorSystem().Root
	go func() {
		if netx.Refused(addr, m.p.cfg.ProbeTimeout) {
			root.Send(self, &refusedMsg{addr: addr})
		}
	}()
}

// onRefused: a peer's address refuses connections. One first seen is unreachable, as if
// its Watch had ended; one already unreachable is no longer suspect but down (Suspects
// drops it, MemberDown says so): no process listens there.
func (m *monitor) onRefused(ctx actor.Context, addr string) {
	pr := m.peers[addr]
	if pr == nil || len(pr.members) == 0 {
		return
	}
	if pr.unreachable {
		if !pr.refused {
			pr.refused = true
			m.refresh(ctx)
			for _, id := range slices.Sorted(maps.Keys(pr.members)) {
				m.publish(MemberDown, m.members[id])
			}
		}
		return
	}
	if pr.watching {
		ctx.Unwatch(membershipPID(addr))
		pr.watching = false
	}
	pr.refused = true
	m.markUnreachable(ctx, pr, "connection refused")
}

func (m *monitor) remove(ctx actor.Context, id string) {
	info, ok := m.members[id]
	if !ok {
		return
	}
	delete(m.members, id)
	if pr := m.peers[info.Address]; pr != nil {
		delete(pr.members, id)
		if len(pr.members) == 0 {
			// Keep it in the topology for a grace period in case it registers again
			// (refresh drops it earlier if it is unreachable).
			pr.goneAt = time.Now()
			self, root := ctx.Self(), ctx.ActorSystem().Root
			time.AfterFunc(m.p.cfg.LeaseTTL, func() { root.Send(self, refreshMsg{}) })
		}
	}
	m.publish(MemberLeft, info)
}

func (m *monitor) onTerminated(ctx actor.Context, t *actor.Terminated) {
	if t.Who == nil || t.Who.Id != MembershipActorName {
		return
	}
	pr := m.peers[t.Who.Address]
	if pr == nil {
		return
	}
	pr.watching = false
	if pr.unreachable {
		return
	}
	if len(pr.members) == 0 { // departed, and now gone: drop it from the topology at once
		pr.unreachable = true
		m.refresh(ctx)
		return
	}
	m.markUnreachable(ctx, pr, t.Why.String())
}

// markUnreachable reports a registered peer unreachable and starts probing it: a live
// process answering a probe is reachable again.
func (m *monitor) markUnreachable(ctx actor.Context, pr *peer, why string) {
	pr.unreachable = true
	m.p.log.Info("member unreachable", slog.String("address", pr.addr), slog.String("why", why))
	m.refresh(ctx) // first: a subscriber reading Nodes or Suspects on the event sees it
	for _, id := range slices.Sorted(maps.Keys(pr.members)) {
		m.publish(MemberUnreachable, m.members[id])
	}
	if pr.refused {
		for _, id := range slices.Sorted(maps.Keys(pr.members)) {
			m.publish(MemberDown, m.members[id])
		}
	} else {
		// A broken connection to a live process and a dead process look alike here; a
		// refused dial tells the second (the usual case, e.g. SIGKILL) within
		// milliseconds, so what is final only for a dead process (an actor's host died)
		// need not wait for its lease.
		m.checkRefused(ctx, pr.addr)
	}
	pr.probeDelay = m.p.cfg.ProbeInterval
	m.scheduleProbe(ctx, pr)
}

func (m *monitor) scheduleProbe(ctx actor.Context, pr *peer) {
	self, root, addr := ctx.Self(), ctx.ActorSystem().Root, pr.addr
	time.AfterFunc(pr.probeDelay, func() { root.Send(self, &probeMsg{addr: addr}) })
}

// probe asks an unreachable peer's membership actor for a Touched; an answer means the
// Terminated was a broken connection rather than a dead process.
func (m *monitor) probe(ctx actor.Context, addr string) {
	pr := m.peers[addr]
	if pr == nil || !pr.unreachable || pr.probing {
		return
	}
	pr.probing = true
	f := ctx.RequestFuture(membershipPID(addr), &actor.Touch{}, m.p.cfg.ProbeTimeout)
	ctx.ReenterAfter(f, func(res any, err error) {
		if m.peers[addr] != pr {
			return // gone meanwhile
		}
		pr.probing = false
		if !pr.unreachable {
			return
		}
		if _, ok := res.(*actor.Touched); ok && err == nil {
			pr.unreachable, pr.refused = false, false
			ctx.Watch(membershipPID(addr))
			pr.watching = true
			m.p.log.Info("member reachable again", slog.String("address", addr))
			m.refresh(ctx)
			for _, id := range slices.Sorted(maps.Keys(pr.members)) {
				m.publish(MemberReachable, m.members[id])
			}
			return
		}
		pr.probeDelay = min(2*pr.probeDelay, m.p.cfg.LeaseTTL)
		m.scheduleProbe(ctx, pr)
		if !pr.refused {
			m.checkRefused(ctx, addr) // it may have exited since the last look
		}
	})
}

// refresh publishes the topology (MemberList ignores an unchanged one), rebuilds the node
// index, and forgets peers whose grace period is over.
func (m *monitor) refresh(ctx actor.Context) {
	// Peers with no incarnation left go once unreachable or past the grace period; they
	// are announced (MemberGone) after the index and topology no longer hold them.
	var gone []MemberInfo
	for _, addr := range slices.Sorted(maps.Keys(m.peers)) {
		pr := m.peers[addr]
		if len(pr.members) == 0 && (pr.unreachable || time.Since(pr.goneAt) >= m.p.cfg.LeaseTTL) {
			if pr.watching {
				ctx.Unwatch(membershipPID(addr))
			}
			delete(m.peers, addr)
			gone = append(gone, pr.last)
		}
	}
	nodes := make(map[string]MemberInfo, len(m.members)+1)
	index := func(info MemberInfo) {
		if info.NodeID == "" {
			return
		}
		if cur, ok := nodes[info.NodeID]; !ok || info.Rev > cur.Rev {
			nodes[info.NodeID] = info
		}
	}
	suspects := map[string]bool{}
	for _, info := range m.members {
		if info.Address == m.selfAddr {
			continue // ours are indexed below: only the current one counts
		}
		switch pr := m.peers[info.Address]; {
		case pr == nil || !pr.unreachable:
			index(info)
		case !pr.refused && info.NodeID != "":
			suspects[info.NodeID] = true
		}
	}
	// A reachable process whose last incarnation left keeps its node for the grace period,
	// as it keeps its place in the topology: a lost lease is followed by a new incarnation
	// of the same node, and taking the node for dead meanwhile would fail its tasks and
	// restart its actors elsewhere while they still run.
	for _, pr := range m.peers {
		if len(pr.members) == 0 && !pr.unreachable && pr.last.NodeID != "" {
			if _, ok := nodes[pr.last.NodeID]; !ok {
				nodes[pr.last.NodeID] = pr.last
			}
		}
	}
	topo := make([]*cluster.Member, 0, len(m.peers)+1)
	if m.self != nil {
		index(*m.self)
		me := m.self.member()
		me.Id = m.selfTopo
		topo = append(topo, me)
	}
	for _, addr := range slices.Sorted(maps.Keys(m.peers)) {
		pr := m.peers[addr]
		mem := pr.last.member()
		mem.Id = pr.topoID
		topo = append(topo, mem)
	}
	for id := range nodes {
		delete(suspects, id) // a newer incarnation of the node, reachable
	}
	m.p.nodes.Store(&nodes)
	m.p.suspects.Store(&suspects)
	blockGate.Lock() // see blockGate: the update may write protoactor's BlockList
	m.p.cl.MemberList.UpdateClusterTopology(topo)
	blockGate.Unlock()
	for _, info := range gone {
		m.publish(MemberGone, info)
	}
}

func (m *monitor) publish(t MemberEventType, info MemberInfo) {
	self := info.Address == m.selfAddr
	m.p.log.Debug("member event", slog.String("event", t.String()), slog.String("member", info.ID),
		slog.String("node", info.NodeID), slog.Bool("self", self))
	m.p.system.EventStream.Publish(&MemberEvent{Type: t, Member: info, Self: self})
}

func membershipPID(addr string) *actor.PID { return actor.NewPID(addr, MembershipActorName) }
