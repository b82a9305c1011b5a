package ray

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"sync"

	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/tasks"
)

// Streaming generators (Ray's num_returns="streaming"). A generator is a remote function
// that yields values instead of returning one: GeneratorN registers it, and its Remote
// returns an *ObjectRefGenerator at once, whose Next gives a ref to each value in the order
// they were yielded, as soon as the task has yielded it (the task goes on running):
//
//	var Count = ray.Generator1("demo.count", func(ctx context.Context, n int, yield func(int) error) error {
//		for i := range n {
//			if err := yield(i); err != nil {
//				return err
//			}
//		}
//		return nil
//	})
//
//	gen := Count.Remote(ctx, ray.V(3))
//	for {
//		ref, err := gen.Next(ctx) // ObjectRef[int]
//		if errors.Is(err, ray.ErrGeneratorDone) {
//			break
//		}
//		...
//	}
//
// Each item is an object of its own (the task's return i, ReturnID(task, i)): Get it, pass
// it to other tasks, release it. yield returns once the caller's runtime has the item; with
// GeneratorBackpressure(n) it also waits while n items are unconsumed (not yet handed out
// by Next), so the task never runs more than n items ahead of its consumer. yield returns
// an error when the value cannot be encoded or the task's ctx is done (cancelled, or the
// generator closed): the function should return then.
//
// The end: after the last item, Next returns ErrGeneratorDone; if the function returned an
// error (or panicked) after k items, the k items are good and the next Next returns its
// *TaskError. A failed submission (unknown function, infeasible resources) is the first
// Next's error.
//
// Failures: a task whose worker or node dies is run again (MaxRetries, default 3) and its
// items are matched by index: those the caller has are kept (the new run's copies are
// dropped), the stream goes on from the first new one. This assumes the function yields the
// same values in the same order each time it runs (Ray's behaviour); a generator that
// does not should be called with MaxRetries(0), and its stream then ends with the failure
// after the items it yielded. A lost item (its node died) is recreated by running the
// generator again, like any task's return.
//
// Close gives back the items not consumed and cancels the task if it is still running; an
// ObjectRefGenerator that becomes unreachable is closed by the garbage collector. A
// generator is consumed where it was made: it cannot be passed to another task (iterate it
// there and pass the item refs).

// ErrGeneratorDone is what ObjectRefGenerator.Next returns after the last item.
var ErrGeneratorDone = core.ErrGeneratorDone

// ErrGeneratorClosed is what ObjectRefGenerator.Next returns after Close.
var ErrGeneratorClosed = core.ErrGeneratorClosed

// ObjectRefGenerator is the stream of refs to the items of a generator task (Ray's
// ObjectRefGenerator). Its methods are safe for concurrent use; each item goes to one
// Next.
//
// A task whose worker or node dies is run again (MaxRetries) and its items are matched by
// index: the items the stream has are kept, and it goes on from the first new one, which
// assumes the generator yields the same values in the same order each time (as Ray
// does); call one that does not with MaxRetries(0), and its stream ends with the failure
// after the items it yielded. A lost item is recreated by running the generator again.
// Close, or the collection of an unreachable ObjectRefGenerator, gives back the items not
// consumed and cancels the task if it still runs.
type ObjectRefGenerator[T any] struct {
	g   *core.Generator
	err error // the call failed before it had a generator
}

// Next returns a ref to the next item, waiting while the task has not yielded it; after
// the last one it returns ErrGeneratorDone, or the task's error if it failed. It honours
// ctx's deadline and cancellation; inside a task, waiting lends the task's CPU back, as
// Get does, and a wait through a driver's ctx fails at once with ErrDriverContext.
func (g *ObjectRefGenerator[T]) Next(ctx context.Context) (ObjectRef[T], error) {
	if g.err != nil {
		return ObjectRef[T]{}, g.err
	}
	tc, err := taskContext(ctx)
	if err != nil {
		return ObjectRef[T]{}, err
	}
	if tc.Core != g.g.Core() {
		return ObjectRef[T]{}, errors.New("ray: ObjectRefGenerator belongs to another ray runtime (another Init)")
	}
	id, err := g.g.Next(ctx, tc)
	runtime.KeepAlive(g)
	if err != nil {
		if errors.Is(err, ErrGeneratorDone) || errors.Is(err, ErrGeneratorClosed) {
			return ObjectRef[T]{}, err
		}
		return ObjectRef[T]{}, convert(err)
	}
	return newRef[T](g.g.Core(), id, nil), nil
}

