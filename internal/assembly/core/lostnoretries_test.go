package core

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/objects"
	"github.com/ray-go/ray/tasks/sched"
)

// TestLostObjectOfTaskWithoutRetriesLeft: a task's retries bound the runs that recreate its
// lost results too, as Ray's max_retries does. Three tasks put their results in n2's
// store, and n2 dies:
//   - noRetry (MaxRetries 0: a task with side effects) is not run again: the Get fails at
//     once with an error that matches OBJECT_LOST (a cause) and says the task has no
//     retries left and what to do;
//   - retried (MaxRetries 1, whose first attempt failed and was retried) has used its
//     retry: the same;
//   - once (MaxRetries 1, first attempt fine) is run again (attempt 1) and read;
//   - argLost (MaxRetries 0), whose attempt failed on a lost argument before its function
//     ran, is run by the Get that finds its result lost: that uses no retry.
//
// Before, every lost result was recreated, MaxRetries or not (each run got one more retry
// than the task had): noRetry ran twice.
func TestLostObjectOfTaskWithoutRetriesLeft(t *testing.T) {
	sys, quiet := quietSystem(t)
	n2, n3 := make(chan *pb.TaskSpec, 8), make(chan *pb.TaskSpec, 8)
	fake2, fake3 := newFakeNode(sys, n2), newFakeNode(sys, n3)
	cl := &twoNodes{dead: map[ids.NodeID]bool{}, raylets: map[ids.NodeID]*actor.PID{"n2": fake2.raylet, "n3": fake3.raylet}}
	local := sys.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	c, err := New(Config{Job: "j", Node: "n1", System: sys, Cluster: cl,
		Raylet: func() *actor.PID { return local }, Store: func() *actor.PID { return local },
		Feasible: func(sched.Resources) error { return nil }, Lineage: &lineageMap{records: map[ids.TaskID]bool{}}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	tc := c.NewDriver()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, _ := sched.FromMap(map[string]float64{sched.CPU: 1})
	recv := func(ch chan *pb.TaskSpec, what string) *pb.TaskSpec {
		t.Helper()
		select {
		case s := <-ch:
			return s
		case <-ctx.Done():
			t.Fatalf("%s never reached its node", what)
		}
		return nil
	}
	type task struct {
		id ids.ObjectID
		e  *objects.Entry
	}
	submit := func(retries int32) task {
		t.Helper()
		id, e, err := c.Submit(tc, Call{Function: "core_test.f", Resources: res, MaxRetries: retries})
		if err != nil {
			t.Fatal(err)
		}
		return task{id, e}
	}
	stored := func(fake *fakeNode, s *pb.TaskSpec, node string) {
		c.root.Send(c.owner, &pb.TaskResult{TaskId: s.TaskId, Attempt: s.Attempt, InStore: true, NodeId: node, Size: 8 << 20,
			LeaseId: fake.lease(s.TaskId)})
	}

	noRetry := submit(0)
	stored(fake2, recv(n2, "noRetry"), "n2")
	retried := submit(1)
	s := recv(n2, "retried")
	c.root.Send(c.owner, &pb.TaskResult{TaskId: s.TaskId, Attempt: s.Attempt, LeaseId: fake2.lease(s.TaskId),
		Error: &pb.ErrorInfo{Kind: pb.ErrorInfo_SYSTEM, Function: s.Function, TaskId: s.TaskId, Message: "worker died"}})
	s = recv(n2, "retried's retry")
	if s.Attempt != 1 {
		t.Fatalf("retried's retry is attempt %d, want 1", s.Attempt)
	}
	stored(fake2, s, "n2")
	once := submit(1)
	stored(fake2, recv(n2, "once"), "n2")
	for _, x := range []task{noRetry, retried, once} {
		if _, err := tc.wait(ctx, x.id, x.e); err != nil {
			t.Fatalf("%s never became ready: %v", x.id, err)
		}
	}

	cl.kill("n2")
	for _, x := range []struct {
		task
		name, says string
	}{{noRetry, "noRetry", "it ran once, and its MaxRetries is 0"}, {retried, "retried", "it ran 2 times (retries and earlier reconstructions), and its MaxRetries is 1"}} {
		_, err := tc.GetIn(ctx, x.id, x.e)
		var oe *ObjectError
		if !errors.As(err, &oe) {
			t.Fatalf("Get of %s, lost with n2, with no retries left: %v, want an *ObjectError", x.name, err)
		}
		if oe.Info.Kind != pb.ErrorInfo_SYSTEM || !slices.Contains(oe.Info.Causes, pb.ErrorInfo_OBJECT_LOST) {
			t.Errorf("%s: kind %v causes %v, want SYSTEM with OBJECT_LOST among the causes", x.name, oe.Info.Kind, oe.Info.Causes)
		}
		for _, want := range []string{"object " + x.id.String() + " was lost with node n2", "may not run again", x.says, "MaxRetries(n)"} {
			if !strings.Contains(oe.Info.Message, want) {
				t.Errorf("%s: message %q does not say %q", x.name, oe.Info.Message, want)
			}
		}
	}
	if n := c.Stats().Reconstructed.Load(); n != 0 {
		t.Fatalf("%d reconstructions of tasks with no retries left, want 0", n)
	}

	// once has a retry left: its run to recreate the object is attempt 1, with the same
	// MaxRetries, on n3.
	got := make(chan error, 1)
	go func() {
		b, err := tc.GetIn(ctx, once.id, once.e)
		if err == nil && string(b) != "again" {
			err = errors.New("read " + string(b))
		}
		got <- err
	}()
	s = recv(n3, "once's rerun")
	if s.Attempt != 1 || s.MaxRetries != 1 {
		t.Fatalf("once's rerun is attempt %d of MaxRetries %d, want 1 of 1", s.Attempt, s.MaxRetries)
	}
	c.root.Send(c.owner, &pb.TaskResult{TaskId: s.TaskId, Attempt: s.Attempt, Data: []byte("again"), LeaseId: fake3.lease(s.TaskId)})
	if err := <-got; err != nil {
		t.Fatalf("Get of once, recreated: %v", err)
	}
	if n := c.Stats().Reconstructed.Load(); n != 1 {
		t.Fatalf("%d reconstructions, want 1", n)
	}

	// A MaxRetries(0) task whose attempt failed because an argument could not be read
	// (OBJECT_LOST) never ran its function: the Get that finds its result lost runs it,
	// which uses none of its retries (the run after its argument is recreated is its
	// first; Ray's task would have waited for the argument).
	argLost := submit(0)
	s = recv(n3, "argLost")
	c.root.Send(c.owner, &pb.TaskResult{TaskId: s.TaskId, Attempt: s.Attempt, LeaseId: fake3.lease(s.TaskId),
		Error: &pb.ErrorInfo{Kind: pb.ErrorInfo_OBJECT_LOST, Function: s.Function, TaskId: s.TaskId, Message: "argument 1: object lost"}})
	go func() {
		b, err := tc.GetIn(ctx, argLost.id, argLost.e)
		if err == nil && string(b) != "first run" {
			err = errors.New("read " + string(b))
		}
		got <- err
	}()
	s = recv(n3, "argLost's run")
	if s.Attempt != 1 || s.MaxRetries != 1 {
		t.Fatalf("argLost's run is attempt %d of MaxRetries %d, want 1 of 1 (no retry used)", s.Attempt, s.MaxRetries)
	}
	c.root.Send(c.owner, &pb.TaskResult{TaskId: s.TaskId, Attempt: s.Attempt, Data: []byte("first run"), LeaseId: fake3.lease(s.TaskId)})
	if err := <-got; err != nil {
		t.Fatalf("Get of a MaxRetries(0) task whose attempt failed on a lost argument: %v", err)
	}
}

// TestLostReturnsTakeOneRerun: both returns of a task (MaxRetries 1) are lost with n2. A
// Get of the first runs the task again, which makes both; the second, lost too, takes the
// run's new value rather than keep its lost one, so its Get reads it without another run.
// Before, it kept the lost value and the next Get ran the task once more (each lost
// return one run): with MaxRetries bounding reconstruction, that second run had no retry
// left and the Get failed (tst-lin's gen: a generator's fourth lost item).
func TestLostReturnsTakeOneRerun(t *testing.T) {
	sys, quiet := quietSystem(t)
	n2, n3 := make(chan *pb.TaskSpec, 8), make(chan *pb.TaskSpec, 8)
	fake2, fake3 := newFakeNode(sys, n2), newFakeNode(sys, n3)
	cl := &twoNodes{dead: map[ids.NodeID]bool{}, raylets: map[ids.NodeID]*actor.PID{"n2": fake2.raylet, "n3": fake3.raylet}}
	local := sys.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	c, err := New(Config{Job: "j", Node: "n1", System: sys, Cluster: cl,
		Raylet: func() *actor.PID { return local }, Store: func() *actor.PID { return local },
		Feasible: func(sched.Resources) error { return nil }, Lineage: &lineageMap{records: map[ids.TaskID]bool{}}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	tc := c.NewDriver()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, _ := sched.FromMap(map[string]float64{sched.CPU: 1})
	list, entries, err := c.SubmitReturns(tc, Call{Function: "core_test.f2", Resources: res, MaxRetries: 1, NumReturns: 2})
	if err != nil {
		t.Fatal(err)
	}
	recv := func(ch chan *pb.TaskSpec, what string) *pb.TaskSpec {
		t.Helper()
		select {
		case s := <-ch:
			return s
		case <-ctx.Done():
			t.Fatalf("%s never reached its node", what)
		}
		return nil
	}
	s := recv(n2, "the task")
	c.root.Send(c.owner, &pb.TaskResult{TaskId: s.TaskId, Attempt: s.Attempt, LeaseId: fake2.lease(s.TaskId), Returns: []*pb.ReturnValue{
		{InStore: true, NodeId: "n2", Size: 8 << 20}, {InStore: true, NodeId: "n2", Size: 8 << 20}}})
	for i, id := range list {
		if _, err := tc.wait(ctx, id, entries[i]); err != nil {
			t.Fatalf("return %d never became ready: %v", i+1, err)
		}
	}
	cl.kill("n2")
	got := make(chan error, 1)
	go func() {
		b, err := tc.GetIn(ctx, list[0], entries[0])
		if err == nil && string(b) != "one" {
			err = errors.New("read " + string(b))
		}
		got <- err
	}()
	s = recv(n3, "the rerun")
	c.root.Send(c.owner, &pb.TaskResult{TaskId: s.TaskId, Attempt: s.Attempt, LeaseId: fake3.lease(s.TaskId), Returns: returns("one", "two")})
	if err := <-got; err != nil {
		t.Fatalf("Get of the first return, recreated: %v", err)
	}
	if b, err := tc.GetIn(ctx, list[1], entries[1]); err != nil || string(b) != "two" {
		t.Fatalf("Get of the second return, lost too: %q, %v; want the rerun's value", b, err)
	}
	if n := c.Stats().Reconstructed.Load(); n != 1 {
		t.Fatalf("%d reconstructions, want 1", n)
	}
}
