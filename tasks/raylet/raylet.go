package raylet

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks"
	"github.com/ray-go/ray/tasks/sched"
)

// Config is what a raylet needs from its node.
type Config struct {
	Node  ids.NodeID
	Total sched.Resources
	// Worker returns the PID of worker slot i (0 <= i < Workers).
	Worker  func(i int) *actor.PID
	Workers int
	Logger  *slog.Logger
	// Machine, when set, is the machine's ledger (package tasks/machine) shared with the
	// other jobs' worker processes on this machine: the raylet then starts holding
	// nothing and obtains what it grants from it (see "One ledger per machine" in the
	// package doc). Total is still the machine's total. The node delivers the ledger's
	// answers to the raylet as MachineGrant and MachineDeny.
	Machine Machine
	// Started, when set, is told the raylet's PID when it starts (the node delivers the
	// machine's answers to it).
	Started func(self *actor.PID)
	// TrimAfter is how long resources the raylet holds of its machine and has no use for
	// are kept before they are given back (default DefaultTrimAfter).
	TrimAfter time.Duration
	// Changes, when set, is incremented for every message the raylet handles but Stats
	// (a few per lease, none per task): a poller of Stats (the node's load reporter) may
	// keep its last reply while it has not moved. Without a Machine only: the machine's
	// free resources, part of Stats then, change without a message.
	Changes *atomic.Uint64
	// Live, when set, is where the raylet publishes its free resources and queue as they
	// change (see Live): the local node's placers read them instead of its last load
	// report. Create it with NewLive with the same Machine.
	Live *Live
}

// Machine is the machine's ledger as a raylet uses it (*machine.Client).
type Machine interface {
	// Ask asks for res; the answer comes as a MachineGrant or MachineDeny with id. now:
	// granted at once or denied.
	Ask(id uint64, res sched.Resources, now bool) error
	// Give gives res back.
	Give(res sched.Resources) error
	// Free is the machine's free resources, as last heard.
	Free() sched.Resources
}

// MachineGrant: the machine granted Res for the ask ID.
type MachineGrant struct {
	ID  uint64
	Res sched.Resources
}

// MachineReclaim: the machine wants Res back (others wait; Ledger.Wants): what is free goes
// back at once, leases are revoked for the rest and what they held goes back as they end.
// A MachineReclaim of nothing ends the previous one.
type MachineReclaim struct {
	Res sched.Resources
}

// OwnerGone: the process at Address, which committed bundles here, is dead for good (its
// death confirmed, not a broken connection): every placement group it committed is
// released, as a Remove would (a group lives as long as its creator).
type OwnerGone struct {
	Address string
}

// MachineFree: the machine's free resources changed (the ledger's FREE; Machine.Free has
// them). A raylet whose ask waits asks again if another of its demands fits now.
type MachineFree struct{}

// MachineDeny: the machine refused the ask ID.
type MachineDeny struct {
	ID      uint64
	Message string
}

// trimTick: give back what is held of the machine and not needed.
type trimTick struct{}

// DefaultTrimAfter is Config.TrimAfter's default: long enough that the bursts of one job
// do not each start with a round trip to the machine (under load that round trip can
// outlast an owner's 50 ms spillback wait and send a task away from the node that holds its
// arguments), and harmless to other jobs, whose asks reclaim idle resources at once
// (MachineReclaim).
const DefaultTrimAfter = 2 * time.Second

// Validate checks the configuration.
func (c *Config) Validate() error {
	if c.Worker == nil || c.Workers <= 0 {
		return errors.New("raylet: Config.Worker and a positive Config.Workers are required")
	}
	return nil
}

// Stats asks a raylet for its counters; it answers with a *StatsReply (local only).
type Stats struct{}

// StatsReply is a raylet's view of its node.
type StatsReply struct {
	Total, Available sched.Resources
	// Queued is the tasks waiting for resources, as the owners whose lease requests wait
	// report their backlogs; Requests is those requests; Leases the leases held.
	Queued, Requests, Leases int
	Granted, Released        int64
	// With a machine ledger: Available counts the machine's free resources too (what this
	// job could get); InUse is what the raylet holds of the machine less what of it is free.
	Machine bool
	InUse   sched.Resources
	// Demands is the work that waits here for resources (see Demand), the largest first,
	// at most MaxDemands of them; DemandsOmitted counts the tasks and actors of the
	// demands left out.
	Demands        []Demand
	DemandsOmitted int
}

// Demand is work of one resource shape that waits at a raylet for resources: the tasks of
// one owner (Owner: its address and actor ID), as the largest backlog its lease requests
// here report,
// or the actors waiting for their reservation (Owner ""). Group is the placement group of
// a demand inside a bundle, whose Shape is then in the resources' own names.
type Demand struct {
	Shape         sched.Resources
	Owner, Group  string
	Tasks, Actors int
}

