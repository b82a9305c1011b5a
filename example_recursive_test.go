package ray_test

import (
	"context"
	"fmt"
	"log"

	"github.com/ray-go/ray"
)

// Fib calls itself remotely. Written as `var Fib = ray.Task1("example.fib", func(...) {
// ... Fib.Remote(...) ... })`, Go refuses it ("initialization cycle: Fib refers to
// itself"): a package-level variable's initializer may not refer to the variable. So
// declare the variable, and register the function in an init function of the same
// package, which may refer to it (mutually recursive functions: both in one init).
var Fib *ray.Func1[int, int]

func init() {
	Fib = ray.Task1("example.fib", func(ctx context.Context, n int) (int, error) {
		if n < 2 {
			return n, nil
		}
		// Through the task's own ctx: the children are this task's, and while it waits
		// in Get its CPU runs other tasks (no deadlock however deep the recursion).
		a, b := Fib.Remote(ctx, ray.V(n-1)), Fib.Remote(ctx, ray.V(n-2))
		x, err := ray.Get(ctx, a)
		if err != nil {
			return 0, err
		}
		y, err := ray.Get(ctx, b)
		return x + y, err
	})
}

// A recursive remote function: declared at package level, registered in init (see Fib).
// Another way, when the types need not be checked: the function calls itself by name with
// ray.Call[int](ctx, "example.fib", []any{n - 1}).
func ExampleTask1_recursive() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)

	v, err := ray.Get(ctx, Fib.Remote(ctx, ray.V(10))) // 177 tasks, 88 of them waiting
	fmt.Println(v, err)
	// Output: 55 <nil>
}
