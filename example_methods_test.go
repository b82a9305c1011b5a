package ray_test

import (
	"context"
	"fmt"
	"log"

	"github.com/ray-go/ray"
)

// Grid is an actor whose methods take 0, 1, 2 and 4 arguments.
type Grid struct{ Cells map[[2]int]string }

// GridClass and its methods, registered at package level.
var (
	GridClass = ray.Actor("example.Grid", func() *Grid { return &Grid{Cells: map[[2]int]string{}} })
	GridSize  = ray.Method0(GridClass, "Size", func(g *Grid, _ context.Context) (int, error) { return len(g.Cells), nil })
	GridClear = ray.Method1(GridClass, "Clear", func(g *Grid, _ context.Context, row int) (int, error) {
		n := 0
		for k := range g.Cells {
			if k[0] == row {
				delete(g.Cells, k)
				n++
			}
		}
		return n, nil
	})
	GridAt = ray.Method2(GridClass, "At", func(g *Grid, _ context.Context, row, col int) (string, error) {
		return g.Cells[[2]int{row, col}], nil
	})
	GridFill = ray.Method4(GridClass, "Fill", func(g *Grid, _ context.Context, row, from, to int, v string) (int, error) {
		for c := from; c < to; c++ {
			g.Cells[[2]int{row, c}] = v
		}
		return len(g.Cells), nil
	})
)

// Methods of 0 to 4 arguments (Method0 ... Method4), called through a handle; calls made
// through one ctx run in the order they were made. (Compiled, not run: ExampleActor runs
// calls.)
func ExampleMethod4() {
	ctx, err := ray.Init(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	g := GridClass.Remote(ctx)
	GridFill.Remote(ctx, g, ray.V(0), ray.V(0), ray.V(3), ray.V("x")) // Method4
	GridFill.Remote(ctx, g, ray.V(1), ray.V(0), ray.V(2), ray.V("o"))
	at, _ := ray.Get(ctx, GridAt.Remote(ctx, g, ray.V(1), ray.V(1))) // Method2: "o"
	cleared, _ := ray.Get(ctx, GridClear.Remote(ctx, g, ray.V(0)))   // Method1: 3
	size, _ := ray.Get(ctx, GridSize.Remote(ctx, g))                 // Method0: 2
	fmt.Println(at, cleared, size)
}

func ExampleMethod0() {
	ctx, err := ray.Init(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	g := GridClass.Remote(ctx)
	fmt.Println(ray.Get(ctx, GridSize.Remote(ctx, g))) // 0
}

func ExampleMethod1() {
	ctx, err := ray.Init(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	g := GridClass.Remote(ctx)
	fmt.Println(ray.Get(ctx, GridClear.Remote(ctx, g, ray.V(3)))) // 0: nothing in row 3
}

func ExampleMethod2() {
	ctx, err := ray.Init(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	g := GridClass.Remote(ctx)
	row := Square.Remote(ctx, ray.V(2)) // refs are arguments of methods too
	fmt.Println(ray.Get(ctx, GridAt.Remote(ctx, g, row, ray.V(0))))
}