// MaxDemands bounds StatsReply.Demands (the load report carries them).
const MaxDemands = 16

// request is a lease request waiting for resources.
type request struct {
	id      uint64
	owner   *actor.PID
	res     sched.Resources
	backlog int32
	granted bool
}

// leaseState is a lease granted and not released.
type leaseState struct {
	res      sched.Resources
	owner    string // ownerKey
	ownerPID *actor.PID
	worker   *actor.PID
	blocked  bool
	revoked  bool // its owner was asked to give it back
}

// Raylet is the grain's actor; its state is owned by its mailbox.
type Raylet struct {
	cfg        Config
	avail      sched.Resources
	requests   sched.Queue[*request]
	leases     map[string]*leaseState
	owners     map[string]map[string]bool // owner -> its leases (owners are watched)
	workers    []*actor.PID
	next       int
	prefix     [8]byte // lease IDs: prefix + counter, unique across raylet incarnations
	seq        uint64
	queued     int // Stats.Queued
	granted    int64
	released   int64
	buf        []*request
	reserved   map[string]sched.Resources // actor instances holding resources
	waitingRes []reservation              // not granted yet, in arrival order
	// total is cfg.Total with the renamed resources of the placement-group bundles this
	// node holds (sched.BundleResources); bundles are those bundles, by bundleKey.
	total   sched.Resources
	bundles map[string]bundle
	// returned maps the group-wide name of a resource of a group given back while leases
	// still held it to the resource it stands for: when such a lease is released, what it
	// held goes back as the original resource.
	returned map[string]*returnedName

	// With a machine ledger (cfg.Machine): held is what the machine granted and was not
	// given back (avail is part of it, plus lent CPU); lent is the CPU of blocked leases
	// (lent to other leases); asking is the ask waiting for an answer (0: none), for the
	// bundle commit forCommit when set; commits are bundle commits waiting for the
	// machine; trimAt says a trimTick is scheduled; askDenied stops asking again for a
	// demand the machine refused until something changes.
	held      sched.Resources
	lent      sched.Resources
	asking    uint64
	askSeq    uint64
	forCommit *pendingCommit
	commits   []*pendingCommit
	trimSet   bool
	askDenied bool
	owed      sched.Resources // what the machine reclaims (MachineReclaim), not given back yet
	askShape  sched.Resources // the demand the waiting ask is for
	wants     []sched.Resources
	lacks     []sched.Resources // balance's scratch: the demands and what each lacks

	pub *published // the last figures published to cfg.Live by this instance
}

// pendingCommit is a bundle commit waiting for the machine's answer.
type pendingCommit struct {
	m      *pb.BundleCommit
	sender *actor.PID
}

// owner is the address of the process that sent the commit (the group's creator), "" if
// unknown.
func (pc *pendingCommit) owner() string {
	if pc.sender == nil {
		return ""
	}
	return pc.sender.Address
}

// bundle is a placement-group bundle this node holds: res is what it took from the node,
// renamed what the node gained for it; owner the address of the process that committed it
// (the group's creator; OwnerGone releases its groups).
type bundle struct {
	group        string
	owner        string
	res, renamed sched.Resources
}

type returnedName struct {
	orig string
}

func bundleKey(group string, index int32) string { return fmt.Sprintf("%s/%d", group, index) }

// reservation is an actor instance waiting for resources.
type reservation struct {
	key    string
	res    sched.Resources
	sender *actor.PID
}

// Props returns the props of a raylet grain.
func Props(cfg Config) *actor.Props {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.TrimAfter <= 0 {
		cfg.TrimAfter = DefaultTrimAfter
	}
	return actor.PropsFromProducer(func() actor.Actor {
		r := &Raylet{
			cfg:      cfg,
			avail:    cfg.Total,
			leases:   make(map[string]*leaseState),
			owners:   make(map[string]map[string]bool),
			workers:  make([]*actor.PID, cfg.Workers),
			reserved: make(map[string]sched.Resources),
			total:    cfg.Total,
			bundles:  make(map[string]bundle),
		}
		if cfg.Machine != nil {
			r.avail = sched.Resources{} // nothing is held until the machine grants it
		}
		_, _ = rand.Read(r.prefix[:])
		return r
	})
}

func ownerKey(p *actor.PID) string { return p.Address + "/" + p.Id }

