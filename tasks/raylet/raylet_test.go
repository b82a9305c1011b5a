package raylet

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/ids"
	"github.com/ray-go/ray/internal/pb"
	"github.com/ray-go/ray/tasks"
	"github.com/ray-go/ray/tasks/sched"
)

// harness runs a raylet in a plain actor system, with probe actors standing in for its
// workers and for the tasks' owner.
type harness struct {
	t       *testing.T
	sys     *actor.ActorSystem
	raylet  *actor.PID
	owner   *actor.PID
	leases  chan leaseAt
	results chan *pb.TaskResult
	cancels chan *pb.CancelTask
	root    ids.TaskID
	n       uint64
}

type leaseAt struct {
	worker int
	lease  *pb.Lease
}

func newHarness(t *testing.T, total map[string]float64, workers int) *harness {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := &harness{t: t, sys: actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet })), leases: make(chan leaseAt, 1024),
		results: make(chan *pb.TaskResult, 1024), cancels: make(chan *pb.CancelTask, 16), root: ids.NewRootTaskID()}
	t.Cleanup(h.sys.Shutdown)
	pids := make([]*actor.PID, workers)
	for i := range pids {
		i := i
		pids[i] = h.sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
			switch m := c.Message().(type) {
			case *pb.LeaseBatch:
				for _, l := range m.Leases {
					h.leases <- leaseAt{i, l}
				}
			case *pb.CancelTask:
				h.cancels <- m
			}
		}))
	}
	h.owner = h.sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if r, ok := c.Message().(*pb.TaskResult); ok {
			h.results <- r
		}
	}))
	res, err := sched.FromMap(total)
	if err != nil {
		t.Fatal(err)
	}
	h.raylet = h.sys.Root.Spawn(Props(Config{Node: "n1", Total: res, Workers: workers, Worker: func(i int) *actor.PID { return pids[i] }}))
	return h
}

func (h *harness) spec(res map[string]float64) *pb.TaskSpec {
	h.n++
	tid := ids.ChildTaskID(h.root, h.n)
	r, err := sched.FromMap(res)
	if err != nil {
		h.t.Fatal(err)
	}
	return &pb.TaskSpec{TaskId: tid[:], Function: "f", Resources: tasks.ResourcesToPB(r), Owner: &pb.PID{Address: h.owner.Address, Id: h.owner.Id}}
}

func (h *harness) send(msgs ...any) {
	for _, m := range msgs {
		h.sys.Root.Send(h.raylet, m)
	}
}

// nextLeases collects exactly n leases, failing after a bounded wait.
func (h *harness) nextLeases(n int) []leaseAt {
	h.t.Helper()
	var out []leaseAt
	for len(out) < n {
		select {
		case l := <-h.leases:
			out = append(out, l)
		case <-time.After(5 * time.Second):
			h.t.Fatalf("got %d leases, want %d", len(out), n)
		}
	}
	return out
}

// noLease checks that nothing more is dispatched (after a Stats round trip, so the raylet
// has handled everything sent before).
func (h *harness) noLease() {
	h.t.Helper()
	h.stats()
	select {
	case l := <-h.leases:
		h.t.Fatalf("unexpected lease of %d tasks", len(l.lease.Tasks))
	case <-time.After(20 * time.Millisecond):
	}
}

func (h *harness) stats() *StatsReply {
	h.t.Helper()
	res, err := h.sys.Root.RequestFuture(h.raylet, Stats{}, 5*time.Second).Result()
	if err != nil {
		h.t.Fatal(err)
	}
	return res.(*StatsReply)
}

func (h *harness) result() *pb.TaskResult {
	h.t.Helper()
	select {
	case r := <-h.results:
		return r
	case <-time.After(5 * time.Second):
		h.t.Fatal("no result")
		return nil
	}
}

func done(l *pb.Lease, tasks int32, per time.Duration) *pb.LeaseDone {
	return &pb.LeaseDone{LeaseId: l.LeaseId, TasksRun: tasks, RunNanos: int64(tasks) * int64(per)}
}

var cpu1 = map[string]float64{sched.CPU: 1}

