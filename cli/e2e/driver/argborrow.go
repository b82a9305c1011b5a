package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	ray "github.com/ray-go/ray"
)

// argRefs is a task's argument with refs inside: the worker process that decodes it
// borrows them.
type argRefs struct{ List []ray.ObjectRef[[]byte] }

// sumArgRefs reads the refs of its argument in its worker process and returns their
// total length and that process's PID.
var sumArgRefs = ray.Task1("e2e.SumArgRefs", func(ctx context.Context, a argRefs) ([2]int, error) {
	n := 0
	for _, r := range a.List {
		b, err := ray.Get(ctx, r)
		if err != nil {
			return [2]int{}, err
		}
		n += len(b)
	}
	return [2]int{n, os.Getpid()}, nil
})

// argBorrowCheck puts four 1 MiB objects, passes their refs inside a struct to a task
// that runs in a worker process and reads them, and then watches (ray.ListObjects) for
// that process's borrows of them (BorrowedReference rows) to end, up to 60 s. It prints
// "argborrow released after Ns" or "argborrow still borrowed after 60s: ROWS".
func argBorrowCheck(ctx context.Context) error {
	var a argRefs
	want := map[string]bool{}
	for i := range 4 {
		r, err := ray.Put(ctx, blobOf(1<<20+i))
		if err != nil {
			return err
		}
		a.List = append(a.List, r)
		want[r.ID()] = true
	}
	got, err := ray.Get(ctx, sumArgRefs.Remote(ctx, ray.V(a)))
	if err != nil {
		return fmt.Errorf("the task that reads the refs: %w", err)
	}
	if got[0] != 4<<20+6 || got[1] == os.Getpid() {
		return fmt.Errorf("the task read %d bytes in process %d, want %d in a worker process", got[0], got[1], 4<<20+6)
	}
	start := time.Now()
	var rows []ray.ObjectState
	for time.Since(start) < 60*time.Second {
		all, _, err := ray.ListObjects(ctx, ray.ObjectFilter{RefType: ray.BorrowedReference})
		var partial *ray.PartialStateError
		if err != nil && !errors.As(err, &partial) {
			return fmt.Errorf("ListObjects: %w", err)
		}
		rows = rows[:0]
		for _, o := range all {
			if want[o.ObjectID] {
				rows = append(rows, o)
			}
		}
		if len(rows) == 0 && err == nil {
			fmt.Printf("argborrow released after %.0fs\n", time.Since(start).Seconds())
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	fmt.Printf("argborrow still borrowed after 60s: %+v\n", rows)
	return nil
}
