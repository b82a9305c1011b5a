// Command quickstart is the README's first program: tasks, nested tasks, refs as
// arguments, Put/Get/Wait and an error, on the embedded single-node default.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/ray-go/ray"
)

// Remote functions are registered at package level under explicit names.
var (
	Square = ray.Task1("quickstart.square", func(_ context.Context, x int) (int, error) {
		return x * x, nil
	})

	Add = ray.Task2("quickstart.add", func(_ context.Context, a, b int) (int, error) {
		return a + b, nil
	})

	// SumOfSquares is a nested task: it submits tasks with its own ctx and Gets them.
	SumOfSquares = ray.Task1("quickstart.sumOfSquares", func(ctx context.Context, n int) (int, error) {
		refs := make([]ray.ObjectRef[int], n)
		for i := range refs {
			refs[i] = Square.Remote(ctx, ray.V(i+1))
		}
		vals, err := ray.GetAll(ctx, refs)
		if err != nil {
			return 0, err
		}
		total := 0
		for _, v := range vals {
			total += v
		}
		return total, nil
	})

	Mean = ray.Task1("quickstart.mean", func(_ context.Context, xs []float64) (float64, error) {
		if len(xs) == 0 {
			return 0, errors.New("mean of no numbers")
		}
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs)), nil
	})

	Round = ray.Task1("quickstart.round", func(_ context.Context, x float64) (int, error) {
		return int(x + 0.5), nil
	})

	Slow = ray.Task1("quickstart.slow", func(ctx context.Context, d time.Duration) (time.Duration, error) {
		select {
		case <-time.After(d):
			return d, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	})
)

func main() {
	ctx, err := ray.Init(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := ray.Shutdown(ctx); err != nil {
			log.Print(err)
		}
	}()

	// A task returns a ref at once; a ref is an argument like a value.
	r := Square.Remote(ctx, ray.V(4))
	s := Add.Remote(ctx, r, ray.V(1))
	v, err := ray.Get(ctx, s)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("square(4) + 1 =", v)

	// Nested tasks.
	n, err := ray.Get(ctx, SumOfSquares.Remote(ctx, ray.V(10)))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("sum of squares 1..10 =", n)

	// Put a large value once, pass the ref to a task.
	xs := make([]float64, 1_000_000)
	for i := range xs {
		xs[i] = float64(i)
	}
	ref, err := ray.Put(ctx, xs)
	if err != nil {
		log.Fatal(err)
	}
	m, err := ray.Get(ctx, Mean.Remote(ctx, ref))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("mean of 0..999999 =", m)

	// Wait for the first two of three tasks.
	refs := []ray.ObjectRef[time.Duration]{
		Slow.Remote(ctx, ray.V(300*time.Millisecond)),
		Slow.Remote(ctx, ray.V(10*time.Millisecond)),
		Slow.Remote(ctx, ray.V(20*time.Millisecond)),
	}
	ready, notReady, err := ray.Wait(ctx, refs, ray.NumReady(2), ray.Timeout(5*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("wait: %d ready, %d not ready\n", len(ready), len(notReady))

	// A failing task: Get returns *ray.TaskError, for it and for what depended on it.
	_, err = ray.Get(ctx, Round.Remote(ctx, Mean.Remote(ctx, ray.V([]float64{}))))
	var te *ray.TaskError
	if errors.As(err, &te) {
		fmt.Printf("error from %s: %s\n", te.Function, te.Message)
	}
}
