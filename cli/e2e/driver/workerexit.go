package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	ray "github.com/ray-go/ray"
)

// exitWorker ends its worker process with exit status 3 (the task never returns).
var exitWorker = ray.Task1("e2e.ExitWorker", func(ctx context.Context, x int) (int, error) {
	os.Exit(3)
	return x, nil
})

// workerExitCheck runs a task that ends its worker process with os.Exit(3), without
// retries, and checks its error: that the worker process exited (exit status 3), not
// that a node died, that it was not retried, and where the output is. Then the state API
// right away: ListTasks and GetTask answer without error, the failed task among the
// records (the exited process is not waited for). Then it leaves a long task running.
// It prints "workerexit ready" once all holds and that task is RUNNING, or exits with what did not, then waits to be killed (the test reads the task
// records, which live in this driver, with rayctl).
func workerExitCheck(ctx context.Context) error {
	r := exitWorker.Options(ray.MaxRetries(0)).Remote(ctx, ray.V(1))
	_, err := ray.Get(ctx, r)
	if err == nil {
		return errors.New("the task that exits its worker process succeeded")
	}
	for _, want := range []string{"worker process", "exited (exit status 3)", "not retried (MaxRetries is 0)", "its output:"} {
		if !strings.Contains(err.Error(), want) {
			return fmt.Errorf("the error of a task whose worker process exited lacks %q: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), "node ") && strings.Contains(err.Error(), " died") {
		return fmt.Errorf("the error of a task whose worker process exited says a node died: %v", err)
	}
	// Bounded, not timed: without skipping the exited process the call fails after
	// 10 s with a *PartialStateError (before: with no records at all).
	c, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	tasks, _, err := ray.ListTasks(c, ray.TaskFilter{Function: exitWorker.Name()})
	if err != nil {
		return fmt.Errorf("ListTasks right after the worker process exited: %v", err)
	}
	if len(tasks) != 1 || tasks[0].State != ray.TaskFailed || !strings.Contains(tasks[0].Error, "exit status 3") {
		return fmt.Errorf("ListTasks right after the worker process exited: %+v, want the task FAILED with its exit status", tasks)
	}
	if _, err := ray.GetTask(c, r.ID()[:32]); err != nil {
		return fmt.Errorf("GetTask of the task whose worker process exited: %v", err)
	}
	// A task left running, for the test's look at a RUNNING task's start time.
	long := busy.Remote(ctx, ray.V(10*time.Minute))
	for {
		tasks, _, err := ray.ListTasks(c, ray.TaskFilter{Function: busy.Name(), State: ray.TaskRunning})
		if err != nil {
			return fmt.Errorf("ListTasks of the running task: %v", err)
		}
		if len(tasks) == 1 {
			break
		}
		select {
		case <-c.Done():
			return errors.New("the long task did not show RUNNING within a minute")
		case <-time.After(100 * time.Millisecond):
		}
	}
	fmt.Println("workerexit ready")
	time.Sleep(10 * time.Minute)
	runtime.KeepAlive(long)
	return nil
}