// Receive handles one message.
func (r *Raylet) Receive(ctx actor.Context) {
	if r.cfg.Changes != nil {
		if _, ok := ctx.Message().(Stats); !ok {
			r.cfg.Changes.Add(1)
		}
	}
	switch m := ctx.Message().(type) {
	case *actor.Started:
		if r.cfg.Started != nil {
			r.cfg.Started(ctx.Self())
		}
	case *pb.LeaseRequest:
		r.request(ctx, m)
	case *pb.LeaseRelease:
		r.release(ctx, string(m.LeaseId))
	case *actor.Terminated:
		// An owner is gone (its process died, or its runtime stopped): its leases return.
		key := ownerKey(m.Who)
		r.requests.RemoveFunc(func(q *request) bool {
			if ownerKey(q.owner) != key {
				return false
			}
			r.queued -= backlogOf(q)
			return true
		})
		for id := range r.owners[key] {
			r.release(ctx, id)
		}
		delete(r.owners, key)
	case *pb.TaskBlocked:
		if l := r.leases[string(m.LeaseId)]; l != nil && !l.blocked {
			l.blocked = true
			r.avail = r.avail.Add(cpuOf(l.res))
			r.lent = r.lent.Add(cpuOf(l.res))
			r.dispatch(ctx)
		}
	case *pb.TaskUnblocked:
		if l := r.leases[string(m.LeaseId)]; l != nil && l.blocked {
			l.blocked = false
			r.avail = r.avail.Sub(cpuOf(l.res))
			r.lent = r.lent.Sub(cpuOf(l.res))
		}
	case MachineGrant:
		r.onGrant(ctx, m)
	case MachineDeny:
		r.onDeny(ctx, m)
	case MachineFree:
		if r.asking != 0 && r.forCommit == nil {
			r.balance(ctx) // another of its demands may fit the machine now
		}
	case MachineReclaim:
		r.owed = m.Res
		r.payOwed(ctx)
		r.dispatch(ctx) // balance: withdraw or ask again
	case trimTick:
		r.trimSet = false
		r.trim()
	case *pb.ReserveResources:
		r.reserve(ctx, m)
	case *pb.BundleCommit:
		r.commitBundle(ctx, m)
	case OwnerGone:
		r.ownerGone(ctx, m.Address)
	case Stats:
		r.stats(ctx)
		return // changes nothing: nothing to publish
	}
	r.publish()
}

// stats answers Stats.
func (r *Raylet) stats(ctx actor.Context) {
	reply := &StatsReply{Total: r.total, Available: r.avail, Queued: r.queued, Requests: r.requests.Len(),
		Leases: len(r.leases), Granted: r.granted, Released: r.released}
	if r.cfg.Machine != nil {
		reply.Machine = true
		reply.Available = r.avail.Add(r.cfg.Machine.Free())
		reply.InUse = positive(r.held.Sub(r.avail))
	}
	reply.Demands, reply.DemandsOmitted = r.demands()
	ctx.Respond(reply)
}

// demands sums the work waiting here by shape, owner and group (StatsReply.Demands): one
// pass over the waiting lease requests and reservations, nothing when none wait. An
// owner's requests of one shape each carry the whole backlog of that shape, so an owner
// counts with the largest of them.
func (r *Raylet) demands() ([]Demand, int) {
	if r.requests.Len() == 0 && len(r.waitingRes) == 0 {
		return nil, 0
	}
	var out []Demand
	var class sched.Resources // the class being summed, and its entries by owner
	var own map[string]int
	r.requests.Each(func(shape sched.Resources, q *request) {
		if own == nil || !shape.Equal(class) {
			class, own = shape, map[string]int{}
		}
		owner := ownerKey(q.owner)
		i, ok := own[owner]
		if !ok {
			res, group := ownShape(shape)
			i = len(out)
			own[owner] = i
			out = append(out, Demand{Shape: res, Owner: owner, Group: group})
		}
		out[i].Tasks = max(out[i].Tasks, backlogOf(q))
	})
	actors := len(out)
	for _, w := range r.waitingRes {
		res, group := ownShape(w.res)
		found := false
		for i := actors; i < len(out); i++ {
			if out[i].Group == group && out[i].Shape.Equal(res) {
				out[i].Actors++
				found = true
				break
			}
		}
		if !found {
			out = append(out, Demand{Shape: res, Group: group, Actors: 1})
		}
	}
	slices.SortStableFunc(out, func(a, b Demand) int { return (b.Tasks + b.Actors) - (a.Tasks + a.Actors) })
	omitted := 0
	for _, d := range out[min(len(out), MaxDemands):] {
		omitted += d.Tasks + d.Actors
	}
	return out[:min(len(out), MaxDemands)], omitted
}

// ownShape is a demand's shape in the resources' own names, and its placement group: a
// demand inside a bundle (sched.InBundle) asks for the group-wide renamed form of each
// resource (and the per-bundle one, and a little of the group's marker), which says
// nothing to a reader; its group-wide form is what it asks for of the bundles.
func ownShape(res sched.Resources) (sched.Resources, string) {
	group := groupOf(res)
	if group == "" {
		return res, ""
	}
	var out sched.Resources
	suffix := "_group_" + group
	res.Each(func(name string, q sched.Quantity) {
		if own, ok := strings.CutSuffix(name, suffix); ok && own != sched.BundleMarker {
			out = out.With(own, q)
		}
	})
	return out, group
}

// backlogOf is what a waiting request counts in Stats.Queued.
func backlogOf(q *request) int { return int(max(1, q.backlog)) }

