package ray

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/ray-go/ray/actors"
	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/objects/codec"
	"github.com/ray-go/ray/tasks/sched"
)

// ErrActorDied: the actor is dead (killed, its constructor failed, its host died with no
// restart left, its owner ended); calls to it fail with an error matching it.
var ErrActorDied = lifecycle.ErrActorDied

// ErrNoSuchActor: GetActor found no live actor of that name.
var ErrNoSuchActor = actors.ErrNoSuchActor

// ErrNameTaken: an actor was created under a name another live actor has.
var ErrNameTaken = actors.ErrNameTaken

// Checkpointer is implemented by actor types that can save and restore their state. For a
// logged (exactly-once) actor, a checkpoint is taken every CheckpointEvery calls (default
// 1000), after 8 MiB of method log, or on Checkpoint, and the method log before it is
// dropped; a restarted instance is constructed with its original arguments, restores the
// newest checkpoint and replays the calls logged after it. An AtMostOnce actor takes one
// on Checkpoint, and every CheckpointEvery calls only when that option is given. A type whose state the codec
// keeps whole (exported fields, no interfaces; codec.Lossless) needs no Checkpointer: the
// runtime encodes it. An exactly-once actor of any other type cannot be created without
// UnboundedMethodLog (its log would grow for its whole life) or AtMostOnce.
type Checkpointer interface {
	SaveCheckpoint(ctx context.Context) ([]byte, error)
	RestoreCheckpoint(ctx context.Context, state []byte) error
}

// ActorHandle names an actor of type T. It is a plain value: copy it, pass it to tasks and
// to other actors (as an argument or inside a value), and call methods through it there.
// The zero handle names no actor.
//
// A non-detached actor lives while any handle to it does (Ray's actor lifetimes): its
// copies in the creating program, handles inside objects (Put, task returns), in the
// arguments of tasks and actor calls not finished yet, and in other tasks, actors and
// processes that received one, and those GetActor returned. When the last one is gone
// (garbage-collected, or the object holding it freed) and every call made to the actor
// has finished, the actor ends: it is Dead with a Detail that says it went out of scope,
// and later calls fail with ErrActorDied. A detached actor is never collected; end it
// with Kill. As with ObjectRef, a handle in a reference cycle with the actor itself (an
// actor that keeps its own handle) keeps it alive.
type ActorHandle[T any] struct {
	id    ids.ActorID
	class string
	err   error   // creation failed
	obj   *handle // the actor's handle object (nil: a detached actor, or an encoding without it)
}

// ID is the actor's ID in hex.
func (h ActorHandle[T]) ID() string { return h.id.String() }

// Class is the registered name of the actor's class.
func (h ActorHandle[T]) Class() string { return h.class }

// Err is the error the creation of the actor failed with (nil when it was created; the
// constructor itself runs later, and its failure makes calls fail with ErrActorDied).
func (h ActorHandle[T]) Err() error { return h.err }

func (h ActorHandle[T]) String() string {
	if h.err != nil {
		return fmt.Sprintf("ActorHandle(failed: %v)", h.err)
	}
	return "ActorHandle(" + h.class + " " + h.id.String() + ")"
}

// MarshalBinary encodes the actor's ID and class, for a program that stores or sends a
// handle by its own means. A handle decoded from it (UnmarshalBinary) calls the actor but
// does not keep it alive: pass handles inside values through ray (arguments, Put,
// returns), which encode them with MarshalCBOR, for that.
func (h ActorHandle[T]) MarshalBinary() ([]byte, error) {
	if h.err != nil {
		return nil, rayErrorf("ray: cannot send a failed actor handle: %w", h.err)
	}
	return append(h.id[:len(h.id):len(h.id)], h.class...), nil
}

// UnmarshalBinary decodes a handle encoded by MarshalBinary.
func (h *ActorHandle[T]) UnmarshalBinary(b []byte) error {
	if len(b) < ids.ActorIDLen {
		return fmt.Errorf("ray: actor handle of %d bytes is too short", len(b))
	}
	copy(h.id[:], b[:ids.ActorIDLen])
	h.class = string(b[ids.ActorIDLen:])
	h.err, h.obj = nil, nil
	return nil
}

