package raylet

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/ids"
	"github.com/ray-go/ray/internal/pb"
	"github.com/ray-go/ray/tasks"
	"github.com/ray-go/ray/tasks/sched"
)

// Lease reuse policy (see the package doc).
const (
	// FastTask is the per-class mean run time under which queued tasks share leases.
	FastTask = 500 * time.Microsecond
	// MaxLeaseDepth bounds the tasks of one lease.
	MaxLeaseDepth = 32
)

// Config is what a raylet needs from its node.
type Config struct {
	Node  ids.NodeID
	Total sched.Resources
	// Worker returns the PID of worker slot i (0 <= i < Workers).
	Worker  func(i int) *actor.PID
	Workers int
	Logger  *slog.Logger
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	if c.Worker == nil || c.Workers <= 0 {
		return errors.New("raylet: Config.Worker and a positive Config.Workers are required")
	}
	return nil
}

type leaseState struct {
	res     sched.Resources
	worker  *actor.PID
	tasks   []ids.TaskID
	class   string
	blocked bool
}

// classStats is a scheduling class's run-time estimate (an exponential moving average of
// the mean task time of its leases).
type classStats struct {
	mean  float64 // nanoseconds per task
	known bool
}

type tick struct{}

// Stats asks a raylet for its counters; it answers with a *StatsReply (local only).
type Stats struct{}

// StatsReply is a raylet's view of its node.
type StatsReply struct {
	Total, Available       sched.Resources
	Queued, Leases, Leased int
	Dispatched, Granted    int64
}

// Raylet is the grain's actor; its state is owned by its mailbox.
type Raylet struct {
	cfg        Config
	avail      sched.Resources
	queue      sched.Queue[*pb.TaskSpec]
	queued     map[ids.TaskID]int32 // attempt queued
	leases     map[ids.TaskID]*leaseState
	leaseOf    map[ids.TaskID]ids.TaskID // leased task -> lease
	classes    map[string]*classStats
	workers    []*actor.PID
	next       int
	tickOn     bool
	dispatched int64
	granted    int64
	buf, more  []*pb.TaskSpec
	batches    map[*actor.PID]*pb.LeaseBatch
	reserved   map[string]sched.Resources // actor instances holding resources
	waitingRes []reservation              // not granted yet, in arrival order
}

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
	return actor.PropsFromProducer(func() actor.Actor {
		return &Raylet{
			cfg:     cfg,
			avail:   cfg.Total,
			queued:  make(map[ids.TaskID]int32),
			leases:  make(map[ids.TaskID]*leaseState),
			leaseOf: make(map[ids.TaskID]ids.TaskID),
			classes: make(map[string]*classStats),
			workers: make([]*actor.PID, cfg.Workers),
			batches: make(map[*actor.PID]*pb.LeaseBatch),

			reserved: make(map[string]sched.Resources),
		}
	})
}

// Receive handles one message.
func (r *Raylet) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *pb.TaskSpec:
		r.enqueue(ctx, m)
	case *pb.TaskBatch:
		for _, s := range m.Tasks {
			r.enqueue(ctx, s)
		}
	case tick:
		r.tickOn = false
		r.dispatch(ctx)
	case *pb.LeaseDone:
		r.leaseDone(ctx, m)
	case *pb.LeaseReturn:
		for _, s := range m.Tasks {
			id, err := ids.TaskIDFromBytes(s.TaskId)
			if err != nil {
				continue
			}
			delete(r.leaseOf, id)
			r.queued[id] = s.Attempt
			r.queue.Push(s, tasks.ResourcesFromPB(s.Resources))
		}
		r.scheduleTick(ctx)
	case *pb.TaskBlocked:
		if l := r.lease(m.LeaseId); l != nil && !l.blocked {
			l.blocked = true
			r.avail = r.avail.Add(cpuOf(l.res))
			r.scheduleTick(ctx)
		}
	case *pb.TaskUnblocked:
		if l := r.lease(m.LeaseId); l != nil && l.blocked {
			l.blocked = false
			r.avail = r.avail.Sub(cpuOf(l.res))
		}
	case *pb.CancelTask:
		r.cancel(ctx, m)
	case *pb.ReserveResources:
		r.reserve(ctx, m)
	case Stats:
		ctx.Respond(&StatsReply{Total: r.cfg.Total, Available: r.avail, Queued: r.queue.Len(),
			Leases: len(r.leases), Leased: len(r.leaseOf), Dispatched: r.dispatched, Granted: r.granted})
	}
}