func cpuOf(res sched.Resources) sched.Resources {
	return sched.Resources{}.With(sched.CPU, res.Get(sched.CPU))
}

// request queues a lease request, or denies it at once if the node can never hold it.
func (r *Raylet) request(ctx actor.Context, m *pb.LeaseRequest) {
	if m.Owner == nil {
		r.cfg.Logger.Error("raylet: dropping a lease request without an owner")
		return
	}
	owner := actor.NewPID(m.Owner.Address, m.Owner.Id)
	res := tasks.ResourcesFromPB(m.Resources)
	if !r.total.Fits(res) {
		if g := groupOf(res); g != "" && r.total.Get(sched.BundleName(sched.BundleMarker, g, -1)) <= 0 {
			// A group this node holds no bundle of (any more): it was removed, or its
			// creator died (a bundle moves only when its node dies).
			ctx.Send(owner, &pb.LeaseGrant{RequestId: m.RequestId, Denied: groupGone(r.cfg.Node, g)})
			return
		}
		ctx.Send(owner, &pb.LeaseGrant{RequestId: m.RequestId, Denied: &pb.ErrorInfo{Kind: pb.ErrorInfo_INFEASIBLE, NodeId: string(r.cfg.Node),
			Message: fmt.Sprintf("task requires %v but node %s has %v in total", res, r.cfg.Node, r.total)}})
		return
	}
	q := &request{id: m.RequestId, owner: owner, res: res, backlog: m.Backlog}
	r.requests.Push(q, res)
	r.queued += backlogOf(q)
	r.dispatch(ctx)
	if !q.granted {
		// Word that it waits (the owner may spill its tasks now; a request it hears
		// nothing of it leaves alone much longer, as the node may only be slow).
		ctx.Send(owner, &pb.LeaseGrant{RequestId: m.RequestId, Queued: true})
		r.revokeFor(ctx, q)
	}
}

// revokeFor asks other owners to give back enough leases for q to fit once they are done:
// an owner keeps an idle lease for more work (sched.IdleHold) and keeps pushing to a busy
// one for up to sched.MaxAge, and neither may hold up another owner's request. Nor may it
// hold up the same owner's request of another shape (another scheduling class): only the
// owner's leases of q's own shape are left alone (it asks for more of those because it has
// more work than they take).
// Leases granted later, while q still waits, are revoked as they are granted (dispatch).
func (r *Raylet) revokeFor(ctx actor.Context, q *request) {
	freed := r.avail
	key := ownerKey(q.owner)
	for id, l := range r.leases {
		if freed.Fits(q.res) {
			return
		}
		if l.revoked || (l.owner == key && l.res.Equal(q.res)) {
			continue
		}
		l.revoked = true
		held := l.res
		if l.blocked {
			held = held.Sub(cpuOf(l.res))
		}
		freed = freed.Add(held)
		ctx.Send(l.ownerPID, &pb.LeaseRevoke{LeaseId: []byte(id)})
	}
}

// release gives a lease's resources back.
func (r *Raylet) release(ctx actor.Context, id string) {
	l, ok := r.leases[id]
	if !ok {
		return // a duplicate, or freed with its owner
	}
	held := l.res
	if l.blocked {
		held = held.Sub(cpuOf(l.res))
	}
	r.avail = r.avail.Add(held)
	if len(r.returned) > 0 {
		r.releaseReturned(held)
	}
	delete(r.leases, id)
	ctx.Send(l.worker, &pb.LeaseRelease{LeaseId: []byte(id)}) // the worker forgets it
	if ls := r.owners[l.owner]; ls != nil {
		delete(ls, id)
	}
	r.released++
	if l.blocked {
		r.lent = r.lent.Sub(cpuOf(l.res))
	}
	if !r.owed.IsZero() {
		r.payOwed(ctx) // before the local requests take it again
	}
	r.dispatch(ctx)
}

func (r *Raylet) worker(i int) *actor.PID {
	if r.workers[i] == nil {
		r.workers[i] = r.cfg.Worker(i)
	}
	return r.workers[i]
}