// MarshalCBOR encodes the handle inside a value (see codec.Ref). A handle of a detached
// actor is the CBOR byte string of MarshalBinary; one of a non-detached actor is the
// array [that byte string, the actor's handle object as a nested ref], so that whoever
// decodes it holds the actor as a borrower of that object (see ActorHandle). The zero
// handle encodes as CBOR null.
func (h ActorHandle[T]) MarshalCBOR() ([]byte, error) {
	if h.err == nil && h.id.IsZero() {
		return []byte{0xf6}, nil
	}
	b, err := h.MarshalBinary()
	if err != nil {
		return nil, err
	}
	if h.obj == nil {
		return cbor.Marshal(b)
	}
	if h.obj.gone.Load() {
		return nil, fmt.Errorf("ray: actor handle %s: its reference was released", h.id)
	}
	out, err := cbor.Marshal(b)
	if err != nil {
		return nil, err
	}
	out = append([]byte{0x82}, out...) // an array of two items
	return codec.AppendRef(out, core.RefPayload(h.obj.id, h.obj.ownerPID())), nil
}

// UnmarshalCBOR decodes a handle encoded by MarshalCBOR (or, inside a value encoded
// before handles counted, the byte string of MarshalBinary). The handle is bound to the
// runtime that decodes it (it holds the actor) when the value reaches user code through
// Get or as an argument, or at its first call.
func (h *ActorHandle[T]) UnmarshalCBOR(b []byte) error {
	if len(b) == 1 && b[0] == 0xf6 {
		*h = ActorHandle[T]{}
		return nil
	}
	if len(b) == 0 || b[0] != 0x82 {
		var raw []byte
		if err := cbor.Unmarshal(b, &raw); err != nil {
			return rayErrorf("ray: actor handle: %w", err)
		}
		return h.UnmarshalBinary(raw)
	}
	var parts []cbor.RawMessage
	if err := cbor.Unmarshal(b, &parts); err != nil || len(parts) != 2 {
		return fmt.Errorf("ray: actor handle: not [bytes, ref] (%v)", err)
	}
	var raw []byte
	if err := cbor.Unmarshal(parts[0], &raw); err != nil {
		return rayErrorf("ray: actor handle: %w", err)
	}
	p, err := codec.ParseRef(parts[1])
	if err != nil {
		return err
	}
	nested, err := core.ParseNested([][]byte{p})
	if err != nil {
		return err
	}
	if err := h.UnmarshalBinary(raw); err != nil {
		return err
	}
	if want := ids.ActorHandleID(h.id); nested[0].ID != want {
		return fmt.Errorf("ray: actor handle %s: its reference names object %s, not the actor's", h.id, nested[0].ID)
	}
	h.obj = &handle{id: nested[0].ID, owner: nested[0].Owner}
	return nil
}

// bind implements binder: a decoded handle holds the actor in runtime c.
func (h ActorHandle[T]) bind(c *core.Core) {
	if h.obj != nil {
		h.obj.bind(c)
	}
}

// holder returns the owner of the handle object h holds in runtime c (nil: none), binding
// a handle decoded outside Get and task arguments at its first use.
func (h ActorHandle[T]) holder(c *core.Core) *pb.PID {
	if h.obj == nil || h.obj.gone.Load() {
		return nil
	}
	if h.obj.core == nil {
		h.obj.bind(c)
	}
	if h.obj.core != c {
		return nil // a handle of another runtime (another Init): it holds the actor there
	}
	return h.obj.ownerPID()
}

func (h ActorHandle[T]) check() error {
	if h.err != nil {
		return h.err
	}
	if h.id.IsZero() {
		return errors.New("ray: the zero ActorHandle names no actor")
	}
	return nil
}

// actorClass is what every ActorClassN shares.
type actorClass[T any] struct {
	name string
	cls  *actors.Class
	opts callOpts
	// lossy says why T's state cannot be checkpointed by the codec (nil: it can, or T
	// implements Checkpointer).
	lossy error
}

func (c *actorClass[T]) base() *actorClass[T] { return c }

// Class is any actor class of type T, whatever its constructor's arguments.
type Class[T any] interface {
	base() *actorClass[T]
}

// Name is the class's registered name.
func (c *actorClass[T]) Name() string { return c.name }

