package core

import (
	"errors"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/ids"
	"github.com/ray-go/ray/internal/pb"
	"github.com/ray-go/ray/objects"
	"github.com/ray-go/ray/tasks"
	"github.com/ray-go/ray/tasks/sched"
)

// Arg is one argument as the API hands it over: encoded bytes, or a reference.
type Arg struct {
	Data  []byte
	Ref   ids.ObjectID
	IsRef bool
	// Nested are the refs inside Data (kept alive until the task finishes).
	Nested []Nested
}

// Call describes one task submission.
type Call struct {
	Function        string
	Args            []Arg
	Resources       sched.Resources
	MaxRetries      int32
	RetryExceptions bool
	Strategy        string
	AffinityNode    string
	AffinitySoft    bool
}

// SubmitError is a submission that failed before the task could run: unknown function,
// infeasible resources, or an argument the runtime cannot use. Its return object is made
// ready with this error too, so dependents fail fast instead of hanging.
type SubmitError struct {
	Info *pb.ErrorInfo
	Err  error
}

func (e *SubmitError) Error() string { return e.Err.Error() }
func (e *SubmitError) Unwrap() error { return e.Err }

// Submit submits a task on behalf of tc's task and returns the ID of its return object.
// The object exists (pending, or failed with the returned error) when Submit returns, and
// the caller holds one reference to it, which it must give back with ReleaseRef.
func (c *Core) Submit(tc *TaskContext, call Call) (ids.ObjectID, error) {
	tid := ids.ChildTaskID(tc.idSeed(), tc.children.Add(1))
	ret := ids.ReturnID(tid, 1)
	select {
	case <-c.closed:
		return ret, ErrShutdown
	default:
	}
	c.mem.Create(ret)
	if _, ok := tasks.Lookup(call.Function); !ok {
		err := &tasks.UnknownFunctionError{Name: call.Function}
		return ret, c.failSubmit(ret, tid, call.Function, pb.ErrorInfo_UNKNOWN_FUNCTION, err)
	}
	if err := c.cfg.Feasible(call.Resources); err != nil {
		return ret, c.failSubmit(ret, tid, call.Function, pb.ErrorInfo_INFEASIBLE, err)
	}
	spec := &pb.TaskSpec{
		TaskId:          tid[:],
		JobId:           string(c.cfg.Job),
		Function:        call.Function,
		Args:            make([]*pb.Arg, len(call.Args)),
		Resources:       tasks.ResourcesToPB(call.Resources),
		MaxRetries:      call.MaxRetries,
		RetryExceptions: call.RetryExceptions,
		ParentTaskId:    tc.Task[:],
		Owner:           c.ownerW,
		NumReturns:      1,
		Strategy:        call.Strategy,
		AffinityNode:    call.AffinityNode,
		AffinitySoft:    call.AffinitySoft,
	}
	var argRefs []ids.ObjectID
	for i, a := range call.Args {
		if a.IsRef {
			if _, _, known := c.mem.Get(a.Ref); !known {
				err := fmt.Errorf("argument %d: %w: %s (it was released, or is owned by another process)", i+1, ErrUnknownObject, a.Ref)
				return ret, c.failSubmit(ret, tid, call.Function, pb.ErrorInfo_OBJECT_LOST, err)
			}
			ref := a.Ref
			spec.Args[i] = &pb.Arg{ObjectId: ref[:], IsRef: true}
			argRefs = append(argRefs, ref)
		} else {
			spec.Args[i] = &pb.Arg{Data: a.Data}
		}
	}
	// The caller's reference to the result, the lineage record, and the submitted task's
	// references to its arguments (dropped when it finishes).
	c.refs.Submitted(tid, c.holdArgs(argRefs))
	c.pinArgs(ret, call.Args)
	if c.cfg.Lineage != nil {
		// Recorded before the task can run, with refs as IDs: what reconstruction reads.
		if err := c.cfg.Lineage.Record(spec); err != nil {
			c.cfg.Logger.Warn("ray: task runs without a lineage record; it cannot be reconstructed", "task", tid, "err", err)
		}
	}
	p := &pending{spec: spec, argRefs: argRefs}
	c.keepSpec(tid, spec)
	c.mu.Lock()
	c.tasks[tid] = p
	c.mu.Unlock()

	p.waiting.Store(int32(len(argRefs)) + 1)
	for _, r := range argRefs {
		if !c.mem.OnReady(r, func(objects.Value) { c.depReady(tid, p) }) {
			c.depReady(tid, p) // freed meanwhile: dispatch reports it lost
		}
	}
	c.depReady(tid, p)
	return ret, nil
}

