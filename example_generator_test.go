package ray_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/ray-go/ray"
)

// Streaming generators (Ray's num_returns="streaming").
var (
	// Ticks yields three values, no argument.
	Ticks = ray.Generator0("example.ticks", func(_ context.Context, yield func(string) error) error {
		for _, s := range []string{"tick", "tock", "tick"} {
			if err := yield(s); err != nil {
				return err
			}
		}
		return nil
	})
	// Countdown yields n, n-1, ..., 1, one argument.
	Countdown = ray.Generator1("example.countdown", func(_ context.Context, n int, yield func(int) error) error {
		for i := n; i > 0; i-- {
			if err := yield(i); err != nil {
				return err
			}
		}
		return nil
	})
	// Chunks splits a text in chunks of a given size, and fails on an empty text after
	// nothing.
	Chunks = ray.Generator2("example.chunks", func(_ context.Context, text string, size int, yield func(string) error) error {
		if text == "" {
			return errors.New("nothing to split")
		}
		for len(text) > 0 {
			n := min(size, len(text))
			if err := yield(text[:n]); err != nil {
				return err
			}
			text = text[n:]
		}
		return nil
	})
	// Naturals yields 1, 2, 3, ... until its consumer closes the stream.
	Naturals = ray.Generator0("example.naturals", func(ctx context.Context, yield func(int) error) error {
		for i := 1; ; i++ {
			if err := yield(i); err != nil {
				return err // the stream was closed: ctx is done
			}
		}
	})
)

func ExampleGenerator0() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	gen := Ticks.Remote(ctx) // at once; the task runs
	for {
		ref, err := gen.Next(ctx) // a ref to the next item, as soon as it is yielded
		if errors.Is(err, ray.ErrGeneratorDone) {
			break
		}
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(ray.Get(ctx, ref))
	}
	// Output:
	// tick <nil>
	// tock <nil>
	// tick <nil>
}

func ExampleGenerator1() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	gen := Countdown.Remote(ctx, ray.V(3))
	var squares []ray.ObjectRef[int]
	for {
		ref, err := gen.Next(ctx)
		if err != nil {
			break // ray.ErrGeneratorDone
		}
		squares = append(squares, Square.Remote(ctx, ref)) // an item is an argument like any ref
	}
	fmt.Println(ray.GetAll(ctx, squares))
	// Output: [9 4 1] <nil>
}

func ExampleGenerator2() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	gen := Chunks.Remote(ctx, ray.V("streaming"), ray.V(4))
	var parts []string
	for {
		ref, err := gen.Next(ctx)
		if err != nil {
			fmt.Println(err)
			break
		}
		s, _ := ray.Get(ctx, ref)
		parts = append(parts, s)
	}
	fmt.Println(strings.Join(parts, "|"))
	// A generator's error ends its stream, after the items it yielded.
	_, err = Chunks.Options(ray.MaxRetries(0)).Remote(ctx, ray.V(""), ray.V(4)).Next(ctx)
	var te *ray.TaskError
	fmt.Println(errors.As(err, &te), te.Message)
	// Output:
	// ray: generator done
	// stre|amin|g
	// true nothing to split
}

func ExampleGeneratorBackpressure() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	// Naturals never ends on its own: with a window of 2 it yields at most 2 items ahead of
	// what Next has handed out, and waits.
	gen := Naturals.Options(ray.GeneratorBackpressure(2)).Remote(ctx)
	sum := 0
	for range 5 {
		ref, err := gen.Next(ctx)
		if err != nil {
			log.Fatal(err)
		}
		v, _ := ray.Get(ctx, ref)
		sum += v
	}
	gen.Close() // the rest is not wanted: the task is cancelled
	fmt.Println(sum)
	_, err = gen.Next(ctx)
	fmt.Println(errors.Is(err, ray.ErrGeneratorClosed))
	// Output:
	// 15
	// true
}