func registerClass[T any](name string, ctor func(ctx context.Context, args [][]byte) (any, error)) *actorClass[T] {
	warnLateRegistration("actor class", name)
	cls := &actors.Class{Name: name, New: ctor}
	var lossy error
	if _, ok := any((*T)(nil)).(Checkpointer); ok {
		cls.Save = func(ctx context.Context, inst any) ([]byte, error) {
			return inst.(Checkpointer).SaveCheckpoint(ctx)
		}
		cls.Restore = func(ctx context.Context, inst any, state []byte) error {
			return inst.(Checkpointer).RestoreCheckpoint(ctx, state)
		}
	} else if lossy = codec.Lossless(reflect.TypeFor[T]()); lossy == nil {
		cls.Save, cls.Restore, cls.Auto = saveState[T], restoreState[T], true
	}
	if err := actors.RegisterClass(cls); err != nil {
		panic(err)
	}
	return &actorClass[T]{name: name, cls: cls, opts: callOpts{}, lossy: lossy}
}

// saveState is the checkpoint of an actor whose state the codec keeps whole (codec.Lossless):
// the encoded instance.
func saveState[T any](_ context.Context, inst any) ([]byte, error) {
	return codec.Marshal(inst.(*T))
}

// restoreState decodes saveState's bytes into a zero T and makes the instance that (not a
// decode into the constructed instance, which would merge maps and keep fields the
// checkpoint left empty). Refs and actor handles in the state are bound to the runtime of
// ctx, as a method's arguments are.
func restoreState[T any](ctx context.Context, inst any, state []byte) error {
	v, err := codec.Unmarshal[*T](state)
	if err != nil {
		return err
	}
	if v == nil {
		return fmt.Errorf("ray: the checkpoint holds no state")
	}
	v = bindRefs(ctx, v)
	*inst.(*T) = *v
	return nil
}

// errUnboundedLog says why an exactly-once actor of class c cannot be created as asked.
func (c *actorClass[T]) errUnboundedLog() error {
	return fmt.Errorf("ray: actor %s: an exactly-once actor's method log is bounded by checkpoints, and %T cannot be checkpointed: "+
		"it does not implement ray.Checkpointer and the codec cannot encode all of it (%v). "+
		"Implement ray.Checkpointer, make the state encodable (exported fields, no interfaces), "+
		"create the actor with ray.AtMostOnce() (Ray's default: a restart loses its state), "+
		"or with ray.UnboundedMethodLog() to keep every call in the GCS for its whole life", c.name, (*T)(nil), c.lossy)
}

// ActorClass0 is an actor class whose constructor takes no arguments.
type ActorClass0[T any] struct{ *actorClass[T] }

// ActorClass1 is an actor class whose constructor takes one argument.
type ActorClass1[T, A any] struct{ *actorClass[T] }

// ActorClass2 is an actor class whose constructor takes two arguments.
type ActorClass2[T, A, B any] struct{ *actorClass[T] }

// Actor registers an actor class named name whose instances fn makes. Call it at package
// level; names identify classes in every process, so they must be unique.
func Actor[T any](name string, fn func() *T) *ActorClass0[T] {
	return &ActorClass0[T]{registerClass[T](name, func(context.Context, [][]byte) (any, error) {
		t := fn()
		if t == nil {
			return nil, fmt.Errorf("ray: constructor of %s returned nil", name)
		}
		return t, nil
	})}
}

// Actor0 registers an actor class whose constructor takes a context and may fail.
func Actor0[T any](name string, fn func(context.Context) (*T, error)) *ActorClass0[T] {
	return &ActorClass0[T]{registerClass[T](name, func(ctx context.Context, args [][]byte) (any, error) {
		if len(args) != 0 {
			return nil, fmt.Errorf("ray: constructor of %s takes no arguments, got %d", name, len(args))
		}
		return nonNil[T](name)(fn(ctx))
	})}
}

// Actor1 registers an actor class whose constructor takes one argument.
func Actor1[T, A any](name string, fn func(context.Context, A) (*T, error)) *ActorClass1[T, A] {
	checkSent("actor constructor", name, []reflect.Type{typeOf[A]()})
	return &ActorClass1[T, A]{registerClass[T](name, func(ctx context.Context, args [][]byte) (any, error) {
		if len(args) != 1 {
			return nil, fmt.Errorf("ray: constructor of %s takes 1 argument, got %d", name, len(args))
		}
		a, err := decodeArg[A](ctx, name, args, 0)
		if err != nil {
			return nil, err
		}
		return nonNil[T](name)(fn(ctx, a))
	})}
}