// dispatch grants reservations, then the waiting lease requests that fit, oldest first.
func (r *Raylet) dispatch(ctx actor.Context) {
	if len(r.waitingRes) > 0 {
		r.grantReservations(ctx)
	}
	if r.cfg.Machine != nil {
		defer r.balance(ctx)
	}
	if r.requests.Len() == 0 {
		return
	}
	r.buf, r.avail = r.requests.Dispatch(r.avail, 0, r.buf[:0])
	for _, q := range r.buf {
		q.granted = true
		r.queued -= backlogOf(q)
		w := r.worker(r.next % len(r.workers))
		r.next++
		if w == nil {
			r.avail = r.avail.Add(q.res)
			ctx.Send(q.owner, &pb.LeaseGrant{RequestId: q.id, Denied: &pb.ErrorInfo{Kind: pb.ErrorInfo_SYSTEM, NodeId: string(r.cfg.Node),
				Message: "no worker available on node " + string(r.cfg.Node)}})
			continue
		}
		r.seq++
		var idb [16]byte
		copy(idb[:8], r.prefix[:])
		binary.BigEndian.PutUint64(idb[8:], r.seq)
		id := string(idb[:])
		key := ownerKey(q.owner)
		ls := r.owners[key]
		if ls == nil {
			ls = map[string]bool{}
			r.owners[key] = ls
			ctx.Watch(q.owner)
		}
		ls[id] = true
		l := &leaseState{res: q.res, owner: key, ownerPID: q.owner, worker: w}
		r.leases[id] = l
		r.granted++
		ctx.Send(q.owner, &pb.LeaseGrant{RequestId: q.id, LeaseId: idb[:], Worker: &pb.PID{Address: w.Address, Id: w.Id}})
		if r.requests.Len() > 0 && r.requests.Any(func(o *request) bool { return !o.owner.Equal(q.owner) || !o.res.Equal(q.res) }) {
			// Others wait that asked before this lease existed, so their asks revoked none
			// of it (revokeFor): it goes back once its owner has run what it has, rather
			// than kept for more (sched.IdleHold) or pushed to for sched.MaxAge while they
			// wait. Its owner uses it once (sched.Leases.Revoke), so owners that take turns
			// this way each get work done per turn.
			l.revoked = true
			ctx.Send(q.owner, &pb.LeaseRevoke{LeaseId: idb[:]})
		}
	}
	clear(r.buf)
}

// reserve holds resources for an actor instance (granted ahead of queued tasks, as soon as
// they are free), or gives them back. Requests are idempotent by key.
func (r *Raylet) reserve(ctx actor.Context, m *pb.ReserveResources) {
	if m.Release {
		if res, ok := r.reserved[m.Key]; ok {
			delete(r.reserved, m.Key)
			r.avail = r.avail.Add(res)
			if len(r.returned) > 0 {
				r.releaseReturned(res)
			}
			r.dispatch(ctx)
		}
		for i, w := range r.waitingRes {
			if w.key == m.Key {
				r.waitingRes = append(r.waitingRes[:i:i], r.waitingRes[i+1:]...)
				break
			}
		}
		return
	}
	if _, ok := r.reserved[m.Key]; ok {
		if s := ctx.Sender(); s != nil {
			ctx.Send(s, &pb.ReserveResourcesReply{Key: m.Key})
		}
		return
	}
	res := tasks.ResourcesFromPB(m.Resources)
	for i, w := range r.waitingRes {
		if w.key == m.Key {
			r.waitingRes[i].sender = ctx.Sender() // a retry: answer the newest asker
			r.dispatch(ctx)
			return
		}
	}
	r.waitingRes = append(r.waitingRes, reservation{key: m.Key, res: res, sender: ctx.Sender()})
	r.dispatch(ctx)
}

func (r *Raylet) grantReservations(ctx actor.Context) {
	kept := r.waitingRes[:0]
	for _, w := range r.waitingRes {
		if !r.avail.Fits(w.res) {
			kept = append(kept, w)
			continue
		}
		r.avail = r.avail.Sub(w.res)
		r.reserved[w.key] = w.res
		if w.sender != nil {
			ctx.Send(w.sender, &pb.ReserveResourcesReply{Key: w.key})
		}
	}
	clear(r.waitingRes[len(kept):])
	r.waitingRes = kept
}

// commitBundle holds a placement-group bundle (the node gives up the bundle's resources
// and gains their renamed forms, sched.BundleResources) if its resources are free now, or,
// with Release, gives back every bundle of the group the node holds (a group is removed
// whole, as in Ray); it answers with a BundleCommitReply. Both are idempotent.
//
// A group given back while tasks still run in it: its renamed resources leave the node at
// once (no new task lands in it), what of its bundles was free goes back to the node at
// once, and what the running tasks hold goes back as each of their leases is released.
// Every task in a group holds the group-wide names of what it asked for, so the node's
// room for the group minus what is free of those names is exactly what is still in use.
func (r *Raylet) commitBundle(ctx actor.Context, m *pb.BundleCommit) {
	if r.cfg.Machine != nil && !m.Release {
		if _, ok := r.bundles[bundleKey(m.Group, m.Index)]; !ok && !r.avail.Fits(tasks.ResourcesFromPB(m.Resources)) {
			// Ask the machine for what is missing, now or never (balance).
			r.commits = append(r.commits, &pendingCommit{m: m, sender: ctx.Sender()})
			r.balance(ctx)
			return
		}
	}
	pc := &pendingCommit{m: m, sender: ctx.Sender()}
	reply := r.doCommit(ctx, pc)
	if pc.sender != nil {
		ctx.Send(pc.sender, reply)
	}
}

