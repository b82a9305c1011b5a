package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	ray "github.com/ray-go/ray"
)

// putHolder is what putInTask returns: a ref its worker process made with Put (so that
// process owns it), and that process's PID.
type putHolder struct {
	Ref ray.ObjectRef[[]byte]
	PID int
}

// putInTask puts n bytes in its worker process's store and returns the ref.
var putInTask = ray.Task1("e2e.PutInTask", func(ctx context.Context, n int) (putHolder, error) {
	r, err := ray.Put(ctx, blobOf(n))
	return putHolder{Ref: r, PID: os.Getpid()}, err
})

// nestedPutReport is what nestedput prints of one Get: its error and whether it matches
// ray.ErrOwnerDied and ray.ErrObjectLost.
type nestedPutReport struct {
	Error              string
	OwnerDied, LostToo bool
}

// nestedPutCheck gets a 1 MiB object that a task's worker process made with Put and
// returned nested in its result, SIGKILLs that process (the object's owner, whose store
// held its bytes) and reads the object right away: once as soon as the task's result is
// here (the driver may not have the object's value from its owner yet), and once more,
// with another task, after ray.Wait found the object ready (the driver has its value: the
// read of its bytes fails). It prints one line, "nestedput " and JSON: the two Gets'
// reports, Unresolved and Resolved.
func nestedPutCheck(ctx context.Context) error {
	var out struct{ Unresolved, Resolved nestedPutReport }
	var err error
	if out.Unresolved, err = nestedPutKill(ctx, false); err != nil {
		return err
	}
	if out.Resolved, err = nestedPutKill(ctx, true); err != nil {
		return err
	}
	b, _ := json.Marshal(out)
	fmt.Printf("nestedput %s\n", b)
	return nil
}

// nestedPutKill runs putInTask, SIGKILLs the worker process that ran it (after a ray.Wait
// for the object if resolved) and reports the Get of its object.
func nestedPutKill(ctx context.Context, resolved bool) (nestedPutReport, error) {
	var rep nestedPutReport
	h, err := ray.Get(ctx, putInTask.Options(ray.MaxRetries(0)).Remote(ctx, ray.V(1<<20)))
	if err != nil {
		return rep, fmt.Errorf("the task that puts: %w", err)
	}
	if h.PID == os.Getpid() {
		return rep, errors.New("the task ran in the driver's process, want a worker process")
	}
	if resolved {
		if ready, _, err := ray.Wait(ctx, []ray.ObjectRef[[]byte]{h.Ref}, ray.Timeout(time.Minute)); err != nil || len(ready) != 1 {
			return rep, fmt.Errorf("waiting for the object to be ready: %d ready, %v", len(ready), err)
		}
	}
	p, err := os.FindProcess(h.PID)
	if err != nil {
		return rep, err
	}
	if err := p.Kill(); err != nil {
		return rep, fmt.Errorf("killing the worker process %d: %w", h.PID, err)
	}
	c, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	_, err = ray.Get(c, h.Ref)
	rep.OwnerDied, rep.LostToo = errors.Is(err, ray.ErrOwnerDied), errors.Is(err, ray.ErrObjectLost)
	if err != nil {
		rep.Error = err.Error()
	}
	return rep, nil
}