// Actor2 registers an actor class whose constructor takes two arguments.
func Actor2[T, A, B any](name string, fn func(context.Context, A, B) (*T, error)) *ActorClass2[T, A, B] {
	checkSent("actor constructor", name, []reflect.Type{typeOf[A](), typeOf[B]()})
	return &ActorClass2[T, A, B]{registerClass[T](name, func(ctx context.Context, args [][]byte) (any, error) {
		if len(args) != 2 {
			return nil, fmt.Errorf("ray: constructor of %s takes 2 arguments, got %d", name, len(args))
		}
		a, b, err := decode2[A, B](ctx, name, args)
		if err != nil {
			return nil, err
		}
		return nonNil[T](name)(fn(ctx, a, b))
	})}
}

func nonNil[T any](name string) func(*T, error) (any, error) {
	return func(t *T, err error) (any, error) {
		if err != nil {
			return nil, err
		}
		if t == nil {
			return nil, fmt.Errorf("ray: constructor of %s returned nil", name)
		}
		return t, nil
	}
}

// Remote creates an actor and returns its handle at once; the constructor runs on the
// node the cluster picks. Options: resources (NumCPUs, NumGPUs, Resources: placement needs
// them and the actor holds them while it lives; without them it holds none), Name and
// Namespace, Detached, MaxRestarts, MaxTaskRetries, MaxConcurrency, AtMostOnce,
// CheckpointEvery, and where it runs: NodeAffinity, PlacementGroupBundle, Spread.
//
// With NodeAffinity(id, false) the actor runs on that node only: Remote fails when the
// node is known dead or cannot hold the actor's resources, the actor dies (unschedulable,
// ErrActorDied) when the node is not a node of the job's cluster or is gone before the
// actor starts, it waits while the node is only unreachable for now, and it does not
// restart elsewhere: once its node died it dies, restarts left or not (Ray's hard
// NodeAffinitySchedulingStrategy). With NodeAffinity(id, true) it starts (and restarts)
// on that node when the node is alive and can hold it, and elsewhere otherwise. Spread
// changes nothing for an actor: actors are spread already (the node of the job with the
// fewest of its actors that can hold the new one).
//
// A non-detached actor lives while a handle to it does (Ray's reference counting), and Go
// keeps a handle only until its last use, not to the end of its scope: a program that
// creates a named actor for other processes to find and then waits (select{}, a loop that
// no longer uses the handle) must keep the handle reachable, e.g. defer
// runtime.KeepAlive(h) or a package variable, or create the actor Detached; else it dies
// "out of scope" at the next collection, which any process waiting for resources can ask
// the whole cluster for.
func (c *ActorClass0[T]) Remote(ctx context.Context, opts ...TaskOption) ActorHandle[T] {
	return create[T](ctx, c.actorClass, nil, opts)
}

// Remote creates an actor; see ActorClass0.Remote.
func (c *ActorClass1[T, A]) Remote(ctx context.Context, a Arg[A], opts ...TaskOption) ActorHandle[T] {
	return create[T](ctx, c.actorClass, []argLike{a}, opts)
}

// Remote creates an actor; see ActorClass0.Remote.
func (c *ActorClass2[T, A, B]) Remote(ctx context.Context, a Arg[A], b Arg[B], opts ...TaskOption) ActorHandle[T] {
	return create[T](ctx, c.actorClass, []argLike{a, b}, opts)
}

