package sched_test

import (
	"errors"
	"fmt"

	"github.com/ray-go/ray/tasks/sched"
)

func must(r sched.Resources, err error) sched.Resources {
	if err != nil {
		panic(err)
	}
	return r
}

func ExamplePlace() {
	big := must(sched.FromMap(map[string]float64{"CPU": 8}))
	gpu := must(sched.FromMap(map[string]float64{"CPU": 8, "GPU": 1}))
	nodes := []sched.Node{
		{ID: "n1", Total: big, Available: big.Sub(must(sched.FromMap(map[string]float64{"CPU": 6}))), Alive: true},
		{ID: "n2", Total: big, Available: big, Alive: true},
		{ID: "n3", Total: gpu, Available: gpu, Alive: true},
	}
	task := sched.Request{Resources: must(sched.FromMap(map[string]float64{"CPU": 0.5}))}

	// n1 is 75% busy, above the 0.5 threshold: the task spills to idle n2 (n3 has a GPU a
	// CPU task should not occupy).
	d, _ := sched.Place(task, nodes, "n1", sched.Options{})
	fmt.Println(d.Node, d.RunNow, d.Reason)

	// The task's 64 MiB argument lives on n2, which becomes the preferred node.
	task.ArgBytes = map[string]int64{"n2": 64 << 20}
	d, _ = sched.Place(task, nodes, "n1", sched.Options{})
	fmt.Println(d.Node, d.RunNow, d.Reason)

	// On n3 instead, it does not outweigh GPU avoidance while a CPU-only node is free (as in Ray).
	task.ArgBytes = map[string]int64{"n3": 64 << 20}
	d, _ = sched.Place(task, nodes, "n1", sched.Options{})
	fmt.Println(d.Node, d.RunNow, d.Reason)

	_, err := sched.Place(sched.Request{Resources: must(sched.FromMap(map[string]float64{"GPU": 2}))}, nodes, "n1", sched.Options{})
	fmt.Println(errors.Is(err, sched.ErrInfeasible), err)
	// Output:
	// n2 true best
	// n2 true preferred
	// n2 true best
	// true sched: infeasible: task requires GPU=2 but the largest node has GPU=1
}

func ExampleQueue() {
	one := must(sched.FromMap(map[string]float64{"CPU": 1}))
	four := must(sched.FromMap(map[string]float64{"CPU": 4}))
	var q sched.Queue[string]
	q.Push("a", one)
	q.Push("big", four) // does not fit in 2 CPUs, but does not block "b" and "c"
	q.Push("b", one)
	q.Push("c", one)
	started, left := q.Dispatch(must(sched.FromMap(map[string]float64{"CPU": 2})), 0, nil)
	fmt.Println(started, left, q.Len())
	// Output: [a b] {} 2
}
