package raylet

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/ids"
	"github.com/ray-go/ray/internal/pb"
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
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	if c.Worker == nil || c.Workers <= 0 {
		return errors.New("raylet: Config.Worker and a positive Config.Workers are required")
	}
	return nil
}

type running struct {
	res     sched.Resources
	worker  *actor.PID
	owner   *pb.PID
	blocked bool
}

type tick struct{}

// Stats asks a raylet for its counters; it answers with a *StatsReply (local only).
type Stats struct{}

// StatsReply is a raylet's view of its node.
type StatsReply struct {
	Total, Available sched.Resources
	Queued, Running  int
	Dispatched       int64
}

// Raylet is the grain's actor; its state is owned by its mailbox.
type Raylet struct {
	cfg        Config
	avail      sched.Resources
	queue      sched.Queue[*pb.TaskSpec]
	queued     map[ids.TaskID]int32 // attempt queued
	running    map[ids.TaskID]*running
	workers    []*actor.PID
	next       int
	tickOn     bool
	dispatched int64
	buf        []*pb.TaskSpec
	batches    map[*actor.PID]*pb.TaskBatch
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
			running: make(map[ids.TaskID]*running),
			workers: make([]*actor.PID, cfg.Workers),
			batches: make(map[*actor.PID]*pb.TaskBatch),
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
	case *pb.TaskDone:
		for _, b := range m.TaskIds {
			id, err := ids.TaskIDFromBytes(b)
			if err != nil {
				continue
			}
			if t, ok := r.running[id]; ok {
				r.avail = r.avail.Add(r.held(t))
				delete(r.running, id)
			}
		}
		r.scheduleTick(ctx)
	case *pb.TaskBlocked:
		if t := r.task(m.TaskId); t != nil && !t.blocked {
			t.blocked = true
			r.avail = r.avail.Add(cpuOf(t.res))
			r.scheduleTick(ctx)
		}
	case *pb.TaskUnblocked:
		if t := r.task(m.TaskId); t != nil && t.blocked {
			t.blocked = false
			r.avail = r.avail.Sub(cpuOf(t.res))
		}
	case *pb.CancelTask:
		r.cancel(ctx, m)
	case Stats:
		ctx.Respond(&StatsReply{Total: r.cfg.Total, Available: r.avail, Queued: r.queue.Len(), Running: len(r.running), Dispatched: r.dispatched})
	}
}

func cpuOf(res sched.Resources) sched.Resources {
	return sched.Resources{}.With(sched.CPU, res.Get(sched.CPU))
}

// held is what a running task holds now: all its resources, less its CPU while blocked.
func (r *Raylet) held(t *running) sched.Resources {
	if t.blocked {
		return t.res.Sub(cpuOf(t.res))
	}
	return t.res
}

func (r *Raylet) task(b []byte) *running {
	id, err := ids.TaskIDFromBytes(b)
	if err != nil {
		return nil
	}
	return r.running[id]
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
	if _, ok := r.running[id]; ok && s.Attempt == 0 {
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
	if s.Owner == nil {
		return
	}
	ctx.Send(actor.NewPID(s.Owner.Address, s.Owner.Id), &pb.TaskResult{TaskId: s.TaskId, Attempt: s.Attempt, Error: e})
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

func (r *Raylet) dispatch(ctx actor.Context) {
	if r.queue.Len() == 0 {
		return
	}
	r.buf, r.avail = r.queue.Dispatch(r.avail, 0, r.buf[:0])
	for _, s := range r.buf {
		id, _ := ids.TaskIDFromBytes(s.TaskId)
		delete(r.queued, id)
		w := r.worker(r.next % len(r.workers))
		r.next++
		if w == nil {
			r.avail = r.avail.Add(tasks.ResourcesFromPB(s.Resources))
			r.reply(ctx, s, &pb.ErrorInfo{Kind: pb.ErrorInfo_SYSTEM, Function: s.Function, TaskId: s.TaskId, NodeId: string(r.cfg.Node),
				Message: "no worker available on node " + string(r.cfg.Node)})
			continue
		}
		r.running[id] = &running{res: tasks.ResourcesFromPB(s.Resources), worker: w, owner: s.Owner}
		b := r.batches[w]
		if b == nil {
			b = &pb.TaskBatch{}
			r.batches[w] = b
		}
		b.Tasks = append(b.Tasks, s)
		r.dispatched++
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
	if t, ok := r.running[id]; ok {
		ctx.Send(t.worker, m)
	}
}
