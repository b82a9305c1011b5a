package ray_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/ray-go/ray"
)

var Halve = ray.Task1("example.halve", func(ctx context.Context, x int) (int, error) {
	if x%2 != 0 {
		return 0, fmt.Errorf("%d is odd", x)
	}
	return x / 2, nil
})

func ExampleListTasks() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	_, _ = ray.Get(ctx, Halve.Remote(ctx, ray.V(4)))
	_, _ = ray.Get(ctx, Halve.Remote(ctx, ray.V(3)))
	failed, total, err := ray.ListTasks(ctx, ray.TaskFilter{Function: "example.halve", State: ray.TaskFailed})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(total, failed[0].ErrorType, failed[0].Error)
	// Output: 1 APPLICATION 3 is odd
}

func ExampleSummarizeTasks() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	for i := range 4 {
		_, _ = ray.Get(ctx, Halve.Remote(ctx, ray.V(i)))
	}
	counts, err := ray.SummarizeTasks(ctx, ray.TaskFilter{})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range counts {
		fmt.Println(c.Function, c.State, c.Count)
	}
	// Output:
	// example.halve FAILED 2
	// example.halve FINISHED 2
}

func ExampleGetTask() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	_, _ = ray.Get(ctx, Halve.Remote(ctx, ray.V(8)))
	list, _, err := ray.ListTasks(ctx, ray.TaskFilter{Limit: 1})
	if err != nil {
		log.Fatal(err)
	}
	attempts, err := ray.GetTask(ctx, list[0].TaskID[:8]) // a prefix will do
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(attempts[0].Function, attempts[0].State)
	// Output: example.halve FINISHED
}

func ExampleWriteTimeline() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	_, _ = ray.Get(ctx, Halve.Remote(ctx, Halve.Remote(ctx, ray.V(8)))) // an arrow from the first to the second
	f, err := os.CreateTemp("", "timeline-*.json")
	if err != nil {
		log.Fatal(err)
	}
	defer os.Remove(f.Name())
	if err := ray.WriteTimeline(ctx, f, ray.TaskFilter{}); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("open it at https://ui.perfetto.dev")
	// Output: open it at https://ui.perfetto.dev
}

func ExampleWithTaskEvents() {
	// Keep the records of the last 10,000 task attempts (a negative number turns
	// recording off).
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2), ray.WithTaskEvents(10_000))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	_, _ = ray.Get(ctx, Halve.Remote(ctx, ray.V(2)))
	_, total, err := ray.ListTasks(ctx, ray.TaskFilter{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(total)
	// Output: 1
}

func ExampleListObjects() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	ref, err := ray.Put(ctx, make([]byte, 1<<20)) // large: it goes to the node's store
	if err != nil {
		log.Fatal(err)
	}
	objs, _, err := ray.ListObjects(ctx, ray.ObjectFilter{ObjectID: ref.ID()})
	if err != nil {
		log.Fatal(err)
	}
	node, _ := ray.NodeID(ctx)
	o := objs[0]
	fmt.Println(o.State, o.RefType, o.Size >= 1<<20, o.Location == node)
	// Output: READY LOCAL_REFERENCE true true
}

func ExampleSummarizeObjects() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	a, _ := ray.Put(ctx, "one")
	b, _ := ray.Put(ctx, "two")
	defer a.Release()
	defer b.Release()
	counts, err := ray.SummarizeObjects(ctx, ray.ObjectFilter{State: ray.ObjectReady})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range counts {
		fmt.Println(c.State, c.RefType, c.Count)
	}
	// Output: READY LOCAL_REFERENCE 2
}
