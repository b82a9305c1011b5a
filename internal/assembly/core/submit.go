package core

import (
	"errors"
	"fmt"
	"time"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
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
	// PlacementGroup and BundleIndex place the task in a bundle of a placement group this
	// runtime created (Strategy StrategyPlacementGroup; index -1: any bundle).
	PlacementGroup string
	BundleIndex    int32
	// NumReturns is how many values the function returns (0 or 1: one; more: see
	// SubmitReturns). It must match the function's registration (tasks.Function.Returns).
	NumReturns int32
	// ResourcesPB is the wire form of Resources (tasks.ResourcesToPB), made once by a
	// caller that submits the same resources many times and shared by every spec it goes
	// into, so never modified; nil: Submit converts Resources.
	ResourcesPB []*pb.ResourceQty
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

// Submit submits a task on behalf of tc's task and returns the ID of its return object,
// and the object's entry in this owner's table, which GetIn and ReleaseOwned take to find
// it without a lookup. The object exists (pending, or failed with the returned error) when
// Submit returns, and the caller holds one reference to it, which it must give back with
// ReleaseOwned. The rest (lineage, dependencies, dispatch) is the task's shard's, which
// gets it as a message.
func (c *Core) Submit(tc *TaskContext, call Call) (ids.ObjectID, *objects.Entry, error) {
	p, err := c.submit(tc, call)
	return ids.ReturnID(p.tid, 1), &p.ret, err
}

func (c *Core) submit(tc *TaskContext, call Call) (*pending, error) { return c.submitG(tc, call, nil) }

// submitG is submit of a call of a streaming generator when g is not nil (generator.go).
func (c *Core) submitG(tc *TaskContext, call Call, g *Generator) (*pending, error) {
	// The task's bookkeeping, its spec and (one or two) arguments are one allocation, and
	// the spec's ID points into it (newPendingArgs).
	p, argp, argv := newPendingArgs(ids.ChildTaskID(tc.idSeed(), tc.children.Add(1)), len(call.Args))
	if g != nil {
		g.register(p.tid)
	}
	tid := p.tid
	ret := ids.ReturnID(tid, 1)
	if c.sites != nil {
		c.sites.note(ret)
	}
	select {
	case <-c.closed:
		return p, ErrShutdown
	default:
	}
	if err := c.lostSubmit(p, call.Function); err != nil {
		return p, err
	}
	// The return's entry is made with the caller's reference and the lineage record, in
	// one step (CreateSubmittedIn, below); a submission that fails before gets its error
	// value and the reference from failTask.
	if call.NumReturns > 1 {
		c.createReturns(p, call.NumReturns)
	}
	p.spec.NumReturns = pb.NumReturns(call.NumReturns)
	fn, ok := tasks.Lookup(call.Function)
	if !ok {
		err := &tasks.UnknownFunctionError{Name: call.Function}
		return p, c.failTask(p, call.Function, pb.ErrorInfo_UNKNOWN_FUNCTION, err)
	}
	if fn.NumReturns() != p.spec.NumReturns {
		return p, c.failTask(p, call.Function, pb.ErrorInfo_SYSTEM, returnsMismatch(call.Function, fn.NumReturns(), call.NumReturns))
	}
	if err := c.cfg.Feasible(call.Resources); err != nil {
		return p, c.failTask(p, call.Function, pb.ErrorInfo_INFEASIBLE, err)
	}
	sh := c.shardOf(tid)
	res := call.ResourcesPB
	if res == nil {
		res = tasks.ResourcesToPB(call.Resources)
	}
	spec := p.spec
	spec.JobId = string(c.cfg.Job)
	spec.Function = call.Function
	spec.Args = argp
	spec.Resources = res
	spec.MaxRetries = call.MaxRetries
	spec.RetryExceptions = call.RetryExceptions
	spec.ParentTaskId = tc.Task[:]
	spec.Owner = c.ownerW
	spec.ReplyTo = sh.pidW
	spec.Strategy = call.Strategy
	spec.AffinityNode = call.AffinityNode
	spec.AffinitySoft = call.AffinitySoft
	if call.Strategy == StrategyPlacementGroup {
		spec.PlacementGroup, spec.BundleIndex = call.PlacementGroup, call.BundleIndex
	}
	args, put, err := c.storeLargeArgs(tc, call.Args, true)
	if err != nil {
		c.releasePut(put)
		kind := pb.ErrorInfo_SYSTEM
		if errors.Is(err, objects.ErrObjectTooLarge) {
			kind = pb.ErrorInfo_OBJECT_TOO_LARGE
		}
		return p, c.failTask(p, call.Function, kind, err)
	}
	var argRefs []ids.ObjectID
	for i, a := range args {
		if a.IsRef {
			if _, _, known := c.mem.Get(a.Ref); !known {
				err := fmt.Errorf("argument %d: %w: %s (it was released, or is owned by another process)", i+1, ErrUnknownObject, a.Ref)
				c.releasePut(put)
				return p, c.failTask(p, call.Function, pb.ErrorInfo_OBJECT_LOST, err)
			}
			ref := a.Ref
			argv[i].ObjectId, argv[i].IsRef = ref[:], true
			spec.Args[i] = &argv[i]
			argRefs = append(argRefs, ref)
		} else {
			argv[i].Data = a.Data
			spec.Args[i] = &argv[i]
		}
	}
	// The caller's reference to the result, the lineage record (the spec, for
	// reconstruction; the shard writes it to the GCS if it lives long enough: lineage.go),
	// and the submitted task's references to its arguments (dropped when it finishes).
	c.refs.CreateSubmittedIn(tid, c.lineageArgs(c.holdArgs(argRefs), args), spec, &p.ret)
	if spec.NumReturns > 1 {
		c.refs.AddReturns(tid, int(spec.NumReturns))
	}
	c.releasePut(put) // the task holds them now
	p.argRefs, p.pinned = argRefs, c.pinArgs(ret, args)
	p.res, p.hasRes = call.Resources, true
	sh.submit(p)
	return p, nil
}

// storeLargeArgs puts the by-value arguments larger than the inline limit (100 KiB, as
// Ray's max_direct_call_object_size) into the object store as objects this process owns,
// and passes them by reference instead; so do the largest of the rest while together they
// exceed pb.InlineArgsTotal. The spec, which is the task's lineage record and its message,
// stays small, so the task keeps its lineage and its message (and the batches it travels
// in) stays far below the gRPC limit. It returns args with those arguments replaced (args
// itself when none is) and the objects it put, whose references the caller gives back
// (releasePut) once the task holds its own.
func (c *Core) storeLargeArgs(tc *TaskContext, args []Arg, lineage bool) ([]Arg, []ids.ObjectID, error) {
	over, total := false, 0
	for _, a := range args {
		if !a.IsRef {
			over = over || len(a.Data) > c.cfg.InlineLimit
			total += len(a.Data)
		}
	}
	if !over && total <= pb.InlineArgsTotal {
		return args, nil, nil
	}
	out := append([]Arg(nil), args...)
	var put []ids.ObjectID
	store := func(i int) error {
		id, err := tc.putNested(out[i].Data, out[i].Nested, true) // the object keeps the nested refs
		if err != nil {
			return fmt.Errorf("argument %d (%d bytes, passed through the object store): %w", i+1, len(out[i].Data), err)
		}
		// A stored argument cannot be recreated, and a rerun of the task needs it: it lives
		// as long as the task's lineage record, as it did inline in the spec (an actor
		// call has none: the call holds it until it is answered).
		if lineage {
			c.refs.KeepForLineage(id)
		}
		put = append(put, id)
		total -= len(out[i].Data)
		out[i] = Arg{Ref: id, IsRef: true}
		return nil
	}
	for i, a := range out {
		if !a.IsRef && len(a.Data) > c.cfg.InlineLimit {
			if err := store(i); err != nil {
				return nil, put, err
			}
		}
	}
	for total > pb.InlineArgsTotal {
		big := -1
		for i, a := range out {
			if !a.IsRef && (big < 0 || len(a.Data) > len(out[big].Data)) {
				big = i
			}
		}
		if err := store(big); err != nil {
			return nil, put, err
		}
	}
	return out, put, nil
}

// releasePut gives back the references storeLargeArgs took.
func (c *Core) releasePut(put []ids.ObjectID) {
	for _, id := range put {
		c.ReleaseOwned(id, nil, false)
	}
}

// lineageArgs returns the objects a task's lineage record holds: its owned ref arguments
// (owned, as holdArgs returned them) and the objects this process owns whose refs are
// inside its by-value arguments. A rerun of the task needs both: the record keeps their
// own records (lineage), so that they can be recreated too if their values were freed
// meanwhile (restart).
func (c *Core) lineageArgs(owned []ids.ObjectID, args []Arg) []ids.ObjectID {
	for _, a := range args {
		for _, n := range a.Nested {
			if c.isSelf(n.Owner) {
				owned = append(owned, n.ID)
			}
		}
	}
	return owned
}

// argsKey is the key under which the refs nested in a task's argument values are pinned:
// the return ID with its index set to 0, which no object has.
func argsKey(ret ids.ObjectID) ids.ObjectID { return ids.ReturnID(ret.Task(), 0) }

// pinArgs keeps the refs nested in argument values alive until the task finishes; it
// reports whether there were any.
func (c *Core) pinArgs(ret ids.ObjectID, args []Arg) bool {
	var nested []Nested
	for _, a := range args {
		nested = append(nested, a.Nested...)
	}
	c.pin(argsKey(ret), nested)
	return len(nested) > 0
}

func (c *Core) failSubmit(ret ids.ObjectID, tid ids.TaskID, fn string, kind pb.ErrorInfo_Kind, err error) error {
	info := &pb.ErrorInfo{Kind: kind, Function: fn, TaskId: tid[:], Message: err.Error(), NodeId: string(c.cfg.Node)}
	c.refs.AddLocal(ret) // the caller's reference, as Submit's success path takes it
	c.mem.Set(ret, objects.Value{Err: info})
	return &SubmitError{Info: info, Err: err}
}

// Cancel cancels the task that produces id: a queued or waiting task never runs; a
// running one has its context cancelled. Its result becomes a cancellation error. It is
// recursive, as Ray's ray.cancel by default: see CancelTask.
func (c *Core) Cancel(id ids.ObjectID) error { return c.CancelTask(id, true) }

// CancelTask is Cancel; recursive: a running task's worker also has the process that ran
// it (the owner of the tasks it submitted) cancel the tasks it submitted that have not
// finished, and theirs in turn (CancelChildren), wherever they run; not: only the task.
// A task belongs to its family's shard, an actor call to its actor's: the family's is
// asked first, then the others.
func (c *Core) CancelTask(id ids.ObjectID, recursive bool) error {
	tid := id.Task()
	first := c.shardOf(tid)
	order := append([]*shard{first}, c.shards...)
	for i, s := range order {
		if i > 0 && s == first {
			continue
		}
		reply := make(chan error, 1)
		s.send(cancelTask{tid: tid, recursive: recursive, reply: reply})
		select {
		case err := <-reply:
			if err != errNotHere {
				return err
			}
		case <-c.closed:
			return ErrShutdown
		}
	}
	return nil // finished already (or never existed): nothing to cancel
}

// CancelChildren cancels the tasks task submitted from this process (their owner) that
// have not finished, as Cancel of each would, recursively: a child queued or waiting here
// never runs, a running one's worker cancels its context and has its own children
// cancelled in turn. A child actor call is cancelled if it was not sent to its actor yet
// (an explicit Cancel cancels no more of it). It is the worker's hook
// (worker.Env.Cancelled) for a running task a recursive Cancel cancelled; it does not wait.
// The children are found by their specs' parent among each shard's unfinished tasks: a
// scan, paid by a cancellation only, not by a submission. The children task submits
// from now on (it may run on) are cancelled as they are submitted, an actor call among
// them before it is sent (cancelledParents).
func (c *Core) CancelChildren(task ids.TaskID) {
	select {
	case <-c.closed:
		return
	default:
	}
	c.cancelled.note(task, time.Now())
	for _, s := range c.shards {
		s.send(cancelChildren{parent: task})
	}
}

// errNotHere: the shard asked to cancel a task does not own it.
var errNotHere = errors.New("core: the task is not this shard's")

// newArgs returns a spec's argument list for n arguments (ptrs, nil entries for the
// caller to point at vals as it fills them) and the arguments themselves: for n <= 4,
// both in one allocation (a task or actor call costs one allocation for its arguments,
// not one per argument plus the list).
func newArgs(n int) (ptrs []*pb.Arg, vals []pb.Arg) {
	switch {
	case n == 0:
		return []*pb.Arg{}, nil
	case n == 1:
		a := new(struct {
			p [1]*pb.Arg
			v [1]pb.Arg
		})
		return a.p[:], a.v[:]
	case n == 2:
		a := new(struct {
			p [2]*pb.Arg
			v [2]pb.Arg
		})
		return a.p[:], a.v[:]
	case n <= 4:
		a := new(struct {
			p [4]*pb.Arg
			v [4]pb.Arg
		})
		return a.p[:n:n], a.v[:n:n]
	}
	return make([]*pb.Arg, n), make([]pb.Arg, n)
}