// Close gives back the items not consumed yet and cancels the task if it still runs; Next
// then returns ErrGeneratorClosed. Items already handed out stay valid.
func (g *ObjectRefGenerator[T]) Close() {
	if g.g != nil {
		runtime.SetFinalizer(g, nil)
		g.g.Close()
	}
}

// GeneratorBackpressure makes a generator's yield wait while n items are unconsumed
// (generators only; Ray's _generator_backpressure_num_objects). Default 0: no limit.
func GeneratorBackpressure(n int) TaskOption { return func(o *callOpts) { o.genWindow = n } }

// registerGen adds a generator to the registry (see register).
func registerGen(name string, argTypes []reflect.Type, item reflect.Type, call tasks.Func) {
	warnLateRegistration("remote function", name)
	checkSent("generator", name, argTypes, item)
	err := tasks.Register(&tasks.Function{Name: name, ArgTypes: argTypes, Streaming: true, Results: []reflect.Type{item},
		Call: func(ctx context.Context, args [][]byte) ([]byte, error) {
			if len(args) != len(argTypes) {
				return nil, fmt.Errorf("ray: %s takes %d arguments, got %d", name, len(argTypes), len(args))
			}
			return call(ctx, args)
		}})
	if err != nil {
		panic(err)
	}
}

// yielder is the yield function a generator task's body gets: it encodes the item, with
// the refs inside it registered for the task's owner, and sends it (core Yield). Calls are
// serialised, so the items keep the order of the calls.
func yielder[T any](ctx context.Context) func(T) error {
	var mu sync.Mutex
	var n uint32
	return func(v T) error {
		tc, ok := core.FromContext(ctx)
		if !ok {
			return ErrNotInitialized
		}
		rv, err := encodeReturn(ctx, v)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		n++
		if err := tc.Yield(ctx, n, rv.Data, rv.Nested); err != nil {
			n-- // not sent: the next item takes its place
			return err
		}
		return nil
	}
}

// submitGen submits a call of a generator.
func submitGen[T any](ctx context.Context, f *remoteFunc, args ...argLike) *ObjectRefGenerator[T] {
	tc, err := taskContext(ctx)
	if err != nil {
		return &ObjectRefGenerator[T]{err: err}
	}
	if f.resErr != nil {
		return &ObjectRefGenerator[T]{err: rayErrorf("ray: %s: %w", f.name, f.resErr)}
	}
	call := core.Call{
		Function: f.name, Args: make([]core.Arg, len(args)), Resources: f.res, ResourcesPB: f.resPB,
		MaxRetries: int32(f.opts.maxRetries), RetryExceptions: f.opts.retryExceptions,
		Strategy: f.opts.strategy, AffinityNode: f.opts.affinityNode, AffinitySoft: f.opts.affinitySoft,
		PlacementGroup: f.opts.pg, BundleIndex: f.opts.pgBundle,
	}
	for i, a := range args {
		if call.Args[i], err = a.toArg(tc.Core); err != nil {
			return &ObjectRefGenerator[T]{err: rayErrorf("ray: %s: argument %d: %w", f.name, i+1, err)}
		}
	}
	g, err := tc.Core.SubmitGenerator(tc, call, f.opts.genWindow)
	runtime.KeepAlive(args)
	if err == core.ErrShutdown {
		return &ObjectRefGenerator[T]{err: err}
	}
	// Any other submission error ended the stream with it: the first Next returns it.
	out := &ObjectRefGenerator[T]{g: g}
	runtime.SetFinalizer(out, func(o *ObjectRefGenerator[T]) { o.g.Close() })
	return out
}