// doCommit is commitBundle against what the raylet holds; it returns the reply.
func (r *Raylet) doCommit(ctx actor.Context, pc *pendingCommit) *pb.BundleCommitReply {
	m := pc.m
	reply := &pb.BundleCommitReply{Group: m.Group, Index: m.Index, Ok: true}
	if m.Release {
		r.releaseGroup(ctx, m.Group)
		return reply
	}
	key := bundleKey(m.Group, m.Index)
	if _, ok := r.bundles[key]; ok {
		return reply
	}
	res := tasks.ResourcesFromPB(m.Resources)
	if !r.avail.Fits(res) {
		reply.Ok = false
		reply.Message = fmt.Sprintf("node %s has %v free, the bundle needs %v", r.cfg.Node, r.avail, res)
		return reply
	}
	b := bundle{group: m.Group, owner: pc.owner(), res: res, renamed: sched.BundleResources(m.Group, int(m.Index), res)}
	r.bundles[key] = b
	r.avail = r.avail.Sub(res).Add(b.renamed)
	r.total = r.total.Add(b.renamed)
	r.dispatch(ctx)
	return reply
}

// releaseGroup gives back every bundle of group the node holds (see commitBundle), and
// fails at once the lease requests queued for them: they can never be granted here now.
func (r *Raylet) releaseGroup(ctx actor.Context, group string) {
	var res, renamed sched.Resources
	for key, b := range r.bundles {
		if b.group == group {
			res, renamed = res.Add(b.res), renamed.Add(b.renamed)
			delete(r.bundles, key)
		}
	}
	if renamed.IsZero() {
		return
	}
	r.total = r.total.Sub(renamed)
	res.Each(func(name string, q sched.Quantity) {
		wild := sched.BundleName(name, group, -1)
		free := min(max(r.avail.Get(wild), 0), q)
		r.avail = r.avail.With(name, r.avail.Get(name)+free)
		if free < q {
			if r.returned == nil {
				r.returned = map[string]*returnedName{}
			}
			r.returned[wild] = &returnedName{orig: name}
		}
	})
	r.avail = r.avail.Sub(renamed)
	// A request waiting for the group's room: Ray fails the tasks of a removed group.
	// Every task in the group asks for its marker (sched.InBundle), so the request names
	// it; its owner fails the tasks with ErrPlacementGroupRemoved.
	marker := sched.BundleName(sched.BundleMarker, group, -1)
	r.requests.RemoveFunc(func(q *request) bool {
		if q.res.Get(marker) <= 0 {
			return false
		}
		r.queued -= backlogOf(q)
		ctx.Send(q.owner, &pb.LeaseGrant{RequestId: q.id, Denied: groupGone(r.cfg.Node, group)})
		return true
	})
	r.dispatch(ctx)
}

// ownerGone releases every group whose bundles here the process at address committed
// (OwnerGone: it died).
func (r *Raylet) ownerGone(ctx actor.Context, address string) {
	if address == "" {
		return
	}
	var groups []string
	for _, b := range r.bundles {
		if b.owner == address && !slices.Contains(groups, b.group) {
			groups = append(groups, b.group)
		}
	}
	for _, g := range groups {
		r.cfg.Logger.Info("raylet: releasing the bundles of a placement group whose creator died", "node", r.cfg.Node, "group", g, "creator", address)
		r.releaseGroup(ctx, g)
	}
}

// groupOf returns the placement group a demand is in (its bundle marker names it, see
// sched.InBundle), or "".
func groupOf(res sched.Resources) string {
	group := ""
	prefix := sched.BundleMarker + "_group_"
	res.Each(func(name string, _ sched.Quantity) {
		if rest, ok := strings.CutPrefix(name, prefix); ok && !strings.Contains(rest, "_") {
			group = rest // the group-wide form (the per-bundle one is "<index>_<group>")
		}
	})
	return group
}

// groupGone is the denial of a lease request for a bundle of group that node does not hold.
func groupGone(node ids.NodeID, group string) *pb.ErrorInfo {
	return &pb.ErrorInfo{Kind: pb.ErrorInfo_PLACEMENT_GROUP_REMOVED, NodeId: string(node),
		Message: fmt.Sprintf("placement group %s was removed: node %s holds none of its bundles now", group, node)}
}

// releaseReturned gives back, as the original resources, what a released lease held of
// groups given back since it was granted (its renamed part was just added to avail, where
// it only brings the given-back names back toward zero).
func (r *Raylet) releaseReturned(held sched.Resources) {
	held.Each(func(name string, q sched.Quantity) {
		rn, ok := r.returned[name]
		if !ok {
			return
		}
		r.avail = r.avail.With(rn.orig, r.avail.Get(rn.orig)+q)
		if r.avail.Get(name) >= 0 {
			delete(r.returned, name) // every lease of it is back
		}
	})
}

// ---- One ledger per machine (cfg.Machine) ----