func TestQueueAndRelease(t *testing.T) {
	h := newHarness(t, map[string]float64{sched.CPU: 2}, 2)
	a, b, c := h.spec(cpu1), h.spec(cpu1), h.spec(cpu1)
	h.send(a, b, c, a) // a again: a duplicate is ignored
	got := h.nextLeases(2)
	h.noLease()
	if st := h.stats(); st.Queued != 1 || st.Leases != 2 || st.Available.Get(sched.CPU) != 0 {
		t.Fatalf("stats %+v", st)
	}
	if got[0].worker == got[1].worker {
		t.Errorf("both leases went to worker %d; want them spread", got[0].worker)
	}
	h.send(done(got[0].lease, 1, time.Second))
	third := h.nextLeases(1)[0]
	if string(third.lease.LeaseId) != string(c.TaskId) {
		t.Fatalf("dispatched %x, want the queued task", third.lease.LeaseId)
	}
	h.send(done(got[1].lease, 1, time.Second), done(third.lease, 1, time.Second))
	if st := h.stats(); st.Available.Get(sched.CPU) != 2*sched.Unit || st.Leases != 0 {
		t.Fatalf("after all leases: %+v", st)
	}
}

func TestInfeasibleAnsweredAtOnce(t *testing.T) {
	h := newHarness(t, map[string]float64{sched.CPU: 2, "accel": 1}, 1)
	tests := []map[string]float64{{sched.GPU: 1}, {sched.CPU: 3}, {"accel": 2}, {"tpu": 1}}
	for _, res := range tests {
		h.send(h.spec(res))
		r := h.result()
		if r.Error == nil || r.Error.Kind != pb.ErrorInfo_INFEASIBLE {
			t.Errorf("%v: result %v, want INFEASIBLE", res, r.Error)
		}
	}
	h.noLease()
}

func TestShortTasksShareLeases(t *testing.T) {
	tests := []struct {
		name     string
		runTime  time.Duration
		wantDeep bool
	}{
		{"fast class pipelines", 10 * time.Microsecond, true},
		{"slow class gets a task per lease", 10 * time.Millisecond, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, map[string]float64{sched.CPU: 2}, 2)
			// Teach the raylet this class's run time.
			h.send(h.spec(cpu1))
			first := h.nextLeases(1)[0]
			h.send(done(first.lease, 1, tc.runTime))
			h.stats()
			// One batch, so that all 40 wait before the raylet dispatches (sent one by one,
			// a slow machine lets it dispatch after each).
			batch := &pb.TaskBatch{}
			for i := 0; i < 40; i++ {
				batch.Tasks = append(batch.Tasks, h.spec(cpu1))
			}
			h.send(batch)
			got := h.nextLeases(2)
			n := len(got[0].lease.Tasks) + len(got[1].lease.Tasks)
			if deep := n > 2; deep != tc.wantDeep {
				t.Fatalf("2 leases carry %d tasks; want pipelining=%v", n, tc.wantDeep)
			}
			if tc.wantDeep && (len(got[0].lease.Tasks) > MaxLeaseDepth || len(got[1].lease.Tasks) > MaxLeaseDepth) {
				t.Fatalf("lease deeper than %d", MaxLeaseDepth)
			}
			if st := h.stats(); st.Queued != 40-n || st.Leased != n {
				t.Fatalf("queued %d leased %d, want %d and %d", st.Queued, st.Leased, 40-n, n)
			}
		})
	}
}

func TestBlockedLeaseLendsItsCPU(t *testing.T) {
	h := newHarness(t, cpu1, 1)
	parent, child := h.spec(cpu1), h.spec(cpu1)
	h.send(parent, child)
	pl := h.nextLeases(1)[0].lease
	h.noLease() // child waits for the only CPU
	h.send(&pb.TaskBlocked{TaskId: parent.TaskId, LeaseId: pl.LeaseId})
	cl := h.nextLeases(1)[0].lease // the lent CPU runs the child
	if string(cl.LeaseId) != string(child.TaskId) {
		t.Fatal("the child did not get the lent CPU")
	}
	h.send(done(cl, 1, time.Millisecond))
	h.send(&pb.TaskUnblocked{TaskId: parent.TaskId, LeaseId: pl.LeaseId})
	if st := h.stats(); st.Available.Get(sched.CPU) != 0 {
		t.Fatalf("after unblock: available %v, want CPU=0", st.Available)
	}
	// Oversubscription: unblocking while the child still runs takes the CPU anyway.
	other := h.spec(cpu1)
	h.send(&pb.TaskBlocked{TaskId: parent.TaskId, LeaseId: pl.LeaseId}, other)
	ol := h.nextLeases(1)[0].lease
	h.send(&pb.TaskUnblocked{TaskId: parent.TaskId, LeaseId: pl.LeaseId})
	if st := h.stats(); st.Available.Get(sched.CPU) != -sched.Unit {
		t.Fatalf("oversubscribed: available %v, want CPU=-1", st.Available)
	}
	h.send(done(ol, 1, time.Millisecond), done(pl, 1, time.Millisecond))
	if st := h.stats(); st.Available.Get(sched.CPU) != sched.Unit {
		t.Fatalf("at rest: available %v, want CPU=1", st.Available)
	}
}