func create[T any](ctx context.Context, c *actorClass[T], args []argLike, opts []TaskOption) ActorHandle[T] {
	fail := func(err error) ActorHandle[T] { return ActorHandle[T]{class: c.name, err: err} }
	tc, err := taskContext(ctx)
	if err != nil {
		return fail(err)
	}
	o := defaultActorOpts()
	for _, f := range opts {
		f(&o)
	}
	if !o.cpuSet {
		o.cpus = 0 // Ray: an actor holds no CPU unless asked
	}
	res, err := o.resourcesOf()
	if err == nil {
		err = o.actorOptsErr()
	}
	if err != nil {
		return fail(rayErrorf("ray: actor %s: %w", c.name, err))
	}
	spec := core.ActorSpec{
		Class: c.name, Args: make([]core.Arg, len(args)), Resources: res,
		Name: o.name, Namespace: cmp.Or(o.namespace, tc.Core.Namespace()), Detached: o.detached, MaxRestarts: o.maxRestarts,
		MaxTaskRetries: o.maxTaskRetries, MaxConcurrency: o.maxConcurrency, AtMostOnce: o.atMostOnce,
		CheckpointEvery: o.checkpointEvery, PlacementGroup: o.pg, BundleIndex: o.pgBundle,
	}
	if o.strategy == core.StrategyNodeAffinity {
		// The last strategy given wins, as for a task (PlacementGroupBundle clears affinity).
		spec.PlacementGroup, spec.BundleIndex = "", 0
		spec.AffinityNode, spec.AffinitySoft = agentsNode(tc.Core.NodeInfos(), o.affinityNode), o.affinitySoft
		if o.affinityNode == "" {
			return fail(fmt.Errorf("ray: actor %s: NodeAffinity needs a node ID (see Nodes and NodeID)", c.name))
		}
	}
	if o.detached && o.name == "" {
		return fail(fmt.Errorf("ray: actor %s: a detached actor needs a Name (that is how it is found again)", c.name))
	}

	if !o.atMostOnce && !o.unboundedLog && !c.cls.CanCheckpoint() {
		return fail(c.errUnboundedLog())
	}
	for i, a := range args {
		if spec.Args[i], err = a.toArg(tc.Core); err != nil {
			return fail(rayErrorf("ray: actor %s: constructor argument %d: %w", c.name, i+1, err))
		}
	}
	id, err := tc.Core.CreateActor(tc, spec)
	runtime.KeepAlive(args)
	if err != nil {
		if errors.Is(err, actors.ErrUnknownClass) {
			err = fmt.Errorf("%w: %v", ErrUnknownFunction, err)
		}
		if errors.Is(err, sched.ErrInfeasible) && !errors.Is(err, sched.ErrAffinityUnavailable) && spec.PlacementGroup == "" {
			// (In a placement group the error is about the group or the bundle: no node
			// to add.)
			err = rayErrorf("ray: actor %s: %w%s", c.name, err, infeasibleHint)
		}
		if errors.Is(err, ErrNameTaken) {
			// The handle's Err says which actor was not created, and the calls through it
			// repeat it (Ray raises at .remote()).
			err = rayErrorf("ray: actor %s could not be created: %w", c.name, err)
		}
		return fail(convert(err))
	}
	h := ActorHandle[T]{id: id, class: c.name}
	if !o.detached {
		// The creator's reference to the actor's handle object (core.CreateActor took it),
		// given back when the last copy of h is garbage-collected.
		h.obj = &handle{id: ids.ActorHandleID(id), core: tc.Core}
		toNursery(h.obj)
	}
	return h
}

// GetActor returns the handle of the live actor named name in namespace (Ray's
// ray.get_actor): without one, or with "", in the caller's job's namespace (WithNamespace,
// else the job's anonymous one), so a job finds its own named actors and another job's
// only by giving their namespace. T must be the actor's type: the class's name is checked. A name that no
// live actor has (never created, or its actor died: the name is free again) is an error
// naming it; a non-detached actor whose owner this process knows died is one that
// matches ErrActorDied and says "owner died" (the actor dies with its owner).
func GetActor[T any](ctx context.Context, class Class[T], name string, namespace ...string) (ActorHandle[T], error) {
	tc, err := taskContext(ctx)
	if err != nil {
		return ActorHandle[T]{}, err
	}
	ns, own := tc.Core.Namespace(), true
	if len(namespace) > 0 && namespace[0] != "" {
		ns, own = namespace[0], false
	}
	id, cls, owner, err := tc.Core.LookupActor(ctx, ns, name)
	if errors.Is(err, ErrNoSuchActor) {
		hint := ""
		if own {
			hint = "; this is the job's namespace: an actor of another job's namespace is found by giving it, GetActor(ctx, class, name, namespace), or by running both jobs in one with ray.WithNamespace"
		}
		return ActorHandle[T]{}, rayErrorf("ray: %w (never created, or it ended and its name is free again; `rayctl list actors` shows the cluster's actors and their namespaces%s)", err, hint)
	}
	if err != nil {
		return ActorHandle[T]{}, err
	}
	if want := class.base().name; cls != want {
		return ActorHandle[T]{}, fmt.Errorf("ray: actor %q is a %s, not a %s", name, cls, want)
	}
	h := ActorHandle[T]{id: id, class: cls}
	if owner != nil {
		// A non-detached actor: this handle holds it as any other does.
		h.obj = &handle{id: ids.ActorHandleID(id), owner: owner}
		h.obj.bind(tc.Core)
	}
	return h, nil
}