func cpuOf(res sched.Resources) sched.Resources {
	return sched.Resources{}.With(sched.CPU, res.Get(sched.CPU))
}

func (r *Raylet) lease(b []byte) *leaseState {
	id, err := ids.TaskIDFromBytes(b)
	if err != nil {
		return nil
	}
	return r.leases[id]
}

func (r *Raylet) leaseDone(ctx actor.Context, m *pb.LeaseDone) {
	id, err := ids.TaskIDFromBytes(m.LeaseId)
	if err != nil {
		return
	}
	l, ok := r.leases[id]
	if !ok {
		return // a duplicate
	}
	held := l.res
	if l.blocked {
		held = held.Sub(cpuOf(l.res))
	}
	r.avail = r.avail.Add(held)
	for _, t := range l.tasks {
		if r.leaseOf[t] == id {
			delete(r.leaseOf, t)
		}
	}
	delete(r.leases, id)
	if m.TasksRun > 0 {
		c := r.classes[l.class]
		if c == nil {
			c = &classStats{}
			r.classes[l.class] = c
		}
		mean := float64(m.RunNanos) / float64(m.TasksRun)
		if c.known {
			c.mean = 0.7*c.mean + 0.3*mean
		} else {
			c.mean, c.known = mean, true
		}
	}
	r.scheduleTick(ctx)
}

func (r *Raylet) enqueue(ctx actor.Context, s *pb.TaskSpec) {
	id, err := ids.TaskIDFromBytes(s.TaskId)
	if err != nil {
		r.cfg.Logger.Error("raylet: dropping a task spec with a bad ID", "err", err)
		return
	}
	if a, ok := r.queued[id]; ok && a == s.Attempt {
		return
	}
	if _, ok := r.leaseOf[id]; ok && s.Attempt == 0 {
		return
	}
	res := tasks.ResourcesFromPB(s.Resources)
	if !r.cfg.Total.Fits(res) {
		r.reply(ctx, s, &pb.ErrorInfo{Kind: pb.ErrorInfo_INFEASIBLE, Function: s.Function, TaskId: s.TaskId, NodeId: string(r.cfg.Node),
			Message: fmt.Sprintf("task requires %v but node %s has %v in total", res, r.cfg.Node, r.cfg.Total)})
		return
	}
	r.queued[id] = s.Attempt
	r.queue.Push(s, res)
	r.scheduleTick(ctx)
}

func (r *Raylet) reply(ctx actor.Context, s *pb.TaskSpec, e *pb.ErrorInfo) {
	to := s.ResultTo()
	if to == nil {
		return
	}
	ctx.Send(actor.NewPID(to.Address, to.Id), &pb.TaskResult{TaskId: s.TaskId, Attempt: s.Attempt, Error: e})
}

func (r *Raylet) scheduleTick(ctx actor.Context) {
	if !r.tickOn && r.queue.Len() > 0 {
		r.tickOn = true
		ctx.Send(ctx.Self(), tick{})
	}
}

func (r *Raylet) worker(i int) *actor.PID {
	if r.workers[i] == nil {
		r.workers[i] = r.cfg.Worker(i)
	}
	return r.workers[i]
}

// depth is how many tasks a new lease of class may carry, given how many leases this
// dispatch grants and how many tasks wait.
func (r *Raylet) depth(class string, grants, waiting int) int {
	c := r.classes[class]
	if c == nil || !c.known || c.mean >= float64(FastTask) || grants == 0 {
		return 1
	}
	d := 1 + waiting/grants
	return min(d, MaxLeaseDepth)
}

