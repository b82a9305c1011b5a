package main

import (
	"context"
	"fmt"

	ray "github.com/ray-go/ray"
)

// evChildren is how many nested tasks the taskevents check's parent task submits: more
// than one chunk of records (4,096), so a budget of one chunk cannot keep them all.
const evChildren = 5000

var (
	evChild  = ray.Task1("e2e.EvChild", func(_ context.Context, i int) (int, error) { return i, nil })
	evParent *ray.Func1[int, int]
)

func init() {
	// The parent runs in a worker process, which owns (and records) its children.
	evParent = ray.Task1("e2e.EvParent", func(ctx context.Context, n int) (int, error) {
		refs := make([]ray.ObjectRef[int], n)
		for i := range refs {
			refs[i] = evChild.Remote(ctx, ray.V(i))
		}
		sum := 0
		for _, r := range refs {
			v, err := ray.Get(ctx, r)
			if err != nil {
				return 0, err
			}
			sum += v
		}
		return sum, nil
	})
}

// taskEventsCheck runs evChildren nested tasks from a task and reports how many of them
// the job's processes still list ("listed"): with -task-events the worker processes keep
// what the program's ray.WithTaskEvents says, as the driver does.
func taskEventsCheck(ctx context.Context, out map[string]any) error {
	sum, err := ray.Get(ctx, evParent.Remote(ctx, ray.V(evChildren)))
	if err != nil {
		return err
	}
	if want := evChildren * (evChildren - 1) / 2; sum != want {
		return fmt.Errorf("the children's sum is %d, want %d", sum, want)
	}
	_, total, err := ray.ListTasks(ctx, ray.TaskFilter{Function: evChild.Name(), Limit: 1})
	if err != nil {
		return err
	}
	out["listed"] = total
	return nil
}
