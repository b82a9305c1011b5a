package ray

import (
	"context"
	"fmt"
	"reflect"
	"runtime"

	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/objects/codec"
	"github.com/ray-go/ray/tasks"
	"github.com/ray-go/ray/tasks/sched"
)

// remoteFunc is what every FuncN shares: the registered name and the call options, with
// the resources they ask for worked out once (not on every call).
type remoteFunc struct {
	name   string
	opts   callOpts
	res    sched.Resources
	resPB  []*pb.ResourceQty // res's wire form, shared by the specs of every call
	resErr error
}

func newRemoteFunc(name string) remoteFunc {
	f := remoteFunc{name: name, opts: defaultCallOpts()}
	f.setResources()
	return f
}

// setResources works out the resources f's calls ask for, from its options.
func (f *remoteFunc) setResources() {
	f.res, f.resErr = f.opts.resourcesOf()
	f.resPB = tasks.ResourcesToPB(f.res)
}

// Name is the function's registered name.
func (f *remoteFunc) Name() string { return f.name }

func (f *remoteFunc) with(opts []TaskOption) remoteFunc {
	g := *f
	if f.opts.resources != nil {
		g.opts.resources = make(map[string]float64, len(f.opts.resources))
		for k, v := range f.opts.resources {
			g.opts.resources[k] = v
		}
	}
	for _, o := range opts {
		o(&g.opts)
	}
	g.setResources()
	return g
}

type argLike interface {
	toArg(c *core.Core) (core.Arg, error)
}

// submit is the one submission path of every typed and untyped remote function.
func submit[R any](ctx context.Context, f *remoteFunc, args ...argLike) ObjectRef[R] {
	tc, err := taskContext(ctx)
	if err != nil {
		return failedRef[R](err)
	}
	if f.resErr != nil {
		return failedRef[R](rayErrorf("ray: %s: %w", f.name, f.resErr))
	}
	call := core.Call{
		Function: f.name, Args: make([]core.Arg, len(args)), Resources: f.res, ResourcesPB: f.resPB,
		MaxRetries: int32(f.opts.maxRetries), RetryExceptions: f.opts.retryExceptions,
		Strategy: f.opts.strategy, AffinityNode: f.opts.affinityNode, AffinitySoft: f.opts.affinitySoft,
		PlacementGroup: f.opts.pg, BundleIndex: f.opts.pgBundle,
	}
	for i, a := range args {
		if call.Args[i], err = a.toArg(tc.Core); err != nil {
			return failedRef[R](rayErrorf("ray: %s: argument %d: %w", f.name, i+1, err))
		}
	}
	id, e, err := tc.Core.Submit(tc, call)
	runtime.KeepAlive(args) // argument refs stay counted until the task holds them
	if err == core.ErrShutdown {
		return failedRef[R](err)
	}
	// Any other submission error is also recorded on the object: Get returns it at once.
	return newRef[R](tc.Core, id, e)
}

func typeOf[T any]() reflect.Type { return reflect.TypeOf((*T)(nil)).Elem() }

// register adds a typed function to the registry; names are explicit so they survive
// refactors and identify the function in every process. A duplicate name is a programming
// error found at package initialisation, so it panics (like flag redefinition).
func register(name string, argTypes []reflect.Type, ret reflect.Type, call tasks.Func) {
	warnLateRegistration("remote function", name)
	checkSent("remote function", name, argTypes, ret)
	err := tasks.Register(&tasks.Function{Name: name, ArgTypes: argTypes, Return: ret, Call: func(ctx context.Context, args [][]byte) ([]byte, error) {
		if len(args) != len(argTypes) {
			return nil, fmt.Errorf("ray: %s takes %d arguments, got %d", name, len(argTypes), len(args))
		}
		return call(ctx, args)
	}})
	if err != nil {
		panic(err)
	}
}

func decodeArg[T any](ctx context.Context, name string, args [][]byte, i int) (T, error) {
	var v T
	var err error
	if len(args[i]) >= tasks.OwnedArgMin && tasks.ArgOwned(ctx, i) {
		v, err = codec.UnmarshalOwned[T](args[i]) // read from another node: no second copy
	} else {
		v, err = codec.Unmarshal[T](args[i])
	}
	if err != nil {
		return v, rayErrorf("ray: %s: argument %d: %w", name, i+1, err)
	}
	v = bindRefs(ctx, v)
	return v, nil
}

