// Package ray is the whole user API of ray-go, Ray for Go: remote functions (tasks) that
// return futures, Get/Put/Wait, nested tasks, and resource-aware scheduling, over
// protoactor-go grains with etcd as the global control store.
//
// Register remote functions at package level under explicit names, start the runtime,
// and call them:
//
//	var Square = ray.Task1("demo.square", func(ctx context.Context, x int) (int, error) {
//		return x * x, nil
//	})
//
//	ctx, err := ray.Init(context.Background()) // an embedded single-node cluster
//	defer ray.Shutdown(ctx)
//	r := Square.Remote(ctx, ray.V(4))          // ObjectRef[int], at once
//	s := Square.Remote(ctx, r)                 // a ref is an argument: the task gets 16
//	v, err := ray.Get(ctx, s)                  // 256
//
// A remote function that calls itself (or two that call each other) cannot be written as
// `var F = ray.Task1(..., func(...) { ... F.Remote(...) ... })`: Go rejects a package-level
// variable whose initializer refers to it ("initialization cycle"). Declare the variable
// and register the function in an init function, which may refer to it:
//
//	var Fib *ray.Func1[int, int]
//
//	func init() {
//		Fib = ray.Task1("demo.fib", func(ctx context.Context, n int) (int, error) {
//			if n < 2 {
//				return n, nil
//			}
//			a, b := Fib.Remote(ctx, ray.V(n-1)), Fib.Remote(ctx, ray.V(n-2))
//			x, err := ray.Get(ctx, a) // ... and b: see Example (Task1, recursive)
//		})
//	}
//
// (Or call it by name, untyped: ray.Call[int](ctx, "demo.fib", []any{n - 1}).) It is still
// registered during package initialisation, so every process of the job knows it.
//
// A remote function may return several values (Ray's num_returns=n): ray.Task1R2 (and
// Task0R2 to Task2R3: 0 to 2 arguments, 2 or 3 returns) registers one, and its Remote gives
// one ref per value. Each is an object of its own: passed to other tasks, read, released
// and recreated through lineage on its own (the task runs once per call, and again for a
// lost return, whose siblings keep their values). An error fails every ref with the same
// *TaskError:
//
//	var DivMod = ray.Task2R2("demo.divmod", func(ctx context.Context, a, b int) (int, int, error) {
//		return a / b, a % b, nil
//	})
//
//	q, r := DivMod.Remote(ctx, ray.V(47), ray.V(5)) // ObjectRef[int], ObjectRef[int]
//	s := Square.Remote(ctx, r)                     // 4: only the remainder goes to Square
//
// A generator (Ray's num_returns="streaming") yields values instead of returning one:
// ray.Generator1 (and Generator0, Generator2) registers it, its Remote returns an
// *ObjectRefGenerator at once, and Next gives a ref to each item as soon as the task has
// yielded it, then ErrGeneratorDone (or the task's error, after the items it yielded).
// GeneratorBackpressure(n) makes yield wait while n items are unconsumed. ObjectRefGenerator
// says what a retry and a lost item do.
//
// How it maps to Ray: ray.TaskN is @ray.remote on a function, Remote is .remote(),
// Options is .options(num_cpus=..., max_retries=..., retry_exceptions=...), ObjectRef is
// ObjectRef, Get/Put/Wait/Cancel are ray.get/put/wait/cancel, Call is calling a function by
// name. The runtime travels in the context.Context (there is no global runtime), so a task
// receives a ctx with which it can submit nested tasks and Get their results; a task blocked
// in Get lends its CPU back to the node, as in Ray. That takes the task's own ctx: waiting
// inside a task through the driver's ctx (saved from Init) fails with ErrDriverContext.
//
// Errors: a task that returns an error or panics makes Get return *TaskError (also for
// every task that depended on it); submission problems (unknown function, infeasible
// resources, an argument that cannot be encoded) are reported by the returned ref at once:
// branch with errors.Is on ErrUnknownFunction, ErrInfeasible, ErrEncode, ErrCancelled,
// ErrObjectLost. A task that returns the error a nested task's or actor call's Get gave it
// (unchanged or wrapped with %w) fails with a *TaskError that still matches that failure's
// sentinel (ErrInfeasible, ErrObjectLost, ErrActorDied, ErrCancelled, ...), at any depth, as
// Ray's RayTaskError keeps its cause (TaskError.Is). The function's own error comes back as
// text, or whole when its type is registered with RegisterError (errors.As finds it, as
// Ray keeps an exception's class). Argument and result types are checked when Init runs:
// a registered function whose types cannot be sent (an unexported field that holds data,
// a channel, ...) makes Init fail with ErrEncode, saying which and what to do.
//
// Objects: values of at most 100 KiB travel inline with task replies and stay with their
// owner (this process); larger ones live in the node's object store shard. A task's
// by-value argument (V) over 100 KiB goes through the store too: the runtime puts it there
// and passes it by reference, so that the task's lineage record stays small. An object lives
// while any copy of its ObjectRef is reachable (a finalizer on the handle the copies share
// tells when none is); ObjectRef.Release frees it earlier. Values are encoded with
// deterministic CBOR, with raw fast paths for numeric slices and []byte, and Arrow IPC for
// arrow.Record (package objects/codec).
package ray