// Kill ends an actor (Ray's ray.kill). With noRestart it dies for good and every pending
// and later call fails with ErrActorDied; otherwise it is restarted if it has restarts
// left (a logged actor comes back with its state).
func Kill[T any](ctx context.Context, h ActorHandle[T], noRestart bool) error {
	tc, err := taskContext(ctx)
	if err != nil {
		return err
	}
	if err := h.check(); err != nil {
		return err
	}
	return tc.Core.KillActor(ctx, h.id, noRestart)
}

// Checkpoint asks an actor whose type implements Checkpointer to take a checkpoint before
// its next call. It returns once the request is sent; the checkpoint is written in the
// background (a restart that comes first replays from the previous one, which is just as
// correct, only longer).
func Checkpoint[T any](ctx context.Context, h ActorHandle[T]) error {
	tc, err := taskContext(ctx)
	if err != nil {
		return err
	}
	if err := h.check(); err != nil {
		return err
	}
	return tc.Core.CheckpointActor(tc, h.id)
}

// The phases of ActorState.Phase.
const (
	ActorPending    = "Pending"    // created, waiting for a node or for its constructor
	ActorAlive      = "Alive"      // serving calls
	ActorRestarting = "Restarting" // coming back after a failure or Kill(h, false); Detail says which
	ActorDead       = "Dead"       // for good; Detail says why
)

// ActorState is an actor's lifecycle state: its phase (ActorPending, ActorAlive,
// ActorRestarting, ActorDead), its restarts so far (counted when a restart begins, as in
// Ray), its incarnation (1 + restarts), the node hosting it, and in Detail once dead why,
// or while restarting which failure used a restart ("host N died; restarting (restart 1
// of 3)"), and while pending or restarting why it is not started yet: the resources it
// asks for are in use on its node ("waiting for resources {GPU=1} on node N: in use by
// other tasks or actors ..."), or no alive node has them ("waiting for a node with
// {GPU=1}: no alive node has that much ..."; an actor being created that no node can
// ever host fails instead, with ErrInfeasible). History holds how it got there: its
// transitions, oldest first (the first and the newest 15 of an actor restarted more
// often), the start of such a wait among them.
type ActorState struct {
	Phase       string
	Restarts    int
	Incarnation uint64
	Node        string
	Detail      string
	History     []ActorTransition
}

// ActorTransition is one change of an actor's state: the phase it entered, when, and the
// incarnation and node it had then (a node is set once the incarnation is placed);
// Detail says why it died or is restarting.
type ActorTransition struct {
	Phase       string
	Time        time.Time
	Incarnation uint64
	Node        string
	Detail      string
}

// GetActorState reads an actor's state from the GCS.
func GetActorState[T any](ctx context.Context, h ActorHandle[T]) (ActorState, error) {
	tc, err := taskContext(ctx)
	if err != nil {
		return ActorState{}, err
	}
	if err := h.check(); err != nil {
		return ActorState{}, err
	}
	s, hist, err := tc.Core.ActorState(ctx, h.id)
	if err != nil {
		return ActorState{}, err
	}
	st := ActorState{Phase: s.Phase.String(), Restarts: s.Restarts, Incarnation: s.Incarnation, Node: s.Node, Detail: s.Why()}
	for _, t := range hist {
		st.History = append(st.History, ActorTransition{Phase: lifecycle.Phase(t.GetPhase()).String(),
			Time: time.UnixMilli(t.GetUnixMs()), Incarnation: t.GetIncarnation(), Node: t.GetNode(), Detail: t.GetDetail()})
	}
	return st, nil
}

// actorMethod is what every MethodN shares.
type actorMethod struct {
	name string // "<class>.<method>"
}

// Name is the method's full name ("<class>.<method>").
func (m *actorMethod) Name() string { return m.name }

func addMethod[T any](class Class[T], name string, call func(ctx context.Context, t *T, args [][]byte) ([]byte, error)) actorMethod {
	c := class.base()
	warnLateRegistration("actor method", c.name+"."+name)
	m, err := c.cls.AddMethod(name, func(ctx context.Context, inst any, args [][]byte) ([]byte, error) {
		t, ok := inst.(*T)
		if !ok {
			return nil, fmt.Errorf("ray: %s.%s: instance is a %T", c.name, name, inst)
		}
		return call(ctx, t, args)
	})
	if err != nil {
		panic(err)
	}
	return actorMethod{name: m.Name}
}