// argsKey is the key under which the refs nested in a task's argument values are pinned:
// the return ID with its index set to 0, which no object has.
func argsKey(ret ids.ObjectID) ids.ObjectID { return ids.ReturnID(ret.Task(), 0) }

// pinArgs keeps the refs nested in argument values alive until the task finishes.
func (c *Core) pinArgs(ret ids.ObjectID, args []Arg) {
	var nested []Nested
	for _, a := range args {
		nested = append(nested, a.Nested...)
	}
	c.pin(argsKey(ret), nested)
}

func (c *Core) failSubmit(ret ids.ObjectID, tid ids.TaskID, fn string, kind pb.ErrorInfo_Kind, err error) error {
	info := &pb.ErrorInfo{Kind: kind, Function: fn, TaskId: tid[:], Message: err.Error(), NodeId: string(c.cfg.Node)}
	c.refs.AddLocal(ret) // the caller's reference, as Submit's success path takes it
	c.mem.Set(ret, objects.Value{Err: info})
	return &SubmitError{Info: info, Err: err}
}

// depReady counts one ready dependency; the last one dispatches the task.
func (c *Core) depReady(tid ids.TaskID, p *pending) {
	if p.waiting.Add(-1) == 0 {
		c.dispatch(tid, p)
	}
}

// dispatch fills in argument values and locations and sends the task to the raylet,
// or fails it with its first failed argument's error.
func (c *Core) dispatch(tid ids.TaskID, p *pending) {
	c.mu.Lock()
	if c.tasks[tid] != p || p.dispatched {
		c.mu.Unlock()
		return // cancelled or already sent
	}
	p.dispatched = true
	c.mu.Unlock()
	for i, a := range p.spec.Args {
		if !a.IsRef {
			continue
		}
		id, _ := ids.ObjectIDFromBytes(a.ObjectId)
		v, ready, known := c.mem.Get(id)
		if !known || !ready {
			c.complete(tid, p, &pb.TaskResult{TaskId: tid[:], Error: &pb.ErrorInfo{
				Kind: pb.ErrorInfo_OBJECT_LOST, Function: p.spec.Function, TaskId: tid[:], NodeId: string(c.cfg.Node),
				Message: fmt.Sprintf("argument %d: object %s was freed before the task could run", i+1, id)}})
			return
		}
		if v.Err != nil {
			// Ray semantics: a task whose argument failed fails with that same error.
			c.complete(tid, p, &pb.TaskResult{TaskId: tid[:], Error: v.Err})
			return
		}
		if v.InStore {
			a.NodeId = string(v.Node)
			a.Size = v.Size
		} else {
			a.Data = v.Data
		}
	}
	if p.actor != nil {
		c.sendActorCall(p)
		return
	}
	c.send(tid, p)
}

// onResult handles a task's outcome: retry, or complete.
func (c *Core) onResult(r *pb.TaskResult) {
	tid, err := ids.TaskIDFromBytes(r.TaskId)
	if err != nil {
		return
	}
	c.mu.Lock()
	p, ok := c.tasks[tid]
	if !ok || r.Attempt != p.spec.Attempt {
		c.mu.Unlock()
		return // a duplicate or a stale attempt: handlers are idempotent
	}
	c.placedDone(p)
	if r.Error != nil && retriable(p.spec, r.Error) {
		p.spec.Attempt++
		c.mu.Unlock()
		c.stats.Retried.Add(1)
		if r.Error.Kind == pb.ErrorInfo_OBJECT_LOST && c.recoverArgs(tid, p) {
			return // sent again once its lost arguments are recreated
		}
		c.send(tid, p)
		return
	}
	c.mu.Unlock()
	c.complete(tid, p, r)
}

