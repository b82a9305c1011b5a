package clusterview

import (
	"errors"
	"time"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/tasks/sched"
)

// Placer places tasks on the view's nodes for one owner (a shard of a runtime) and
// accounts for that owner's placements between two load reports of a node. It is not safe
// for concurrent use: each owner has its own, so that placing a task takes no lock shared
// with other owners.
//
// What an owner cannot see are the placements of the other owners of its process since
// the node's last report (a node reports a change that placement sees within
// LoadReportInterval, smaller ones within a second, and its leases' requests reach the
// node's scheduler within one turn). A burst from many owners at once may then send a node
// more than it can start; its scheduler queues the excess, as a Ray raylet queues the
// leases other raylets' stale views sent it.
//
// The local node (Config.Self) is judged by its scheduler's live load (Config.Local) when
// the view has one, not by its last report: a report that caught a lease held for a
// moment would show a small node busy, and send its next tasks to peers for up to a
// report period while it has room (and a report that showed it idle would keep tasks
// there while it is full). The owner's own placements count against the live figure as
// against a report, until its next change.
type Placer struct {
	v      *View
	spread uint64
	buf    []sched.Node
	own    map[string]*placed
	// local is the local node's live load as last read (Config.Local), current while
	// localOK.
	local   LocalLoad
	localOK bool
}

// placed is one owner's account of one node since the node's load report number report
// (for the local node judged by its live load: liveMark with the load's version).
type placed struct {
	report uint64
	avail  sched.Resources // the report's available minus this owner's placements, plus returns
	placed sched.Resources // placed by this owner since the report, not done yet
	queued int
}

// Placer returns a new placer. Owners that start their Spread rotation at different
// counters (seed) spread the same way without coordinating.
func (v *View) Placer(seed uint64) *Placer {
	return &Placer{v: v, spread: seed, own: map[string]*placed{}}
}

// noReport marks an account not started yet (report numbers start at 1, and 0 is "no
// report yet").
const noReport = ^uint64(0)

// liveMark marks an account's figures as the local node's live load (its version in the
// other bits) rather than a load report's (their numbers stay far below it).
const liveMark = 1 << 63

// readLocal reads the local node's live load, if the view has one.
func (p *Placer) readLocal() {
	if p.v.cfg.Local == nil {
		return
	}
	l, ok := p.v.cfg.Local(p.local.Version)
	if p.localOK = ok; ok && l.Version != p.local.Version {
		p.local = l
	}
}

// base is what node i of s is judged by before this owner's placements: the number of the
// figures (a load report's; liveMark and the version for the local node's live load), its
// available resources and its queue.
func (p *Placer) base(s *snapshot, i int) (uint64, sched.Resources, int) {
	n := &s.nodes[i]
	switch {
	case p.localOK && n.ID == string(p.v.cfg.Self):
		return liveMark | p.local.Version, p.local.Available, p.local.Queued
	case s.reports[i] == 0:
		// No report yet: the total.
		return 0, n.Total, n.Queued
	}
	return s.reports[i], n.Available, n.Queued
}

// account returns p's account of node i of s, starting it again if the node's figures
// changed since (a new report; for the local node, its live load moved).
func (p *Placer) account(s *snapshot, i int) *placed {
	id := s.nodes[i].ID
	a := p.own[id]
	if a == nil {
		a = &placed{report: noReport}
		p.own[id] = a
	}
	if report, avail, _ := p.base(s, i); a.report != report {
		// The figures include what this owner placed before they were taken; what was
		// placed since is not known to be in them. Counting it again only errs towards
		// spreading (for the live load: a placement its scheduler has not heard of yet is
		// forgotten, which errs towards staying; the scheduler queues it and spillback
		// moves it).
		a.report, a.placed, a.avail, a.queued = report, sched.Resources{}, avail, 0
	}
	return a
}

// nodes loads the view into p.buf (the alive nodes with this placer's own placements since
// their last reports; the local node by its live load) and returns the snapshot it came
// from.
func (p *Placer) nodes(now time.Time) *snapshot {
	s := p.v.load()
	p.buf = p.v.alive(s, p.buf, now)
	p.readLocal()
	for i := range p.buf {
		report, avail, queued := p.base(s, i)
		if report&liveMark != 0 {
			p.buf[i].Available, p.buf[i].Queued = avail, queued
		}
		if a := p.own[p.buf[i].ID]; a != nil && a.report == report {
			p.buf[i].Available, p.buf[i].Queued = a.avail, p.buf[i].Queued+a.queued
		}
	}
	return s
}