// balance keeps what the raylet holds of its machine in step with its demand: with no ask
// waiting for an answer, it asks for what the oldest unmet demand lacks (a bundle commit
// waiting, now or never; else the oldest reservation that does not fit; else the oldest
// class of lease requests whose head does not fit); with no demand left, it schedules the
// return of what it holds and does not use (trim, after TrimAfter).
func (r *Raylet) balance(ctx actor.Context) {
	if r.forCommit != nil {
		return // a bundle's ask, now or never: answered at once
	}
	if r.asking == 0 {
		for len(r.commits) > 0 {
			pc := r.commits[0]
			res := tasks.ResourcesFromPB(pc.m.Resources)
			if r.deficit(res).IsZero() {
				r.commits = r.commits[1:]
				reply := r.doCommit(ctx, pc)
				if pc.sender != nil {
					ctx.Send(pc.sender, reply)
				}
				continue
			}
			r.ask(ctx, res, true, pc)
			return
		}
	}
	// The demands the machine can help, oldest first (reservations, then lease requests'
	// classes by their heads); the one asked for is the oldest that what the machine has
	// free covers, else the oldest (sched.AskFirst): a demand the machine cannot serve now
	// does not hold back smaller ones it can.
	r.wants, r.lacks = r.wants[:0], r.lacks[:0]
	for _, w := range r.waitingRes {
		if d := r.deficit(w.res); !d.IsZero() {
			r.wants, r.lacks = append(r.wants, w.res), append(r.lacks, d)
		}
	}
	if r.requests.Len() > 0 {
		r.requests.Backlog(func(shape sched.Resources, _ int) {
			if d := r.deficit(shape); !d.IsZero() {
				r.wants, r.lacks = append(r.wants, shape), append(r.lacks, d)
			}
		})
	}
	var want sched.Resources
	if i := sched.AskFirst(r.cfg.Machine.Free(), r.lacks); i >= 0 {
		want = r.wants[i]
	}
	clear(r.wants)
	clear(r.lacks)
	if !want.IsZero() && !r.owed.IsZero() {
		// The machine reclaims from us for others that wait: ask for nothing more (an
		// ask of ours ahead of theirs would take back what we give) until it stops.
		if r.asking != 0 {
			r.ask(ctx, sched.Resources{}, false, nil)
		}
		return
	}
	if !want.IsZero() {
		// Ask, or, with an ask waiting and resources of ours idle (a lease came back),
		// give them back and ask again for all of it (ask): the ledger replaces our
		// waiting ask, and we hold nothing idle while we wait.
		// Also ask again when the demand asked for changed (another fits the machine
		// now, or what fitted was served): the ledger keeps the ask's place in line.
		if !r.askDenied && (r.asking == 0 || !r.giveable().IsZero() || !want.Equal(r.askShape)) {
			r.ask(ctx, want, false, nil)
		}
		return
	}
	if r.asking != 0 {
		// The demand went (served by leases that came back, or its owners left) while
		// an ask waited: withdraw it (an ask for nothing), giving back what is idle.
		r.ask(ctx, sched.Resources{}, false, nil)
		return
	}
	if r.requests.Len() == 0 && len(r.waitingRes) == 0 && !r.trimSet && !r.giveable().IsZero() {
		r.trimSet = true
		self, sys := ctx.Self(), ctx.ActorSystem()
		time.AfterFunc(r.cfg.TrimAfter, func() { sys.Root.Send(self, trimTick{}) })
	}
}

// deficit is what of res, among the machine's resources, the raylet lacks now and the
// machine could give it: none of a resource the raylet already holds the machine's whole
// total of (every unit is leased out here, and only those leases' return can serve res; a
// job alone on its machine would otherwise ask, and withdraw the ask, for every lease
// request that queues behind its own busy leases: two ledger round trips per lease).
func (r *Raylet) deficit(res sched.Resources) sched.Resources {
	var need sched.Resources
	res.Each(func(name string, q sched.Quantity) {
		total := r.cfg.Total.Get(name)
		if total <= 0 {
			return // not a machine resource (a bundle's renamed one): the machine cannot help
		}
		if r.held.Get(name) >= total {
			return // all of it is ours already: nobody else holds any to give or reclaim
		}
		if d := q - r.avail.Get(name); d > 0 {
			need = need.With(name, d)
		}
	})
	return need
}

