package ray_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/ray-go/ray"
)

// Remote functions of several returns (Ray's num_returns=n).
var (
	// MinMax has no argument and two returns.
	MinMax = ray.Task0R2("example.minMax", func(context.Context) (int, int, error) { return -3, 12, nil })
	// Halves splits a list in two halves: one argument, two returns.
	Halves = ray.Task1R2("example.halves", func(_ context.Context, xs []int) ([]int, []int, error) {
		return xs[:len(xs)/2], xs[len(xs)/2:], nil
	})
	// DivMod divides: two arguments, two returns; an error fails both refs.
	DivMod = ray.Task2R2("example.divMod", func(_ context.Context, a, b int) (int, int, error) {
		if b == 0 {
			return 0, 0, errors.New("division by zero")
		}
		return a / b, a % b, nil
	})
	// Version has no argument and three returns.
	Version = ray.Task0R3("example.version", func(context.Context) (int, int, int, error) { return 2, 48, 0, nil })
	// Parse splits "key=value" into its key, its value and whether it had one.
	Parse = ray.Task1R3("example.parse", func(_ context.Context, s string) (string, string, bool, error) {
		k, v, ok := strings.Cut(s, "=")
		return k, v, ok, nil
	})
	// Stats3 returns the sum, the difference and the product of two numbers.
	Stats3 = ray.Task2R3("example.stats3", func(_ context.Context, a, b int) (int, int, int, error) {
		return a + b, a - b, a * b, nil
	})
)

func ExampleTask0R2() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	lo, hi := MinMax.Remote(ctx) // two refs, one task
	fmt.Println(ray.Get(ctx, hi))
	fmt.Println(ray.Get(ctx, lo))
	// Output:
	// 12 <nil>
	// -3 <nil>
}

func ExampleTask1R2() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	left, right := Halves.Remote(ctx, ray.V([]int{1, 2, 3, 4, 5}))
	left.Release() // each return is freed on its own
	fmt.Println(ray.Get(ctx, right))
	// Output: [3 4 5] <nil>
}

func ExampleTask2R2() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	q, r := DivMod.Remote(ctx, ray.V(47), ray.V(5))
	fmt.Println(ray.Get(ctx, Square.Remote(ctx, r))) // a return is an argument like any ref
	fmt.Println(ray.Get(ctx, q))
	// An error fails every return with the same error.
	q, r = DivMod.Options(ray.MaxRetries(0)).Remote(ctx, ray.V(1), ray.V(0))
	_, err1 := ray.Get(ctx, q)
	_, err2 := ray.Get(ctx, r)
	var te *ray.TaskError
	fmt.Println(errors.As(err1, &te), te.Message, err1.Error() == err2.Error())
	// Output:
	// 4 <nil>
	// 9 <nil>
	// true division by zero true
}

func ExampleTask0R3() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	major, minor, patch := Version.Remote(ctx)
	v, err := ray.GetAll(ctx, []ray.ObjectRef[int]{major, minor, patch})
	fmt.Println(v, err)
	// Output: [2 48 0] <nil>
}

func ExampleTask1R3() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	key, value, ok := Parse.Remote(ctx, ray.V("answer=42"))
	k, _ := ray.Get(ctx, key)
	v, _ := ray.Get(ctx, value)
	fmt.Println(k, v)
	fmt.Println(ray.Get(ctx, ok))
	// Output:
	// answer 42
	// true <nil>
}

func ExampleTask2R3() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	sum, diff, prod := Stats3.Remote(ctx, ray.V(6), ray.V(4))
	fmt.Println(ray.GetAll(ctx, []ray.ObjectRef[int]{sum, diff, prod}))
	// Output: [10 2 24] <nil>
}