// Place chooses a node for req by the sched policy and counts req against it until Done
// (or the node's next load report); sched.ErrNoNodes while no node is alive.
func (p *Placer) Place(req sched.Request) (ids.NodeID, error) {
	now := time.Now()
	s := p.nodes(now)
	if req.Strategy == sched.NodeAffinity {
		if _, ok := s.index[req.AffinityNode]; !ok {
			if id, ok := s.agents[req.AffinityNode]; ok {
				req.AffinityNode = id // a machine's agent ID (rayctl list nodes): its worker process of the job
			}
		}
	}
	opt := sched.Options{}
	if req.Strategy == sched.Spread {
		opt.SpreadCounter = p.spread
		p.spread++
	}
	if req.Strategy != sched.NodeAffinity || req.Soft {
		// The policy chooses among the nodes by their loads; a hard affinity does not
		// (the node's total and liveness decide), nor does a request the local node keeps
		// whatever the others' loads when the local node is judged by its live load (the
		// Default policy's fast path): a node that keeps its own work does not follow
		// every peer's reports.
		if i, ok := s.index[string(p.v.cfg.Self)]; !ok || !p.localOK || !sched.KeepsLocal(req, p.buf[i], opt) {
			p.v.needLoads(now)
		}
	}
	p.trustHolders(s, req)
	n := len(p.buf)
	p.buf = s.addComing(p.buf, now) // node agents whose worker process of the job is to come
	d, err := sched.Place(req, p.buf, string(p.v.cfg.Self), opt)
	p.buf = p.buf[:n]
	if err != nil {
		if errors.Is(err, sched.ErrSuspectOnly) {
			p.v.askComing(now) // keep the reading fresh while the task waits
		}
		return "", err
	}
	if s.bounded && req.Strategy != sched.NodeAffinity && (req.Strategy == sched.Spread || !s.watched[d.Index] ||
		!sched.KeepsLocal(sched.Request{Resources: req.Resources}, p.buf[d.Index], opt)) {
		// The nodes whose reports the view watches had no room under the threshold, or the
		// choice is a node whose report may be old, or the request spreads over every node
		// (an old report that showed a node busy keeps it out of the rotation): read some
		// of the others' (at most once per Config.OthersRefresh), for the next placements.
		p.v.refreshOthers(now)
	}
	if i, ok := s.index[d.Node]; ok {
		a := p.account(s, i)
		a.avail = a.avail.Sub(req.Resources)
		a.placed = a.placed.Add(req.Resources)
		if !d.RunNow {
			a.queued++
		}
	}
	return ids.NodeID(d.Node), nil
}

// trustHolders gives a node that holds KeepBytes or more of req's arguments the benefit of
// the doubt: the policy keeps a task where megabytes of its arguments are only if that node
// can run it now by the view, and the view's figures for it may be old (a report that
// gives room is written up to 500 ms late, the work of this runtime's other shards ends
// unseen until then, and a node the view does not watch is known by its listing or its
// last read). It is judged by its Total less what this placer put there since its report,
// nothing queued. If it is in fact full, its scheduler queues the task and says so, and
// spillback moves it (as Ray's locality-aware leasing asks the node with the arguments
// first and lets its raylet spill back); moving the bytes on an old report's word costs
// more.
func (p *Placer) trustHolders(s *snapshot, req sched.Request) {
	for id, n := range req.ArgBytes {
		if n < sched.DefaultKeepBytes {
			continue
		}
		i, ok := s.index[id]
		if !ok || !p.buf[i].Alive || p.buf[i].Available.Fits(req.Resources) ||
			id == string(p.v.cfg.Self) && p.localOK { // the local node's live load is exact
			continue
		}
		avail := p.buf[i].Total
		if a := p.own[id]; a != nil {
			if report, _, _ := p.base(s, i); a.report == report {
				avail = avail.Sub(a.placed)
			}
		}
		if avail.Fits(req.Resources) {
			p.buf[i].Available, p.buf[i].Queued = avail, 0
		}
	}
}

// Spill chooses another node for a request that waits at node from, by sched.Spill: one
// that can run it now by the view, counted against it as Place counts; false when none
// can. The caller gives the placement at from back with Done.
func (p *Placer) Spill(req sched.Request, from ids.NodeID) (ids.NodeID, bool) {
	if req.Strategy == sched.NodeAffinity && !req.Soft {
		return "", false // bound to from (sched.Spill)
	}
	now := time.Now()
	p.v.needLoads(now)
	s := p.nodes(now)
	if i, ok := s.index[string(from)]; ok && p.localOK && from == p.v.cfg.Self {
		// sched.Spill counts the request in the Available of the node it waits at, as an
		// owner's account of a report does until the next one; the scheduler's live figure
		// does not hold a request that waits (only leases granted).
		p.buf[i].Available = p.buf[i].Available.Sub(req.Resources)
	}
	d, ok := sched.Spill(req, p.buf, string(from), sched.Options{})
	if s.bounded && (!ok || !s.watched[d.Index]) {
		// No watched node can run it now, or the one chosen was judged by an old report:
		// read some of the reports the view does not watch (as Place does).
		p.v.refreshOthers(now)
	}
	if !ok {
		return "", false
	}
	if i, ok := s.index[d.Node]; ok {
		a := p.account(s, i)
		a.avail = a.avail.Sub(req.Resources)
		a.placed = a.placed.Add(req.Resources)
	}
	return ids.NodeID(d.Node), true
}

// Done: a task this placer placed on node finished (or was not sent after all).
func (p *Placer) Done(node ids.NodeID, res sched.Resources) {
	a := p.own[string(node)]
	if a == nil {
		return
	}
	s := p.v.load()
	i, ok := s.index[string(node)]
	if !ok {
		delete(p.own, string(node))
		return
	}
	if node == p.v.cfg.Self {
		p.readLocal()
	}
	// A report since this placement (a change of the local node's live load) starts the
	// account again from it, with nothing placed since.
	a = p.account(s, i)
	if a.placed.Fits(res) {
		a.placed = a.placed.Sub(res)
	}
	// A load report taken while the task ran counts it as busy: give its resources back
	// (never beyond the total) rather than wait for the next report.
	if after := a.avail.Add(res); s.nodes[i].Total.Fits(after) {
		a.avail = after
	}
}