func retriable(spec *pb.TaskSpec, e *pb.ErrorInfo) bool {
	if spec.Attempt >= spec.MaxRetries {
		return false
	}
	switch e.Kind {
	case pb.ErrorInfo_APPLICATION, pb.ErrorInfo_PANIC:
		return spec.RetryExceptions
	case pb.ErrorInfo_SYSTEM, pb.ErrorInfo_OBJECT_LOST:
		return true
	}
	return false
}

// complete makes the task's return ready and releases its argument references.
func (c *Core) complete(tid ids.TaskID, p *pending, r *pb.TaskResult) {
	c.mu.Lock()
	if c.tasks[tid] != p {
		c.mu.Unlock()
		return
	}
	delete(c.tasks, tid)
	c.mu.Unlock()
	if p.actor != nil {
		c.actorFinished(p)
	}
	ret := ids.ReturnID(tid, 1)
	v := objects.Value{Data: r.Data, InStore: r.InStore, Node: ids.NodeID(r.NodeId), Size: r.Size, Err: r.Error, Meta: r.Meta}
	if len(r.Nested) > 0 && r.Error == nil {
		if nested, err := ParseNested(r.Nested); err == nil {
			c.pinAdopted(ret, nested)
		} else {
			c.cfg.Logger.Warn("ray: a task's result holds corrupt refs", "task", tid, "err", err)
		}
	}
	owned := c.unborrowArgs(p.argRefs)
	if len(owned) == 0 && c.mem.SetIfPresent(ret, v) {
		// The fast path of a task without owned ref arguments: the reference table has
		// nothing to drop, and the result's entry, made at submission, is still there, so
		// a handle to it lived at least until now. A handle dropped since removes the
		// entry, and with it the value, when its release frees it (after this Set).
		c.unpin(argsKey(ret))
		return
	}
	c.mem.Set(ret, v)
	unreferenced, released := c.refs.Completed(ret, owned)
	if unreferenced {
		// Every handle to the result was dropped while the task ran.
		released.AddValue(ret)
	}
	c.free(released)
	c.unpin(argsKey(ret))
}

// Cancel cancels the task that produces id: a queued or waiting task never runs; a
// running one has its context cancelled. Its result becomes a cancellation error.
func (c *Core) Cancel(id ids.ObjectID) error {
	tid := id.Task()
	c.mu.Lock()
	p, ok := c.tasks[tid]
	if !ok {
		c.mu.Unlock()
		return nil // finished already (or never existed): nothing to cancel
	}
	dispatched := p.dispatched
	if p.actor != nil {
		c.mu.Unlock()
		return c.cancelActorCall(tid, p)
	}
	p.spec.MaxRetries = 0
	c.mu.Unlock()
	if !dispatched {
		c.complete(tid, p, &pb.TaskResult{TaskId: tid[:], Error: &pb.ErrorInfo{
			Kind: pb.ErrorInfo_CANCELLED, Function: p.spec.Function, TaskId: tid[:], Message: "task was cancelled before it ran"}})
		return nil
	}
	c.mu.Lock()
	node := p.node
	c.mu.Unlock()
	var r *actor.PID
	if c.cfg.Cluster != nil && node != "" {
		r = c.cfg.Cluster.Raylet(node)
	} else {
		r = c.cfg.Raylet()
	}
	if r != nil {
		c.root.Send(r, &pb.CancelTask{TaskId: tid[:]})
		return nil
	}
	return errors.New("core: no scheduler to cancel the task")
}