// decode2..decode4 decode the arguments of a function of 2 to 4 parameters (shared by
// remote functions, actor methods and constructors).
func decode2[A, B any](ctx context.Context, name string, args [][]byte) (a A, b B, err error) {
	if a, err = decodeArg[A](ctx, name, args, 0); err == nil {
		b, err = decodeArg[B](ctx, name, args, 1)
	}
	return a, b, err
}

func decode3[A, B, C any](ctx context.Context, name string, args [][]byte) (a A, b B, c C, err error) {
	if a, b, err = decode2[A, B](ctx, name, args); err == nil {
		c, err = decodeArg[C](ctx, name, args, 2)
	}
	return a, b, c, err
}

func decode4[A, B, C, D any](ctx context.Context, name string, args [][]byte) (a A, b B, c C, d D, err error) {
	if a, b, c, err = decode3[A, B, C](ctx, name, args); err == nil {
		d, err = decodeArg[D](ctx, name, args, 3)
	}
	return a, b, c, d, err
}

// resultEncoder returns the encoder of a task's or method's result: the value's bytes,
// with the refs nested in it registered for the task's owner (see escapeRefs).
func resultEncoder[R any](ctx context.Context) func(R, error) ([]byte, error) {
	return func(r R, err error) ([]byte, error) {
		if err != nil {
			return nil, err
		}
		b, refs, err := codec.MarshalRefs(r)
		if err != nil {
			return nil, fmt.Errorf("%w: result: %v", ErrEncode, err)
		}
		if len(refs) > 0 {
			if err := escapeRefs(ctx, refs); err != nil {
				return nil, err
			}
		}
		return b, nil
	}
}

// Func0 is a remote function of no arguments returning R.
type Func0[R any] struct{ remoteFunc }

// Func1 is a remote function of one argument returning R.
type Func1[A, R any] struct{ remoteFunc }

// Func2 is a remote function of two arguments returning R.
type Func2[A, B, R any] struct{ remoteFunc }

// Func3 is a remote function of three arguments returning R.
type Func3[A, B, C, R any] struct{ remoteFunc }

// Func4 is a remote function of four arguments returning R.
type Func4[A, B, C, D, R any] struct{ remoteFunc }

// Task0 registers fn as a remote function named name. Call it at package level.
func Task0[R any](name string, fn func(context.Context) (R, error)) *Func0[R] {
	register(name, nil, typeOf[R](), func(ctx context.Context, _ [][]byte) ([]byte, error) {
		return resultEncoder[R](ctx)(fn(ctx))
	})
	return &Func0[R]{newRemoteFunc(name)}
}

// Task1 registers fn as a remote function named name. Call it at package level (in a
// var declaration, or in init for a function that calls itself: see the recursive example).
func Task1[A, R any](name string, fn func(context.Context, A) (R, error)) *Func1[A, R] {
	register(name, []reflect.Type{typeOf[A]()}, typeOf[R](), func(ctx context.Context, args [][]byte) ([]byte, error) {
		a, err := decodeArg[A](ctx, name, args, 0)
		if err != nil {
			return nil, err
		}
		return resultEncoder[R](ctx)(fn(ctx, a))
	})
	return &Func1[A, R]{newRemoteFunc(name)}
}

// Task2 registers fn as a remote function named name. Call it at package level.
func Task2[A, B, R any](name string, fn func(context.Context, A, B) (R, error)) *Func2[A, B, R] {
	register(name, []reflect.Type{typeOf[A](), typeOf[B]()}, typeOf[R](), func(ctx context.Context, args [][]byte) ([]byte, error) {
		a, b, err := decode2[A, B](ctx, name, args)
		if err != nil {
			return nil, err
		}
		return resultEncoder[R](ctx)(fn(ctx, a, b))
	})
	return &Func2[A, B, R]{newRemoteFunc(name)}
}

// Task3 registers fn as a remote function named name. Call it at package level.
func Task3[A, B, C, R any](name string, fn func(context.Context, A, B, C) (R, error)) *Func3[A, B, C, R] {
	register(name, []reflect.Type{typeOf[A](), typeOf[B](), typeOf[C]()}, typeOf[R](), func(ctx context.Context, args [][]byte) ([]byte, error) {
		a, b, c, err := decode3[A, B, C](ctx, name, args)
		if err != nil {
			return nil, err
		}
		return resultEncoder[R](ctx)(fn(ctx, a, b, c))
	})
	return &Func3[A, B, C, R]{newRemoteFunc(name)}
}