func argCount(name string, args [][]byte, n int) error {
	if len(args) != n {
		return fmt.Errorf("ray: %s takes %d arguments, got %d", name, n, len(args))
	}
	return nil
}

// ActorMethod0 is a method of no arguments returning R.
type ActorMethod0[T, R any] struct{ actorMethod }

// ActorMethod1 is a method of one argument returning R.
type ActorMethod1[T, A, R any] struct{ actorMethod }

// ActorMethod2 is a method of two arguments returning R.
type ActorMethod2[T, A, B, R any] struct{ actorMethod }

// ActorMethod3 is a method of three arguments returning R.
type ActorMethod3[T, A, B, C, R any] struct{ actorMethod }

// ActorMethod4 is a method of four arguments returning R.
type ActorMethod4[T, A, B, C, D, R any] struct{ actorMethod }

// Method0 registers fn (usually a method expression such as (*Counter).Get) as the
// method name of class. Call it at package level.
func Method0[T, R any](class Class[T], name string, fn func(*T, context.Context) (R, error)) *ActorMethod0[T, R] {
	full := class.base().name + "." + name
	checkSent("actor method", full, nil, typeOf[R]())
	return &ActorMethod0[T, R]{addMethod(class, name, func(ctx context.Context, t *T, args [][]byte) ([]byte, error) {
		if err := argCount(full, args, 0); err != nil {
			return nil, err
		}
		return resultEncoder[R](ctx)(fn(t, ctx))
	})}
}

// Method1 registers a method of one argument; see Method0.
func Method1[T, A, R any](class Class[T], name string, fn func(*T, context.Context, A) (R, error)) *ActorMethod1[T, A, R] {
	full := class.base().name + "." + name
	checkSent("actor method", full, []reflect.Type{typeOf[A]()}, typeOf[R]())
	return &ActorMethod1[T, A, R]{addMethod(class, name, func(ctx context.Context, t *T, args [][]byte) ([]byte, error) {
		if err := argCount(full, args, 1); err != nil {
			return nil, err
		}
		a, err := decodeArg[A](ctx, full, args, 0)
		if err != nil {
			return nil, err
		}
		return resultEncoder[R](ctx)(fn(t, ctx, a))
	})}
}

// Method2 registers a method of two arguments; see Method0.
func Method2[T, A, B, R any](class Class[T], name string, fn func(*T, context.Context, A, B) (R, error)) *ActorMethod2[T, A, B, R] {
	full := class.base().name + "." + name
	checkSent("actor method", full, []reflect.Type{typeOf[A](), typeOf[B]()}, typeOf[R]())
	return &ActorMethod2[T, A, B, R]{addMethod(class, name, func(ctx context.Context, t *T, args [][]byte) ([]byte, error) {
		if err := argCount(full, args, 2); err != nil {
			return nil, err
		}
		a, b, err := decode2[A, B](ctx, full, args)
		if err != nil {
			return nil, err
		}
		return resultEncoder[R](ctx)(fn(t, ctx, a, b))
	})}
}

// Method3 registers a method of three arguments; see Method0.
func Method3[T, A, B, C, R any](class Class[T], name string, fn func(*T, context.Context, A, B, C) (R, error)) *ActorMethod3[T, A, B, C, R] {
	full := class.base().name + "." + name
	checkSent("actor method", full, []reflect.Type{typeOf[A](), typeOf[B](), typeOf[C]()}, typeOf[R]())
	return &ActorMethod3[T, A, B, C, R]{addMethod(class, name, func(ctx context.Context, t *T, args [][]byte) ([]byte, error) {
		if err := argCount(full, args, 3); err != nil {
			return nil, err
		}
		a, b, c, err := decode3[A, B, C](ctx, full, args)
		if err != nil {
			return nil, err
		}
		return resultEncoder[R](ctx)(fn(t, ctx, a, b, c))
	})}
}