// ask asks the machine for what shape lacks. It holds nothing idle while it waits: two
// jobs that each kept part of what they need and asked for the rest would wait for each
// other for ever, so what is free is given back first and asked for again with the rest.
func (r *Raylet) ask(ctx actor.Context, shape sched.Resources, now bool, pc *pendingCommit) {
	r.giveBack(r.giveable())
	need := r.deficit(shape)
	r.askSeq++
	r.asking, r.forCommit, r.askShape = r.askSeq, pc, shape
	if err := r.cfg.Machine.Ask(r.asking, need, now); err != nil {
		r.cfg.Logger.Error("raylet: cannot ask the machine's ledger for resources; work that needs them waits",
			"node", r.cfg.Node, "need", need, "err", err)
		r.asking, r.forCommit = 0, nil
		r.askDenied = true
		if pc != nil {
			r.commits = r.commits[1:]
			if pc.sender != nil {
				ctx.Send(pc.sender, &pb.BundleCommitReply{Group: pc.m.Group, Index: pc.m.Index,
					Message: fmt.Sprintf("node %s cannot reach its machine's ledger: %v", r.cfg.Node, err)})
			}
		}
	}
}

// onGrant takes what the machine granted and puts it to use.
func (r *Raylet) onGrant(ctx actor.Context, m MachineGrant) {
	r.held = r.held.Add(m.Res)
	r.avail = r.avail.Add(m.Res)
	if m.ID == r.asking {
		r.asking, r.forCommit = 0, nil
	}
	r.askDenied = false
	r.dispatch(ctx) // grants what now fits; balance commits the bundle, asks again or trims
}

// onDeny: the machine refused an ask: a bundle commit is refused with its reason; other
// demand stops asking until something changes (the raylet refuses what the machine can
// never hold as infeasible, so this is a machine smaller than its raylet's total).
func (r *Raylet) onDeny(ctx actor.Context, m MachineDeny) {
	if m.ID != r.asking {
		return
	}
	pc := r.forCommit
	r.asking, r.forCommit = 0, nil
	if pc != nil {
		r.commits = r.commits[1:]
		if pc.sender != nil {
			ctx.Send(pc.sender, &pb.BundleCommitReply{Group: pc.m.Group, Index: pc.m.Index,
				Message: fmt.Sprintf("node %s: %s", r.cfg.Node, m.Message)})
		}
	} else {
		r.askDenied = true
		r.cfg.Logger.Warn("raylet: the machine's ledger refused resources; work that needs them waits", "node", r.cfg.Node, "why", m.Message)
	}
	r.balance(ctx)
}

// giveable is what the raylet holds of its machine, free and not lent.
func (r *Raylet) giveable() sched.Resources {
	var out sched.Resources
	r.held.Each(func(name string, h sched.Quantity) {
		if g := min(r.avail.Get(name)-r.lent.Get(name), h); g > 0 {
			out = out.With(name, g)
		}
	})
	return out
}

// trim gives back what the raylet holds and has no use for, if it still has none.
func (r *Raylet) trim() {
	if r.requests.Len() > 0 || len(r.waitingRes) > 0 || r.asking != 0 || len(r.commits) > 0 {
		return
	}
	r.giveBack(r.giveable())
}

// giveBack gives g (free here) back to the machine; it reports whether it went.
func (r *Raylet) giveBack(g sched.Resources) bool {
	if g.IsZero() {
		return false
	}
	if err := r.cfg.Machine.Give(g); err != nil {
		r.cfg.Logger.Warn("raylet: cannot give resources back to the machine's ledger", "node", r.cfg.Node, "err", err)
		return false
	}
	r.held, r.avail = r.held.Sub(g), r.avail.Sub(g)
	return true
}

// positive keeps the positive amounts of res.
func positive(res sched.Resources) sched.Resources {
	var out sched.Resources
	res.Each(func(name string, q sched.Quantity) {
		if q > 0 {
			out = out.With(name, q)
		}
	})
	return out
}

// payOwed gives back to the machine what it reclaims: what is free now, and, for the rest,
// it asks the owners of enough leases to give them back (LeaseRevoke; the lease's task
// finishes first), whose resources then go back in release before anything local takes
// them.
func (r *Raylet) payOwed(ctx actor.Context) {
	if r.cfg.Machine == nil || r.owed.IsZero() {
		return
	}
	var give sched.Resources
	free := r.giveable()
	r.owed.Each(func(name string, q sched.Quantity) {
		if g := min(q, free.Get(name)); g > 0 {
			give = give.With(name, g)
		}
	})
	if r.giveBack(give) {
		r.owed = positive(r.owed.Sub(give))
	}
	// Revoke leases until those revoked cover what is still owed.
	coming := sched.Resources{}
	for _, l := range r.leases {
		if l.revoked {
			coming = coming.Add(l.res)
		}
	}
	for id, l := range r.leases {
		if coming.Fits(r.owed) {
			return
		}
		if l.revoked || !overlaps(l.res, r.owed) {
			continue
		}
		l.revoked = true
		coming = coming.Add(l.res)
		ctx.Send(l.ownerPID, &pb.LeaseRevoke{LeaseId: []byte(id)})
	}
}

// overlaps reports whether a holds some of a resource b has.
func overlaps(a, b sched.Resources) bool {
	found := false
	b.Each(func(name string, q sched.Quantity) {
		if q > 0 && a.Get(name) > 0 {
			found = true
		}
	})
	return found
}
