package ray

import (
	"context"
	"fmt"
	"reflect"
	"runtime"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/objects/codec"
	"github.com/ray-go/ray/tasks"
)

// Multiple returns (Ray's num_returns=n). A remote function that returns several values
// gives several refs, one per value: ReturnID(task, 1) to ReturnID(task, n), each an object
// of its own that is passed to other tasks, read with Get, released and collected, and
// recreated through lineage on its own (a lost one runs the task again; the others keep
// their values). The function runs once per call. An error (or a panic) fails every ref
// with the same *TaskError.
//
// TaskNRm registers a function of N arguments (0 to 2; more go in a struct) and m returns
// (2 or 3): Task1R2[A, R1, R2] takes func(ctx, A) (R1, R2, error), and its Remote returns
// (ObjectRef[R1], ObjectRef[R2]). Call, which calls a function by name, is for functions of
// one return: called so, a function of several fails its ref with an error that says so.

// registerN adds a function of several returns to the registry (see register).
func registerN(name string, argTypes, results []reflect.Type, call tasks.Func) {
	warnLateRegistration("remote function", name)
	checkSent("remote function", name, argTypes, results...)
	err := tasks.Register(&tasks.Function{Name: name, ArgTypes: argTypes, Returns: len(results), Results: results,
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

// encodeReturn encodes one of several returns, with the refs inside it registered for the
// task's owner (as resultEncoder does for a single result).
func encodeReturn[R any](ctx context.Context, r R) (*pb.ReturnValue, error) {
	b, refs, err := codec.MarshalRefs(r)
	if err != nil {
		return nil, fmt.Errorf("%w: result: %v", ErrEncode, err)
	}
	v := &pb.ReturnValue{Data: b}
	if len(refs) == 0 {
		return v, nil
	}
	tc, ok := core.FromContext(ctx)
	if !ok || tc.Spec == nil || tc.Spec.Owner == nil {
		return v, nil
	}
	nested, err := core.ParseNested(refs)
	if err != nil {
		return nil, fmt.Errorf("%w: result: %v", ErrEncode, err)
	}
	v.Nested = tc.Core.Escape(nested, tc.Spec.Owner)
	return v, nil
}

// encodeReturns is what the body of a function of several returns gives its worker.
func encodeReturns(vals ...func() (*pb.ReturnValue, error)) ([]byte, error) {
	rs := &pb.Returns{Values: make([]*pb.ReturnValue, len(vals))}
	for i, f := range vals {
		v, err := f()
		if err != nil {
			return nil, fmt.Errorf("return %d: %w", i+1, err)
		}
		rs.Values[i] = v
	}
	return proto.Marshal(rs)
}

// submitN submits a call of a function of n returns and returns their handles.
func submitN(ctx context.Context, f *remoteFunc, n int, args ...argLike) []*handle {
	hs := make([]*handle, n)
	fail := func(err error) []*handle {
		for i := range hs {
			hs[i] = &handle{err: err}
		}
		return hs
	}
	tc, err := taskContext(ctx)
	if err != nil {
		return fail(err)
	}
	if f.resErr != nil {
		return fail(rayErrorf("ray: %s: %w", f.name, f.resErr))
	}
	call := core.Call{
		Function: f.name, Args: make([]core.Arg, len(args)), Resources: f.res, ResourcesPB: f.resPB,
		MaxRetries: int32(f.opts.maxRetries), RetryExceptions: f.opts.retryExceptions,
		Strategy: f.opts.strategy, AffinityNode: f.opts.affinityNode, AffinitySoft: f.opts.affinitySoft,
		PlacementGroup: f.opts.pg, BundleIndex: f.opts.pgBundle,
		NumReturns: int32(n),
	}
	for i, a := range args {
		if call.Args[i], err = a.toArg(tc.Core); err != nil {
			return fail(rayErrorf("ray: %s: argument %d: %w", f.name, i+1, err))
		}
	}
	list, entries, err := tc.Core.SubmitReturns(tc, call)
	runtime.KeepAlive(args)
	if err == core.ErrShutdown {
		return fail(err)
	}
	for i := range hs {
		hs[i] = &handle{id: list[i], core: tc.Core}
		hs[i].e.Store(entries[i])
		toNursery(hs[i])
	}
	return hs
}

// Func0R2 is a remote function of no arguments returning two values, each its own object.
type Func0R2[R1, R2 any] struct{ remoteFunc }

// Task0R2 registers fn, a function of no arguments returning two values, as a remote function named
// name. Call it at package level.
func Task0R2[R1, R2 any](name string, fn func(context.Context) (R1, R2, error)) *Func0R2[R1, R2] {
	registerN(name, nil, []reflect.Type{typeOf[R1](), typeOf[R2]()}, func(ctx context.Context, _ [][]byte) ([]byte, error) {
		r1, r2, err := fn(ctx)
		if err != nil {
			return nil, err
		}
		return encodeReturns(
			func() (*pb.ReturnValue, error) { return encodeReturn(ctx, r1) },
			func() (*pb.ReturnValue, error) { return encodeReturn(ctx, r2) },
		)
	})
	return &Func0R2[R1, R2]{newRemoteFunc(name)}
}

// Remote submits the task and returns a ref to each of its results at once.
func (f *Func0R2[R1, R2]) Remote(ctx context.Context) (ObjectRef[R1], ObjectRef[R2]) {
	h := submitN(ctx, &f.remoteFunc, 2)
	return ObjectRef[R1]{h[0]}, ObjectRef[R2]{h[1]}
}

// Options returns a copy of f whose calls use opts (Ray's .options()).
func (f *Func0R2[R1, R2]) Options(opts ...TaskOption) *Func0R2[R1, R2] {
	return &Func0R2[R1, R2]{f.with(opts)}
}

// Func0R3 is a remote function of no arguments returning three values, each its own object.
type Func0R3[R1, R2, R3 any] struct{ remoteFunc }

// Task0R3 registers fn, a function of no arguments returning three values, as a remote function named
// name. Call it at package level.
func Task0R3[R1, R2, R3 any](name string, fn func(context.Context) (R1, R2, R3, error)) *Func0R3[R1, R2, R3] {
	registerN(name, nil, []reflect.Type{typeOf[R1](), typeOf[R2](), typeOf[R3]()}, func(ctx context.Context, _ [][]byte) ([]byte, error) {
		r1, r2, r3, err := fn(ctx)
		if err != nil {
			return nil, err
		}
		return encodeReturns(
			func() (*pb.ReturnValue, error) { return encodeReturn(ctx, r1) },
			func() (*pb.ReturnValue, error) { return encodeReturn(ctx, r2) },
			func() (*pb.ReturnValue, error) { return encodeReturn(ctx, r3) },
		)
	})
	return &Func0R3[R1, R2, R3]{newRemoteFunc(name)}
}

// Remote submits the task and returns a ref to each of its results at once.
func (f *Func0R3[R1, R2, R3]) Remote(ctx context.Context) (ObjectRef[R1], ObjectRef[R2], ObjectRef[R3]) {
	h := submitN(ctx, &f.remoteFunc, 3)
	return ObjectRef[R1]{h[0]}, ObjectRef[R2]{h[1]}, ObjectRef[R3]{h[2]}
}

// Options returns a copy of f whose calls use opts (Ray's .options()).
func (f *Func0R3[R1, R2, R3]) Options(opts ...TaskOption) *Func0R3[R1, R2, R3] {
	return &Func0R3[R1, R2, R3]{f.with(opts)}
}

// Func1R2 is a remote function of one argument returning two values, each its own object.
type Func1R2[A, R1, R2 any] struct{ remoteFunc }

// Task1R2 registers fn, a function of one argument returning two values, as a remote function named
// name. Call it at package level.
func Task1R2[A, R1, R2 any](name string, fn func(context.Context, A) (R1, R2, error)) *Func1R2[A, R1, R2] {
	registerN(name, []reflect.Type{typeOf[A]()}, []reflect.Type{typeOf[R1](), typeOf[R2]()}, func(ctx context.Context, args [][]byte) ([]byte, error) {
		a, err := decodeArg[A](ctx, name, args, 0)
		if err != nil {
			return nil, err
		}
		r1, r2, err := fn(ctx, a)
		if err != nil {
			return nil, err
		}
		return encodeReturns(
			func() (*pb.ReturnValue, error) { return encodeReturn(ctx, r1) },
			func() (*pb.ReturnValue, error) { return encodeReturn(ctx, r2) },
		)
	})
	return &Func1R2[A, R1, R2]{newRemoteFunc(name)}
}

// Remote submits the task and returns a ref to each of its results at once.
func (f *Func1R2[A, R1, R2]) Remote(ctx context.Context, a Arg[A]) (ObjectRef[R1], ObjectRef[R2]) {
	h := submitN(ctx, &f.remoteFunc, 2, a)
	return ObjectRef[R1]{h[0]}, ObjectRef[R2]{h[1]}
}

// Options returns a copy of f whose calls use opts (Ray's .options()).
func (f *Func1R2[A, R1, R2]) Options(opts ...TaskOption) *Func1R2[A, R1, R2] {
	return &Func1R2[A, R1, R2]{f.with(opts)}
}

// Func1R3 is a remote function of one argument returning three values, each its own object.
type Func1R3[A, R1, R2, R3 any] struct{ remoteFunc }

// Task1R3 registers fn, a function of one argument returning three values, as a remote function named
// name. Call it at package level.
func Task1R3[A, R1, R2, R3 any](name string, fn func(context.Context, A) (R1, R2, R3, error)) *Func1R3[A, R1, R2, R3] {
	registerN(name, []reflect.Type{typeOf[A]()}, []reflect.Type{typeOf[R1](), typeOf[R2](), typeOf[R3]()}, func(ctx context.Context, args [][]byte) ([]byte, error) {
		a, err := decodeArg[A](ctx, name, args, 0)
		if err != nil {
			return nil, err
		}
		r1, r2, r3, err := fn(ctx, a)
		if err != nil {
			return nil, err
		}
		return encodeReturns(
			func() (*pb.ReturnValue, error) { return encodeReturn(ctx, r1) },
			func() (*pb.ReturnValue, error) { return encodeReturn(ctx, r2) },
			func() (*pb.ReturnValue, error) { return encodeReturn(ctx, r3) },
		)
	})
	return &Func1R3[A, R1, R2, R3]{newRemoteFunc(name)}
}

// Remote submits the task and returns a ref to each of its results at once.
func (f *Func1R3[A, R1, R2, R3]) Remote(ctx context.Context, a Arg[A]) (ObjectRef[R1], ObjectRef[R2], ObjectRef[R3]) {
	h := submitN(ctx, &f.remoteFunc, 3, a)
	return ObjectRef[R1]{h[0]}, ObjectRef[R2]{h[1]}, ObjectRef[R3]{h[2]}
}

// Options returns a copy of f whose calls use opts (Ray's .options()).
func (f *Func1R3[A, R1, R2, R3]) Options(opts ...TaskOption) *Func1R3[A, R1, R2, R3] {
	return &Func1R3[A, R1, R2, R3]{f.with(opts)}
}

// Func2R2 is a remote function of two arguments returning two values, each its own object.
type Func2R2[A, B, R1, R2 any] struct{ remoteFunc }

// Task2R2 registers fn, a function of two arguments returning two values, as a remote function named
// name. Call it at package level.
func Task2R2[A, B, R1, R2 any](name string, fn func(context.Context, A, B) (R1, R2, error)) *Func2R2[A, B, R1, R2] {
	registerN(name, []reflect.Type{typeOf[A](), typeOf[B]()}, []reflect.Type{typeOf[R1](), typeOf[R2]()}, func(ctx context.Context, args [][]byte) ([]byte, error) {
		a, b, err := decode2[A, B](ctx, name, args)
		if err != nil {
			return nil, err
		}
		r1, r2, err := fn(ctx, a, b)
		if err != nil {
			return nil, err
		}
		return encodeReturns(
			func() (*pb.ReturnValue, error) { return encodeReturn(ctx, r1) },
			func() (*pb.ReturnValue, error) { return encodeReturn(ctx, r2) },
		)
	})
	return &Func2R2[A, B, R1, R2]{newRemoteFunc(name)}
}

// Remote submits the task and returns a ref to each of its results at once.
func (f *Func2R2[A, B, R1, R2]) Remote(ctx context.Context, a Arg[A], b Arg[B]) (ObjectRef[R1], ObjectRef[R2]) {
	h := submitN(ctx, &f.remoteFunc, 2, a, b)
	return ObjectRef[R1]{h[0]}, ObjectRef[R2]{h[1]}
}

// Options returns a copy of f whose calls use opts (Ray's .options()).
func (f *Func2R2[A, B, R1, R2]) Options(opts ...TaskOption) *Func2R2[A, B, R1, R2] {
	return &Func2R2[A, B, R1, R2]{f.with(opts)}
}

// Func2R3 is a remote function of two arguments returning three values, each its own object.
type Func2R3[A, B, R1, R2, R3 any] struct{ remoteFunc }

// Task2R3 registers fn, a function of two arguments returning three values, as a remote function named
// name. Call it at package level.
func Task2R3[A, B, R1, R2, R3 any](name string, fn func(context.Context, A, B) (R1, R2, R3, error)) *Func2R3[A, B, R1, R2, R3] {
	registerN(name, []reflect.Type{typeOf[A](), typeOf[B]()}, []reflect.Type{typeOf[R1](), typeOf[R2](), typeOf[R3]()}, func(ctx context.Context, args [][]byte) ([]byte, error) {
		a, b, err := decode2[A, B](ctx, name, args)
		if err != nil {
			return nil, err
		}
		r1, r2, r3, err := fn(ctx, a, b)
		if err != nil {
			return nil, err
		}
		return encodeReturns(
			func() (*pb.ReturnValue, error) { return encodeReturn(ctx, r1) },
			func() (*pb.ReturnValue, error) { return encodeReturn(ctx, r2) },
			func() (*pb.ReturnValue, error) { return encodeReturn(ctx, r3) },
		)
	})
	return &Func2R3[A, B, R1, R2, R3]{newRemoteFunc(name)}
}

// Remote submits the task and returns a ref to each of its results at once.
func (f *Func2R3[A, B, R1, R2, R3]) Remote(ctx context.Context, a Arg[A], b Arg[B]) (ObjectRef[R1], ObjectRef[R2], ObjectRef[R3]) {
	h := submitN(ctx, &f.remoteFunc, 3, a, b)
	return ObjectRef[R1]{h[0]}, ObjectRef[R2]{h[1]}, ObjectRef[R3]{h[2]}
}

// Options returns a copy of f whose calls use opts (Ray's .options()).
func (f *Func2R3[A, B, R1, R2, R3]) Options(opts ...TaskOption) *Func2R3[A, B, R1, R2, R3] {
	return &Func2R3[A, B, R1, R2, R3]{f.with(opts)}
}
