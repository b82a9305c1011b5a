package main

import (
	"context"
	"fmt"

	ray "github.com/ray-go/ray"
)

// tlParent submits two nested tasks from a worker process and adds their results: its
// record is the driver's, its children's the worker process's.
var tlParent = ray.Task1("e2e.TlParent", func(ctx context.Context, x int) (int, error) {
	a, b := add.Remote(ctx, ray.V(x), ray.V(1)), add.Remote(ctx, ray.V(x), ray.V(2))
	va, err := ray.Get(ctx, a)
	if err != nil {
		return 0, err
	}
	vb, err := ray.Get(ctx, b)
	return va + vb, err
})

// taskListCheck runs 5 tasks, an actor call and a task with 2 nested tasks (9 task
// attempts), then asks the state API from the driver, several times: "records" is how many
// ListTasks returned each time (with its total), "duplicated" how many (task, attempt)
// pairs came more than once, "summary" SummarizeTasks' counts by function and state.
func taskListCheck(ctx context.Context, out map[string]any) error {
	var refs []ray.ObjectRef[int]
	for i := range 5 {
		refs = append(refs, add.Remote(ctx, ray.V(i), ray.V(i)))
	}
	if _, err := ray.GetAll(ctx, refs); err != nil {
		return err
	}
	h := accelClass.Remote(ctx)
	if _, err := ray.Get(ctx, accelAdd.Remote(ctx, h, ray.V(1))); err != nil {
		return err
	}
	if v, err := ray.Get(ctx, tlParent.Remote(ctx, ray.V(10))); err != nil || v != 23 {
		return fmt.Errorf("the nested tasks' parent: %d, %v (want 23)", v, err)
	}
	var records, totals []int
	duplicated := 0
	for range 5 {
		tis, total, err := ray.ListTasks(ctx, ray.TaskFilter{})
		if err != nil {
			return err
		}
		records, totals = append(records, len(tis)), append(totals, total)
		seen := map[string]int{}
		for _, ti := range tis {
			seen[fmt.Sprintf("%s/%d", ti.TaskID, ti.Attempt)]++
		}
		for _, c := range seen {
			if c > 1 {
				duplicated++
			}
		}
	}
	sum, err := ray.SummarizeTasks(ctx, ray.TaskFilter{})
	if err != nil {
		return err
	}
	counts := map[string]int{}
	for _, c := range sum {
		counts[c.Function+" "+c.State] += c.Count
	}
	out["records"], out["totals"], out["duplicated"], out["summary"] = records, totals, duplicated, counts
	return nil
}