// reserve holds resources for an actor instance (granted ahead of queued tasks, as soon as
// they are free), or gives them back. Requests are idempotent by key.
func (r *Raylet) reserve(ctx actor.Context, m *pb.ReserveResources) {
	if m.Release {
		if res, ok := r.reserved[m.Key]; ok {
			delete(r.reserved, m.Key)
			r.avail = r.avail.Add(res)
			r.scheduleTick(ctx)
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
			r.grantReservations(ctx)
			return
		}
	}
	r.waitingRes = append(r.waitingRes, reservation{key: m.Key, res: res, sender: ctx.Sender()})
	r.grantReservations(ctx)
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

func (r *Raylet) dispatch(ctx actor.Context) {
	if len(r.waitingRes) > 0 {
		r.grantReservations(ctx)
	}
	if r.queue.Len() == 0 {
		return
	}
	r.buf, r.avail = r.queue.Dispatch(r.avail, 0, r.buf[:0])
	grants := len(r.buf)
	for _, s := range r.buf {
		id, _ := ids.TaskIDFromBytes(s.TaskId)
		res := tasks.ResourcesFromPB(s.Resources)
		w := r.worker(r.next % len(r.workers))
		r.next++
		if w == nil {
			r.avail = r.avail.Add(res)
			delete(r.queued, id)
			r.reply(ctx, s, &pb.ErrorInfo{Kind: pb.ErrorInfo_SYSTEM, Function: s.Function, TaskId: s.TaskId, NodeId: string(r.cfg.Node),
				Message: "no worker available on node " + string(r.cfg.Node)})
			continue
		}
		class := res.String()
		pl := &pb.Lease{LeaseId: s.TaskId, Tasks: []*pb.TaskSpec{s}}
		st := &leaseState{res: res, worker: w, class: class, tasks: []ids.TaskID{id}}
		if d := r.depth(class, grants, r.queue.Len()); d > 1 {
			// More tasks that fit this grant run after s on the same worker. Each pop is
			// against the whole grant: they run one after another, not side by side.
			for len(pl.Tasks) < d {
				r.more, _ = r.queue.Dispatch(res, 1, r.more[:0])
				if len(r.more) == 0 {
					break
				}
				m := r.more[0]
				mid, _ := ids.TaskIDFromBytes(m.TaskId)
				pl.Tasks = append(pl.Tasks, m)
				st.tasks = append(st.tasks, mid)
			}
			clear(r.more)
		}
		for _, t := range st.tasks {
			delete(r.queued, t)
			r.leaseOf[t] = id
		}
		r.leases[id] = st
		r.granted++
		r.dispatched += int64(len(pl.Tasks))
		b := r.batches[w]
		if b == nil {
			b = &pb.LeaseBatch{}
			r.batches[w] = b
		}
		b.Leases = append(b.Leases, pl)
	}
	for w, b := range r.batches {
		ctx.Request(w, b)
		delete(r.batches, w)
	}
	clear(r.buf)
}

func (r *Raylet) cancel(ctx actor.Context, m *pb.CancelTask) {
	id, err := ids.TaskIDFromBytes(m.TaskId)
	if err != nil {
		return
	}
	if _, ok := r.queued[id]; ok {
		delete(r.queued, id)
		r.queue.RemoveFunc(func(s *pb.TaskSpec) bool {
			if string(s.TaskId) != string(m.TaskId) {
				return false
			}
			r.reply(ctx, s, &pb.ErrorInfo{Kind: pb.ErrorInfo_CANCELLED, Function: s.Function, TaskId: s.TaskId, NodeId: string(r.cfg.Node),
				Message: "task was cancelled while queued"})
			return true
		})
		return
	}
	if lid, ok := r.leaseOf[id]; ok {
		if l := r.leases[lid]; l != nil {
			ctx.Send(l.worker, m)
		}
	}
}