func TestLeaseReturnRequeues(t *testing.T) {
	h := newHarness(t, cpu1, 1)
	h.send(h.spec(cpu1))
	first := h.nextLeases(1)[0].lease
	h.send(done(first, 1, time.Microsecond)) // a fast class
	for i := 0; i < 5; i++ {
		h.send(h.spec(cpu1))
	}
	l := h.nextLeases(1)[0].lease
	if len(l.Tasks) < 2 {
		t.Fatalf("lease of %d tasks, want pipelining", len(l.Tasks))
	}
	// Its first task blocks: the worker gives the rest back; they run on the lent CPU.
	h.send(&pb.LeaseReturn{LeaseId: l.LeaseId, Tasks: l.Tasks[1:]}, &pb.TaskBlocked{TaskId: l.Tasks[0].TaskId, LeaseId: l.LeaseId})
	again := h.nextLeases(1)[0].lease
	seen := map[string]bool{string(l.Tasks[0].TaskId): true}
	for _, s := range again.Tasks {
		seen[string(s.TaskId)] = true
	}
	if len(seen) != 5 {
		t.Fatalf("after the return, %d of 5 tasks were dispatched (the lent CPU's lease carries %d)", len(seen), len(again.Tasks))
	}
}

func TestCancel(t *testing.T) {
	h := newHarness(t, cpu1, 1)
	running, queued := h.spec(cpu1), h.spec(cpu1)
	h.send(running, queued)
	h.nextLeases(1)
	h.send(&pb.CancelTask{TaskId: queued.TaskId})
	if r := h.result(); r.Error == nil || r.Error.Kind != pb.ErrorInfo_CANCELLED || string(r.TaskId) != string(queued.TaskId) {
		t.Fatalf("cancelling a queued task: %v", r)
	}
	h.send(&pb.CancelTask{TaskId: running.TaskId})
	select {
	case c := <-h.cancels:
		if string(c.TaskId) != string(running.TaskId) {
			t.Fatal("the wrong task's cancellation reached the worker")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cancelling a leased task did not reach its worker")
	}
	if st := h.stats(); st.Queued != 0 {
		t.Fatalf("queued %d after cancel", st.Queued)
	}
}

// TestReservations: an actor's resources are held from grant to release, granted ahead of
// queued tasks as soon as they are free, and requests are idempotent by key.
func TestReservations(t *testing.T) {
	h := newHarness(t, map[string]float64{"CPU": 2}, 2)
	cpu := func(n float64) []*pb.ResourceQty {
		r, _ := sched.FromMap(map[string]float64{"CPU": n})
		return tasks.ResourcesToPB(r)
	}
	ask := func(key string, n float64) (*pb.ReserveResourcesReply, error) {
		res, err := h.sys.Root.RequestFuture(h.raylet, &pb.ReserveResources{Key: key, Resources: cpu(n)}, 200*time.Millisecond).Result()
		if err != nil {
			return nil, err
		}
		return res.(*pb.ReserveResourcesReply), nil
	}
	if r, err := ask("a/1", 1); err != nil || r.Key != "a/1" {
		t.Fatalf("first reservation: %v, %v", r, err)
	}
	if _, err := ask("a/1", 1); err != nil { // a retry of a granted request
		t.Fatalf("repeated reservation: %v", err)
	}
	if got := h.stats().Available.Get(sched.CPU).Float(); got != 1 {
		t.Fatalf("available CPU after one reservation of 1 (asked twice): %v, want 1", got)
	}
	// A task needing 2 CPUs waits while the actor holds one.
	h.send(h.spec(map[string]float64{"CPU": 2}))
	h.noLease()
	// A second actor wanting 2 CPUs waits too (no grant within the request's timeout).
	if _, err := ask("a/2", 2); err == nil {
		t.Fatal("a reservation larger than what is free was granted")
	}
	// Releasing the first frees the CPU: the waiting reservation (ahead of the task) is
	// granted, the task still waits.
	h.send(&pb.ReserveResources{Key: "a/1", Release: true})
	time.Sleep(50 * time.Millisecond)
	if got := h.stats().Available.Get(sched.CPU).Float(); got != 0 {
		t.Fatalf("available CPU after the second reservation was granted: %v, want 0", got)
	}
	h.noLease()
	h.send(&pb.ReserveResources{Key: "a/2", Release: true})
	if l := h.nextLeases(1); len(l) != 1 {
		t.Fatalf("task not leased after every reservation was released")
	}
}