// Method4 registers a method of four arguments; see Method0.
func Method4[T, A, B, C, D, R any](class Class[T], name string, fn func(*T, context.Context, A, B, C, D) (R, error)) *ActorMethod4[T, A, B, C, D, R] {
	full := class.base().name + "." + name
	checkSent("actor method", full, []reflect.Type{typeOf[A](), typeOf[B](), typeOf[C](), typeOf[D]()}, typeOf[R]())
	return &ActorMethod4[T, A, B, C, D, R]{addMethod(class, name, func(ctx context.Context, t *T, args [][]byte) ([]byte, error) {
		if err := argCount(full, args, 4); err != nil {
			return nil, err
		}
		a, b, c, d, err := decode4[A, B, C, D](ctx, full, args)
		if err != nil {
			return nil, err
		}
		return resultEncoder[R](ctx)(fn(t, ctx, a, b, c, d))
	})}
}

// callActor is the one call path of every typed method.
func callActor[R, T any](ctx context.Context, h ActorHandle[T], m *actorMethod, args ...argLike) ObjectRef[R] {
	tc, err := taskContext(ctx)
	if err != nil {
		return failedRef[R](err)
	}
	if h.err != nil {
		// The creation failed (h.Err): the call names the method and carries that error.
		return failedRef[R](rayErrorf("ray: %s: no call made: %w", m.name, h.err))
	}
	if err := h.check(); err != nil {
		return failedRef[R](rayErrorf("ray: %s: %w", m.name, err))
	}
	// The arguments' list lives on the stack (SubmitActorCall keeps its elements' contents,
	// never the slice; a method takes at most four arguments): one allocation less per call.
	var buf [4]core.Arg
	list := buf[:0]
	if len(args) > len(buf) {
		list = make([]core.Arg, 0, len(args))
	}
	list = list[:len(args)]
	for i, a := range args {
		if list[i], err = a.toArg(tc.Core); err != nil {
			return failedRef[R](rayErrorf("ray: %s: argument %d: %w", m.name, i+1, err))
		}
	}
	id, e, err := tc.Core.SubmitActorCall(tc, h.id, m.name, list, h.holder(tc.Core))
	runtime.KeepAlive(args)
	runtime.KeepAlive(h.obj) // held until the call holds the actor itself
	if err == core.ErrShutdown {
		return failedRef[R](err)
	}
	return newRef[R](tc.Core, id, e)
}

// Remote calls the method on the actor h names and returns a ref to its result at once.
func (m *ActorMethod0[T, R]) Remote(ctx context.Context, h ActorHandle[T]) ObjectRef[R] {
	return callActor[R](ctx, h, &m.actorMethod)
}

// Remote calls the method; see ActorMethod0.Remote.
func (m *ActorMethod1[T, A, R]) Remote(ctx context.Context, h ActorHandle[T], a Arg[A]) ObjectRef[R] {
	return callActor[R](ctx, h, &m.actorMethod, a)
}

// Remote calls the method; see ActorMethod0.Remote.
func (m *ActorMethod2[T, A, B, R]) Remote(ctx context.Context, h ActorHandle[T], a Arg[A], b Arg[B]) ObjectRef[R] {
	return callActor[R](ctx, h, &m.actorMethod, a, b)
}

// Remote calls the method; see ActorMethod0.Remote.
func (m *ActorMethod3[T, A, B, C, R]) Remote(ctx context.Context, h ActorHandle[T], a Arg[A], b Arg[B], c Arg[C]) ObjectRef[R] {
	return callActor[R](ctx, h, &m.actorMethod, a, b, c)
}

// Remote calls the method; see ActorMethod0.Remote.
func (m *ActorMethod4[T, A, B, C, D, R]) Remote(ctx context.Context, h ActorHandle[T], a Arg[A], b Arg[B], c Arg[C], d Arg[D]) ObjectRef[R] {
	return callActor[R](ctx, h, &m.actorMethod, a, b, c, d)
}

// agentsNode is the node NodeAffinity's id names among nodes: id itself if it is a node's
// ID, else the job's worker process on the machine whose agent has that ID (the IDs
// `rayctl list nodes` shows; Node.AgentID), else id unchanged.
func agentsNode(nodes []*pb.NodeInfo, id string) string {
	byAgent := ""
	for _, n := range nodes {
		if n.GetNodeId() == id {
			return id
		}
		if n.GetAgentId() == id && id != "" {
			byAgent = n.GetNodeId()
		}
	}
	if byAgent != "" {
		return byAgent
	}
	return id
}