// GenFunc0 is a generator of no arguments yielding values of type T.
type GenFunc0[T any] struct{ remoteFunc }

// GenFunc1 is a generator of one argument yielding values of type T.
type GenFunc1[A, T any] struct{ remoteFunc }

// GenFunc2 is a generator of two arguments yielding values of type T.
type GenFunc2[A, B, T any] struct{ remoteFunc }

// Generator0 registers fn, which yields values of type T, as a remote generator named
// name. Call it at package level.
func Generator0[T any](name string, fn func(ctx context.Context, yield func(T) error) error) *GenFunc0[T] {
	registerGen(name, nil, typeOf[T](), func(ctx context.Context, _ [][]byte) ([]byte, error) {
		return nil, fn(ctx, yielder[T](ctx))
	})
	return &GenFunc0[T]{newRemoteFunc(name)}
}

// Generator1 registers fn, which takes one argument and yields values of type T, as a
// remote generator named name. Call it at package level.
func Generator1[A, T any](name string, fn func(ctx context.Context, a A, yield func(T) error) error) *GenFunc1[A, T] {
	registerGen(name, []reflect.Type{typeOf[A]()}, typeOf[T](), func(ctx context.Context, args [][]byte) ([]byte, error) {
		a, err := decodeArg[A](ctx, name, args, 0)
		if err != nil {
			return nil, err
		}
		return nil, fn(ctx, a, yielder[T](ctx))
	})
	return &GenFunc1[A, T]{newRemoteFunc(name)}
}

// Generator2 registers fn, which takes two arguments and yields values of type T, as a
// remote generator named name. Call it at package level.
func Generator2[A, B, T any](name string, fn func(ctx context.Context, a A, b B, yield func(T) error) error) *GenFunc2[A, B, T] {
	registerGen(name, []reflect.Type{typeOf[A](), typeOf[B]()}, typeOf[T](), func(ctx context.Context, args [][]byte) ([]byte, error) {
		a, b, err := decode2[A, B](ctx, name, args)
		if err != nil {
			return nil, err
		}
		return nil, fn(ctx, a, b, yielder[T](ctx))
	})
	return &GenFunc2[A, B, T]{newRemoteFunc(name)}
}

// Remote submits the generator task and returns its stream of item refs at once.
func (f *GenFunc0[T]) Remote(ctx context.Context) *ObjectRefGenerator[T] {
	return submitGen[T](ctx, &f.remoteFunc)
}

// Remote submits the generator task and returns its stream of item refs at once.
func (f *GenFunc1[A, T]) Remote(ctx context.Context, a Arg[A]) *ObjectRefGenerator[T] {
	return submitGen[T](ctx, &f.remoteFunc, a)
}

// Remote submits the generator task and returns its stream of item refs at once.
func (f *GenFunc2[A, B, T]) Remote(ctx context.Context, a Arg[A], b Arg[B]) *ObjectRefGenerator[T] {
	return submitGen[T](ctx, &f.remoteFunc, a, b)
}

// Options returns a copy of f whose calls use opts (Ray's .options()), e.g.
// GeneratorBackpressure.
func (f *GenFunc0[T]) Options(opts ...TaskOption) *GenFunc0[T] { return &GenFunc0[T]{f.with(opts)} }

// Options returns a copy of f whose calls use opts (Ray's .options()), e.g.
// GeneratorBackpressure.
func (f *GenFunc1[A, T]) Options(opts ...TaskOption) *GenFunc1[A, T] {
	return &GenFunc1[A, T]{f.with(opts)}
}

// Options returns a copy of f whose calls use opts (Ray's .options()), e.g.
// GeneratorBackpressure.
func (f *GenFunc2[A, B, T]) Options(opts ...TaskOption) *GenFunc2[A, B, T] {
	return &GenFunc2[A, B, T]{f.with(opts)}
}
