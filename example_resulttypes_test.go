package ray_test

import (
	"context"
	"fmt"
	"log"

	"github.com/ray-go/ray"
)

// The types the constructors return, named: a program that keeps remote functions in
// struct fields or passes them around spells them out. Each is used through its Remote
// (see ExampleTask0R2 .. ExampleTask2R3, ExampleGenerator0 .. ExampleGenerator2).

func ExampleFunc1() {
	var f *ray.Func1[int, int] = Square // what ray.Task1 returns
	fmt.Println(f.Name())
	// Output: example.square
}

func ExampleFunc0R2() {
	var f *ray.Func0R2[int, int] = MinMax // ray.Task0R2: no argument, two returns
	fmt.Println(f.Name())
	// Output: example.minMax
}

func ExampleFunc1R2() {
	var f *ray.Func1R2[[]int, []int, []int] = Halves // ray.Task1R2
	fmt.Println(f.Name())
	// Output: example.halves
}

func ExampleFunc2R2() {
	var f *ray.Func2R2[int, int, int, int] = DivMod // ray.Task2R2
	fmt.Println(f.Name())
	// Output: example.divMod
}

func ExampleFunc0R3() {
	var f *ray.Func0R3[int, int, int] = Version // ray.Task0R3
	fmt.Println(f.Name())
	// Output: example.version
}

func ExampleFunc1R3() {
	var f *ray.Func1R3[string, string, string, bool] = Parse // ray.Task1R3
	fmt.Println(f.Name())
	// Output: example.parse
}

func ExampleFunc2R3() {
	var f *ray.Func2R3[int, int, int, int, int] = Stats3 // ray.Task2R3
	fmt.Println(f.Name())
	// Output: example.stats3
}

func ExampleGenFunc0() {
	var g *ray.GenFunc0[string] = Ticks // ray.Generator0: yields strings
	fmt.Println(g.Name())
	// Output: example.ticks
}

func ExampleGenFunc1() {
	var g *ray.GenFunc1[int, int] = Countdown // ray.Generator1
	fmt.Println(g.Name())
	// Output: example.countdown
}

func ExampleGenFunc2() {
	var g *ray.GenFunc2[string, int, string] = Chunks // ray.Generator2
	fmt.Println(g.Name())
	// Output: example.chunks
}

// An ObjectRefGenerator hands out a generator task's items as they are yielded; Close
// ends the stream early (the task's yield then fails and it stops).
func ExampleObjectRefGenerator() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	var gen *ray.ObjectRefGenerator[int] = Naturals.Remote(ctx) // an endless stream
	for range 3 {
		ref, err := gen.Next(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(ray.Get(ctx, ref))
	}
	gen.Close()
	// Output:
	// 1 <nil>
	// 2 <nil>
	// 3 <nil>
}

func ExampleBundle() {
	// A bundle is a set of resources reserved together on one node.
	b := ray.Bundle{"CPU": 2, "GPU": 1}
	fmt.Println(b["CPU"], b["GPU"])
	// Output: 2 1
}

func ExamplePlacementStrategy() {
	// Where a placement group's bundles go: PACK (as few nodes as possible), SPREAD (as
	// many), and their STRICT forms (exactly one node; every bundle on its own node).
	for _, s := range []ray.PlacementStrategy{ray.StrategyPack, ray.StrategySpread, ray.StrategyStrictPack, ray.StrategyStrictSpread} {
		fmt.Println(s)
	}
	// Output:
	// PACK
	// SPREAD
	// STRICT_PACK
	// STRICT_SPREAD
}

func ExamplePlacementGroupHandle() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	var pg *ray.PlacementGroupHandle
	pg, err = ray.PlacementGroup(ctx, []ray.Bundle{{"CPU": 1}}, ray.StrategyStrictPack)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(pg.Ready(ctx), len(pg.BundleNodes()), pg.Bundles()[0]["CPU"])
	fmt.Println(pg.Remove(ctx))
	// Output:
	// <nil> 1 1
	// <nil>
}