// Task4 registers fn as a remote function named name. Call it at package level.
func Task4[A, B, C, D, R any](name string, fn func(context.Context, A, B, C, D) (R, error)) *Func4[A, B, C, D, R] {
	register(name, []reflect.Type{typeOf[A](), typeOf[B](), typeOf[C](), typeOf[D]()}, typeOf[R](), func(ctx context.Context, args [][]byte) ([]byte, error) {
		a, b, c, d, err := decode4[A, B, C, D](ctx, name, args)
		if err != nil {
			return nil, err
		}
		return resultEncoder[R](ctx)(fn(ctx, a, b, c, d))
	})
	return &Func4[A, B, C, D, R]{newRemoteFunc(name)}
}

// Remote submits the task and returns a ref to its result at once.
func (f *Func0[R]) Remote(ctx context.Context) ObjectRef[R] { return submit[R](ctx, &f.remoteFunc) }

// Remote submits the task and returns a ref to its result at once.
func (f *Func1[A, R]) Remote(ctx context.Context, a Arg[A]) ObjectRef[R] {
	return submit[R](ctx, &f.remoteFunc, a)
}

// Remote submits the task and returns a ref to its result at once.
func (f *Func2[A, B, R]) Remote(ctx context.Context, a Arg[A], b Arg[B]) ObjectRef[R] {
	return submit[R](ctx, &f.remoteFunc, a, b)
}

// Remote submits the task and returns a ref to its result at once.
func (f *Func3[A, B, C, R]) Remote(ctx context.Context, a Arg[A], b Arg[B], c Arg[C]) ObjectRef[R] {
	return submit[R](ctx, &f.remoteFunc, a, b, c)
}

// Remote submits the task and returns a ref to its result at once.
func (f *Func4[A, B, C, D, R]) Remote(ctx context.Context, a Arg[A], b Arg[B], c Arg[C], d Arg[D]) ObjectRef[R] {
	return submit[R](ctx, &f.remoteFunc, a, b, c, d)
}

// Options returns a copy of f whose calls use opts (Ray's .options()).
func (f *Func0[R]) Options(opts ...TaskOption) *Func0[R] { return &Func0[R]{f.with(opts)} }

// Options returns a copy of f whose calls use opts (Ray's .options()).
func (f *Func1[A, R]) Options(opts ...TaskOption) *Func1[A, R] { return &Func1[A, R]{f.with(opts)} }

// Options returns a copy of f whose calls use opts (Ray's .options()).
func (f *Func2[A, B, R]) Options(opts ...TaskOption) *Func2[A, B, R] {
	return &Func2[A, B, R]{f.with(opts)}
}

// Options returns a copy of f whose calls use opts (Ray's .options()).
func (f *Func3[A, B, C, R]) Options(opts ...TaskOption) *Func3[A, B, C, R] {
	return &Func3[A, B, C, R]{f.with(opts)}
}

// Options returns a copy of f whose calls use opts (Ray's .options()).
func (f *Func4[A, B, C, D, R]) Options(opts ...TaskOption) *Func4[A, B, C, D, R] {
	return &Func4[A, B, C, D, R]{f.with(opts)}
}

// anyArg is an untyped argument for Call.
type anyArg struct{ v any }

func (a anyArg) toArg(c *core.Core) (core.Arg, error) {
	if r, ok := a.v.(Ref); ok {
		h := r.ref()
		if h == nil || h.err != nil {
			return core.Arg{}, fmt.Errorf("ray: argument is a failed or zero ref")
		}
		if h.core != c {
			return core.Arg{}, fmt.Errorf("ray: ObjectRef belongs to another ray runtime (another Init)")
		}
		return core.Arg{Ref: h.id, IsRef: true}, nil
	}
	b, err := codec.MarshalValue(a.v)
	if err != nil {
		return core.Arg{}, fmt.Errorf("%w: %v", ErrEncode, err)
	}
	return core.Arg{Data: b}, nil
}

// Call submits the remote function registered under name, with untyped arguments (values
// or refs), and returns a ref to its result decoded as R. An unknown name, or arguments
// that do not match the function, fail the returned ref.
func Call[R any](ctx context.Context, name string, args []any, opts ...TaskOption) ObjectRef[R] {
	f := newRemoteFunc(name)
	f = f.with(opts)
	list := make([]argLike, len(args))
	for i, a := range args {
		list[i] = anyArg{a}
	}
	return submit[R](ctx, &f, list...)
}
