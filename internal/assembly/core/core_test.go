package core

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"
	"weak"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/dispatch"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	storeshard "github.com/ray-go/ray/objects/shard"
	"github.com/ray-go/ray/tasks"
	"github.com/ray-go/ray/tasks/sched"
)

func init() {
	if err := tasks.Register(&tasks.Function{Name: "core_test.f", Call: func(context.Context, [][]byte) ([]byte, error) { return nil, nil }}); err != nil {
		panic(err)
	}
}

type lineageMap struct {
	mu      sync.Mutex
	records map[ids.TaskID]bool
	dropped []ids.TaskID
}

func (l *lineageMap) Record(s *pb.TaskSpec) error {
	id, _ := ids.TaskIDFromBytes(s.TaskId)
	l.mu.Lock()
	l.records[id] = true
	l.mu.Unlock()
	return nil
}

func (l *lineageMap) Drop(t ids.TaskID) {
	l.mu.Lock()
	delete(l.records, t)
	l.dropped = append(l.dropped, t)
	l.mu.Unlock()
}

func (l *lineageMap) has(t ids.TaskID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.records[t]
}

// harness: a Core with a probe scheduler (it grants every lease request on a probe
// worker, which hands the specs pushed to it to the test) and a real store shard.
type harness struct {
	t     *testing.T
	c     *Core
	tc    *TaskContext
	specs chan *pb.TaskSpec
	lin   *lineageMap
	fake  *fakeNode
}

// fakeNode is a scheduler that grants every lease request at once, on a worker that
// records what is pushed to it (specs) and under which lease (leaseOf, for replies).
type fakeNode struct {
	raylet, worker *actor.PID
	mu             sync.Mutex
	leaseOf        map[string][]byte
	grants         int
	// pushes: how many LeasePush messages came; bigPush: the largest estimated size
	// (pb.SpecBytes) of one with more than one task.
	pushes, bigPush int
}

func newFakeNode(sys *actor.ActorSystem, specs chan<- *pb.TaskSpec) *fakeNode {
	f := &fakeNode{leaseOf: map[string][]byte{}}
	f.worker = sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if m, ok := c.Message().(*pb.LeasePush); ok {
			f.mu.Lock()
			f.pushes++
			if n := specsBytes(m.Tasks); len(m.Tasks) > 1 && n > f.bigPush {
				f.bigPush = n
			}
			f.mu.Unlock()
			for _, s := range m.Tasks {
				f.mu.Lock()
				f.leaseOf[string(s.TaskId)] = m.LeaseId
				f.mu.Unlock()
				specs <- s
			}
		}
	}))
	f.raylet = sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if m, ok := c.Message().(*pb.LeaseRequest); ok {
			f.mu.Lock()
			f.grants++
			id := []byte(fmt.Sprintf("lease-%04d", f.grants))
			f.mu.Unlock()
			c.Send(actor.NewPID(m.Owner.Address, m.Owner.Id), &pb.LeaseGrant{RequestId: m.RequestId, LeaseId: id,
				Worker: &pb.PID{Address: f.worker.Address, Id: f.worker.Id}})
		}
	}))
	return f
}

// lease is the lease the task ran under.
func (f *fakeNode) lease(task []byte) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.leaseOf[string(task)]
}

// quietSystem returns an actor system that logs nothing, shut down with the test, and the
// logger that drops everything.
func quietSystem(t *testing.T) (*actor.ActorSystem, *slog.Logger) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	t.Cleanup(sys.Shutdown)
	return sys, quiet
}

// newTestCore returns a Core of node n1 in cluster cl (its messages counted by counter,
// nil: not counted) whose own raylet and store are an actor that ignores everything.
func newTestCore(t *testing.T, sys *actor.ActorSystem, cl Cluster, counter *dispatch.Counter, quiet *slog.Logger) *Core {
	t.Helper()
	local := sys.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	c, err := New(Config{Job: "j", Node: "n1", System: sys, Cluster: cl, Messages: counter,
		Raylet: func() *actor.PID { return local }, Store: func() *actor.PID { return local },
		Feasible: func(sched.Resources) error { return nil }, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessStore(t, nil)
}

// newHarnessStore is newHarness whose runtime's store is what wrap returns for the real
// store shard (nil: the shard).
func newHarnessStore(t *testing.T, wrap func(sys *actor.ActorSystem, store *actor.PID) *actor.PID) *harness {
	t.Helper()
	sys, quiet := quietSystem(t)
	h := &harness{t: t, specs: make(chan *pb.TaskSpec, 64), lin: &lineageMap{records: map[ids.TaskID]bool{}}}
	h.fake = newFakeNode(sys, h.specs)
	raylet := h.fake.raylet
	store := sys.Root.Spawn(storeshard.Props(storeshard.Config{Node: "n1", Logger: quiet}))
	if wrap != nil {
		store = wrap(sys, store)
	}
	total, _ := sched.FromMap(map[string]float64{sched.CPU: 2})
	c, err := New(Config{Job: "j", Node: "n1", System: sys,
		Raylet: func() *actor.PID { return raylet }, Store: func() *actor.PID { return store },
		Feasible: func(r sched.Resources) error {
			if total.Fits(r) {
				return nil
			}
			return sched.ErrInfeasible
		},
		Lineage: h.lin, StoreBytes: 8 << 20, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	h.c, h.tc = c, c.NewDriver()
	return h
}

func (h *harness) submit(args ...Arg) ids.ObjectID {
	h.t.Helper()
	res, _ := sched.FromMap(map[string]float64{sched.CPU: 1})
	id, _, err := h.c.Submit(h.tc, Call{Function: "core_test.f", Args: args, Resources: res, MaxRetries: 2, RetryExceptions: true})
	if err != nil {
		h.t.Fatal(err)
	}
	return id
}

func (h *harness) spec() *pb.TaskSpec {
	h.t.Helper()
	select {
	case s := <-h.specs:
		return s
	case <-time.After(5 * time.Second):
		h.t.Fatal("no task reached the raylet")
		return nil
	}
}

func (h *harness) noSpec() {
	h.t.Helper()
	select {
	case s := <-h.specs:
		h.t.Fatalf("unexpected dispatch of %x", s.TaskId)
	case <-time.After(30 * time.Millisecond):
	}
}

// reply delivers a result to the owner actor, as a worker would (under the task's lease).
func (h *harness) reply(r *pb.TaskResult) {
	r.LeaseId = h.fake.lease(r.TaskId)
	h.c.root.Send(h.c.owner, r)
}

func (h *harness) get(id ids.ObjectID) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return h.tc.Get(ctx, id)
}

func TestDependenciesAreResolvedBeforeDispatch(t *testing.T) {
	h := newHarness(t)
	a := h.submit(Arg{Data: []byte("x")})
	sa := h.spec()
	b := h.submit(Arg{Ref: a, IsRef: true})
	h.noSpec() // b waits for a
	h.reply(&pb.TaskResult{TaskId: sa.TaskId, Data: []byte("small")})
	sb := h.spec()
	if arg := sb.Args[0]; !arg.IsRef || string(arg.Data) != "small" {
		t.Fatalf("b's argument: %+v, want a's value inlined", arg)
	}
	h.reply(&pb.TaskResult{TaskId: sb.TaskId, Data: []byte("done")})
	if v, err := h.get(b); err != nil || string(v) != "done" {
		t.Fatalf("Get(b) = %q, %v", v, err)
	}
}

// TestLargeArgumentGoesThroughTheStore: a by-value argument over the inline limit is put
// into the object store and passed by reference (as Ray does over 100 KiB), so the spec,
// which is the task's lineage record, stays small; the object lives while the task or its
// lineage needs it and is freed with them.
func TestLargeArgumentGoesThroughTheStore(t *testing.T) {
	h := newHarness(t)
	big := bytes.Repeat([]byte("b"), 300<<10)
	id := h.submit(Arg{Data: []byte("small")}, Arg{Data: big})
	s := h.spec()
	if a := s.Args[0]; a.IsRef || string(a.Data) != "small" {
		t.Fatalf("small argument: %+v, want it inline", a)
	}
	a := s.Args[1]
	if !a.IsRef || a.Size != int64(len(big)) || len(a.Data) != 0 {
		t.Fatalf("large argument: ref %v, size %d, %d bytes inline; want a reference to a %d-byte object", a.IsRef, a.Size, len(a.Data), len(big))
	}
	if n := proto.Size(h.c.refs.Spec(id.Task())); n > 4<<10 {
		t.Fatalf("lineage record of %d bytes, want it small", n)
	}
	arg, err := ids.ObjectIDFromBytes(a.ObjectId)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := h.get(arg); err != nil || !bytes.Equal(b, big) {
		t.Fatalf("the argument's object: %d bytes, %v", len(b), err)
	}
	h.reply(&pb.TaskResult{TaskId: s.TaskId, Data: []byte("ok")})
	if v, err := h.get(id); err != nil || string(v) != "ok" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if _, _, known := h.c.mem.Get(arg); !known {
		t.Fatal("the argument was freed while the task's lineage record still needs it")
	}
	// The result is ready (Set) before the shard drops the task's own hold on its
	// arguments (Completed), so a release right after Get may come first; the argument
	// goes at the later of the two.
	h.c.ReleaseRef(id, true)
	if !within(5*time.Second, func() bool { _, _, known := h.c.mem.Get(arg); return !known }) {
		t.Fatal("the argument outlived the task's lineage record")
	}
	if !within(5*time.Second, func() bool { n, l := h.c.refs.Len(); return n == 0 && l == 0 }) {
		n, l := h.c.refs.Len()
		t.Fatalf("%d objects and %d lineage records left", n, l)
	}
}

// within polls cond until it holds (true) or d has passed (false).
func within(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); ; time.Sleep(time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// TestPushesAreBoundedInBytes: tasks whose specs carry ~400 KiB of inline arguments each
// reach their worker in pushes of at most pb.BatchBytes (or of one task), however many
// the lease takes at once: a gRPC message over the limit would be dropped with its whole
// batch. Arguments together over pb.InlineArgsTotal go through the store.
func TestPushesAreBoundedInBytes(t *testing.T) {
	h := newHarness(t)
	const n = 40
	arg := func(i int) Arg { return Arg{Data: bytes.Repeat([]byte{byte(i)}, 99<<10)} }
	// Short tasks of this class make its leases take many at once (sched.Leases' depth).
	for range 4 {
		id := h.submit()
		s := h.spec()
		h.reply(&pb.TaskResult{TaskId: s.TaskId, Data: []byte("v"), RunNanos: 1000})
		if _, err := h.get(id); err != nil { // the shard counted the result before it set it
			t.Fatal(err)
		}
	}
	h.fake.mu.Lock()
	h.fake.pushes = 0
	h.fake.mu.Unlock()
	for range n {
		h.submit(arg(1), arg(2), arg(3), arg(4))
	}
	inline := 0
	for range n {
		s := h.spec()
		for _, a := range s.Args {
			if a.IsRef {
				t.Fatalf("an argument under the limits went through the store")
			}
			inline += len(a.Data)
		}
	}
	if inline != n*4*(99<<10) {
		t.Fatalf("%d bytes inline, want %d", inline, n*4*(99<<10))
	}
	h.fake.mu.Lock()
	pushes, big := h.fake.pushes, h.fake.bigPush
	h.fake.mu.Unlock()
	if big > pb.BatchBytes {
		t.Fatalf("a push of %d bytes (max %d)", big, pb.BatchBytes)
	}
	if pushes < n*400/1024 {
		t.Fatalf("%d pushes for %d tasks of ~400 KiB: want at most 2 tasks a push", pushes, n)
	}
	t.Logf("%d pushes for %d tasks", pushes, n)
	// Over the per-call total: the largest arguments move to the store until it fits.
	h.submit(arg(1), Arg{Data: bytes.Repeat([]byte{5}, 90<<10)}, arg(3), arg(4), arg(5), arg(6))
	s := h.spec()
	total, refs := 0, 0
	for _, a := range s.Args {
		if a.IsRef {
			refs++
		} else {
			total += len(a.Data)
		}
	}
	if total > pb.InlineArgsTotal || refs != 1 || s.Args[1].IsRef {
		t.Fatalf("%d bytes inline and %d refs (argument 2 by ref: %v); want <= %d inline, one 99 KiB argument stored", total, refs, s.Args[1].IsRef, pb.InlineArgsTotal)
	}
}

// TestInMemoryRefArgumentsStayWithinTheInlineTotal: the values of small objects this
// process holds in memory (Puts under the inline limit, small results) go into a task's
// spec only while its inline bytes stay within pb.InlineArgsTotal, as by-value arguments
// do; the others move to the store and go by reference. The task gets every byte, and
// the store's copies go when the objects do.
func TestInMemoryRefArgumentsStayWithinTheInlineTotal(t *testing.T) {
	h := newHarness(t)
	const n, size = 20, 60 << 10
	var args []Arg
	var puts []ids.ObjectID
	want := map[int][]byte{}
	for i := range n {
		b := bytes.Repeat([]byte{byte(i + 1)}, size)
		id, err := h.tc.Put(b)
		if err != nil {
			t.Fatal(err)
		}
		if v, _, _ := h.c.mem.Get(id); v.InStore {
			t.Fatalf("a %d-byte Put went to the store; the test needs it in memory", size)
		}
		puts = append(puts, id)
		args = append(args, Arg{Ref: id, IsRef: true})
		want[len(args)-1] = b
	}
	// A by-value argument too: it counts toward the same total.
	args = append(args, Arg{Data: bytes.Repeat([]byte("v"), 90<<10)})
	want[len(args)-1] = args[len(args)-1].Data
	ret := h.submit(args...)
	s := h.spec()
	inline, byRef := 0, 0
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i, a := range s.Args {
		inline += len(a.Data)
		got := a.Data
		if a.IsRef && a.Data == nil {
			byRef++
			if a.NodeId != "n1" || a.Size != size {
				t.Fatalf("argument %d by reference at node %q, size %d; want node n1, size %d", i+1, a.NodeId, a.Size, size)
			}
			var err error
			if got, err = h.c.FetchArg(ctx, a); err != nil { // what the executor does
				t.Fatalf("argument %d: %v", i+1, err)
			}
		}
		if !bytes.Equal(got, want[i]) {
			t.Fatalf("argument %d: %d bytes, not the %d bytes passed", i+1, len(got), len(want[i]))
		}
	}
	if inline > pb.InlineArgsTotal || byRef == 0 {
		t.Fatalf("%d bytes inline, %d arguments by reference; want at most %d inline", inline, byRef, pb.InlineArgsTotal)
	}
	if sz := proto.Size(s); sz > pb.InlineArgsTotal+4<<10 {
		t.Fatalf("a spec of %d bytes reached the worker", sz)
	}
	t.Logf("%d bytes inline, %d of %d arguments by reference", inline, byRef, len(s.Args))
	// A Get of a moved object reads it from the store.
	if b, err := h.get(puts[n-1]); err != nil || !bytes.Equal(b, want[n-1]) {
		t.Fatalf("Get of the last Put: %d bytes, %v", len(b), err)
	}
	h.reply(&pb.TaskResult{TaskId: s.TaskId, Data: []byte("ok")})
	if v, err := h.get(ret); err != nil || string(v) != "ok" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	h.c.ReleaseRef(ret, true)
	for _, id := range puts {
		h.c.ReleaseOwned(id, nil, true)
	}
	objects := func() int64 {
		r, err := h.c.root.RequestFuture(h.c.cfg.Store(), &pb.StoreStats{}, 5*time.Second).Result()
		if err != nil {
			t.Fatal(err)
		}
		return r.(*pb.StoreStatsReply).Objects
	}
	if !within(5*time.Second, func() bool { return objects() == 0 }) {
		t.Fatalf("%d objects left in the store after every reference went", objects())
	}
}

func TestFailedDependencyFailsWithoutDispatch(t *testing.T) {
	h := newHarness(t)
	a := h.submit()
	sa := h.spec()
	b := h.submit(Arg{Ref: a, IsRef: true})
	h.reply(&pb.TaskResult{TaskId: sa.TaskId, Attempt: 2, Error: &pb.ErrorInfo{Kind: pb.ErrorInfo_SYSTEM, Function: "core_test.f", Message: "stale"}}) // wrong attempt: ignored
	h.reply(&pb.TaskResult{TaskId: sa.TaskId, Error: &pb.ErrorInfo{Kind: pb.ErrorInfo_UNKNOWN_FUNCTION, Function: "core_test.f", Message: "root"}})
	h.noSpec()
	_, err := h.get(b)
	var oe *ObjectError
	if !errors.As(err, &oe) || oe.Info.Message != "root" {
		t.Fatalf("Get(b): %v, want a's error", err)
	}
}

func TestRetriesAndIdempotentResults(t *testing.T) {
	h := newHarness(t)
	a := h.submit()
	s0 := h.spec()
	h.reply(&pb.TaskResult{TaskId: s0.TaskId, Error: &pb.ErrorInfo{Kind: pb.ErrorInfo_APPLICATION, Message: "flaky"}})
	s1 := h.spec()
	if s1.Attempt != 1 {
		t.Fatalf("retry attempt %d, want 1", s1.Attempt)
	}
	h.reply(&pb.TaskResult{TaskId: s0.TaskId, Attempt: 0, Data: []byte("late")}) // the old attempt: ignored
	h.reply(&pb.TaskResult{TaskId: s1.TaskId, Attempt: 1, Data: []byte("ok")})
	h.reply(&pb.TaskResult{TaskId: s1.TaskId, Attempt: 1, Data: []byte("again")}) // a duplicate: ignored
	if v, err := h.get(a); err != nil || string(v) != "ok" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if n := h.c.Stats().Retried.Load(); n != 1 {
		t.Fatalf("%d retries, want 1", n)
	}
}

func TestSubmissionErrors(t *testing.T) {
	h := newHarness(t)
	unknown, _, err := h.c.Submit(h.tc, Call{Function: "core_test.nope"})
	var se *SubmitError
	if !errors.As(err, &se) || se.Info.Kind != pb.ErrorInfo_UNKNOWN_FUNCTION {
		t.Fatalf("unknown function: %v", err)
	}
	big, _ := sched.FromMap(map[string]float64{sched.CPU: 3})
	infeasible, _, err := h.c.Submit(h.tc, Call{Function: "core_test.f", Resources: big})
	if !errors.Is(err, sched.ErrInfeasible) {
		t.Fatalf("infeasible: %v", err)
	}
	gone := ids.PutID(ids.NewRootTaskID(), 1)
	lost, _, err := h.c.Submit(h.tc, Call{Function: "core_test.f", Args: []Arg{{Ref: gone, IsRef: true}}})
	if !errors.Is(err, ErrUnknownObject) {
		t.Fatalf("unknown argument: %v", err)
	}
	h.noSpec()
	for _, id := range []ids.ObjectID{unknown, infeasible, lost} {
		if _, err := h.get(id); err == nil {
			t.Errorf("Get of a failed submission %s succeeded", id)
		}
	}
}

func TestLifetimes(t *testing.T) {
	h := newHarness(t)
	a := h.submit()
	sa := h.spec()
	ta, _ := ids.TaskIDFromBytes(sa.TaskId)
	if err := h.c.FlushLineage(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !h.lin.has(ta) {
		t.Fatal("no lineage record in the GCS for a task that lives")
	}
	// The caller drops its ref while the task runs: the late result is freed at once.
	h.c.ReleaseRef(a, true)
	h.reply(&pb.TaskResult{TaskId: sa.TaskId, Data: []byte("v")})
	deadline := time.Now().Add(5 * time.Second)
	for h.c.Objects().Len() != 0 || h.lin.has(ta) {
		if time.Now().After(deadline) {
			t.Fatalf("after release: %d objects held, lineage kept %v", h.c.Objects().Len(), h.lin.has(ta))
		}
		time.Sleep(time.Millisecond)
	}
	// The usual order: the result arrives while its ref lives (a task without ref
	// arguments takes the fast path, which skips the reference table), is read, and is
	// freed with its lineage when the ref is dropped.
	b := h.submit()
	sb := h.spec()
	tb, _ := ids.TaskIDFromBytes(sb.TaskId)
	h.reply(&pb.TaskResult{TaskId: sb.TaskId, Data: []byte("w")})
	if v, err := h.get(b); err != nil || string(v) != "w" {
		t.Fatalf("Get of a finished task: %q, %v", v, err)
	}
	h.c.ReleaseRef(b, true)
	if n := h.c.Objects().Len(); n != 0 || h.lin.has(tb) {
		t.Fatalf("after release of a finished result: %d objects held, lineage kept %v", n, h.lin.has(tb))
	}
	// A large Put lives in the store, is read back, and is freed from it.
	data := make([]byte, 1<<20)
	data[12345] = 7
	p, err := h.tc.Put(data)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := h.get(p); err != nil || len(v) != len(data) || v[12345] != 7 {
		t.Fatalf("large Put read back: %d bytes, %v", len(v), err)
	}
	h.c.ReleaseRef(p, true)
	if _, err := h.get(p); !errors.Is(err, ErrUnknownObject) {
		t.Fatalf("Get after release: %v", err)
	}
	if _, err := h.tc.Put(make([]byte, 9<<20)); !errors.Is(err, ErrObjectTooLarge) {
		t.Fatalf("Put over the store budget: %v", err)
	}
}

// TestShortLivedTaskLeavesNoLineage: a task whose record is gone before the shard writes
// it (recordDelay) never reaches the GCS, and neither its write nor its delete is done; a
// task whose record outlives the delay is written, and deleted when it goes.
func TestShortLivedTaskLeavesNoLineage(t *testing.T) {
	h := newHarness(t)
	short := h.submit()
	ss := h.spec()
	h.reply(&pb.TaskResult{TaskId: ss.TaskId, Data: []byte("v")})
	if _, err := h.get(short); err != nil {
		t.Fatal(err)
	}
	h.c.ReleaseRef(short, true)
	long := h.submit()
	sl := h.spec()
	ts, _ := ids.TaskIDFromBytes(ss.TaskId)
	tl, _ := ids.TaskIDFromBytes(sl.TaskId)
	var shortRecorded, longRecorded bool
	var dropped int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		h.lin.mu.Lock()
		shortRecorded, longRecorded, dropped = h.lin.records[ts], h.lin.records[tl], len(h.lin.dropped)
		h.lin.mu.Unlock()
		if longRecorded {
			break
		}
	}
	if shortRecorded || dropped != 0 || !longRecorded {
		t.Fatalf("short-lived record written %v, long-lived written %v, %d deletes; want false, true, 0", shortRecorded, longRecorded, dropped)
	}
	h.reply(&pb.TaskResult{TaskId: sl.TaskId, Data: []byte("w")})
	if _, err := h.get(long); err != nil {
		t.Fatal(err)
	}
	h.c.ReleaseRef(long, true)
	if h.lin.has(tl) {
		t.Fatal("the long-lived record was not deleted with its object")
	}
}

// TestLineageWaitsAFullDelay: a record is written at the second tick of its shard's
// timer after its task was noted, not the first (which may come at once), so a task that
// lives less than a whole recordDelay never reaches the GCS; one that lives on is written.
func TestLineageWaitsAFullDelay(t *testing.T) {
	h := newHarness(t)
	h.c.recordDelay = time.Hour // no tick but this test's
	tick := func(id ids.ObjectID) {
		done := make(chan struct{})
		h.c.shardOf(id.Task()).send(recordLineage{done: done})
		<-done
	}
	recorded := func(id ids.ObjectID) bool {
		h.lin.mu.Lock()
		defer h.lin.mu.Unlock()
		return h.lin.records[id.Task()]
	}
	a := h.submit()
	sa := h.spec()
	tick(a)
	if recorded(a) {
		t.Fatal("a task noted just before a tick was written at that tick")
	}
	tick(a)
	if !recorded(a) {
		t.Fatal("a task alive through two ticks was not written")
	}
	b := h.submit()
	sb := h.spec()
	tick(b) // b just submitted: waits in the older generation
	h.reply(&pb.TaskResult{TaskId: sb.TaskId, Data: []byte("v")})
	if _, err := h.get(b); err != nil {
		t.Fatal(err)
	}
	h.c.ReleaseRef(b, true)
	tick(b)
	if recorded(b) {
		t.Fatal("a task released between its first and second tick was written")
	}
	h.reply(&pb.TaskResult{TaskId: sa.TaskId, Data: []byte("w")})
	if _, err := h.get(a); err != nil {
		t.Fatal(err)
	}
	h.c.ReleaseRef(a, true)
	h.lin.mu.Lock()
	dropped := len(h.lin.dropped)
	h.lin.mu.Unlock()
	if dropped != 1 || h.lin.has(a.Task()) {
		t.Fatalf("%d deletes after releasing the one written record (still there: %v), want 1", dropped, h.lin.has(a.Task()))
	}
}

// TestReleasedTaskIsGarbageBeforeItsRecordTick: a task whose result was got and released
// is garbage at once, though it still waits for its lineage tick: the shard notes tasks to
// record by ID (toRecord), so a pending lives as long as its task and references need it,
// not a recordDelay more (at 700k tasks/s the pendings pinned that way made a fifth of the
// CPU go to the garbage collector's marking).
func TestReleasedTaskIsGarbageBeforeItsRecordTick(t *testing.T) {
	h := newHarness(t)
	h.c.recordDelay = time.Hour // no tick: the task's ID waits in unrecorded throughout
	a := h.submit()
	spec := h.spec()
	w := weak.Make(spec) // spec is the pending's own (newPending): its weak pointer is the pending's
	h.reply(&pb.TaskResult{TaskId: slices.Clone(spec.TaskId), Data: []byte("v")})
	spec = nil
	if _, err := h.get(a); err != nil {
		t.Fatal(err)
	}
	h.c.ReleaseRef(a, true)
	for range 50 {
		runtime.GC()
		if w.Value() == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("a completed and released task's pending is still reachable after 50 collections")
}

func TestCancelWhileWaitingForArguments(t *testing.T) {
	h := newHarness(t)
	a := h.submit()
	sa := h.spec()
	b := h.submit(Arg{Ref: a, IsRef: true})
	if err := h.c.Cancel(b); err != nil {
		t.Fatal(err)
	}
	h.reply(&pb.TaskResult{TaskId: sa.TaskId, Data: []byte("x")})
	h.noSpec() // b never runs
	_, err := h.get(b)
	var oe *ObjectError
	if !errors.As(err, &oe) || oe.Info.Kind != pb.ErrorInfo_CANCELLED {
		t.Fatalf("Get of a cancelled task: %v", err)
	}
}

func TestWaitCountsFailedEntriesAsReady(t *testing.T) {
	h := newHarness(t)
	a := h.submit()
	h.spec()
	ctx := context.Background()
	mask, err := h.tc.Wait(ctx, []ids.ObjectID{a, {}}, 1, 20*time.Millisecond, []bool{false, true})
	if err != nil || mask[0] || !mask[1] {
		t.Fatalf("mask %v, %v: want only the failed entry ready", mask, err)
	}
	start := time.Now()
	mask, err = h.tc.Wait(ctx, []ids.ObjectID{a}, 1, 30*time.Millisecond, nil)
	if err != nil || mask[0] || time.Since(start) < 30*time.Millisecond {
		t.Fatalf("timeout: mask %v, %v after %v", mask, err, time.Since(start))
	}
}

// TestRetryCreatesNewChildIDs: the tasks and objects an attempt of a task creates have IDs
// of their own. A retried parent's children must not share IDs with the first attempt's,
// which may still be queued or running for a dead owner: a scheduler would take the
// retry's child for a duplicate and drop it, and its result would go to the dead owner
// (a chaos-suite hang).
func TestRetryCreatesNewChildIDs(t *testing.T) {
	h := newHarness(t)
	parent := ids.NewRootTaskID()
	childOf := func(attempt int32) (ids.ObjectID, ids.ObjectID) {
		_, ctx := h.c.TaskContextFor(context.Background(), &pb.TaskSpec{TaskId: parent[:], Attempt: attempt}, nil)
		tc, _ := FromContext(ctx)
		res, _ := sched.FromMap(map[string]float64{sched.CPU: 1})
		id, _, err := h.c.Submit(tc, Call{Function: "core_test.f", Resources: res})
		if err != nil {
			t.Fatal(err)
		}
		h.spec()
		put, err := tc.Put([]byte("x"))
		if err != nil {
			t.Fatal(err)
		}
		return id, put
	}
	c0, p0 := childOf(0)
	c0again, p0again := childOf(0)
	c1, p1 := childOf(1)
	c2, p2 := childOf(2)
	if c0 != c0again || p0 != p0again {
		t.Fatalf("the same attempt gave different IDs: %s/%s, %s/%s", c0, c0again, p0, p0again)
	}
	if c0 == c1 || c1 == c2 || c0 == c2 || p0 == p1 || p1 == p2 {
		t.Fatalf("attempts share IDs: children %s %s %s, puts %s %s %s", c0, c1, c2, p0, p1, p2)
	}
	if c0.Task() != ids.ChildTaskID(parent, 1) {
		t.Fatalf("a first attempt's child is %s, want ChildTaskID(parent, 1)", c0.Task())
	}
}

// TestTaskContextForIsAContext: the context a task runs with carries its TaskContext
// through contexts derived from it, passes the parent's values, deadline and
// cancellation through, and the TaskContext found is the same one every time (it counts
// the task's children).
func TestTaskContextForIsAContext(t *testing.T) {
	h := newHarness(t)
	type key struct{}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	tid := ids.NewRootTaskID()
	spec := &pb.TaskSpec{TaskId: tid[:]}
	_, onWorker := h.c.TaskContextFor(parent, spec, nil)
	for _, ctx := range []context.Context{
		onWorker,
		h.c.ActorCallContext(parent, spec, "", 1, nil),
	} {
		derived, stop := context.WithTimeout(ctx, time.Hour)
		tc, ok := FromContext(derived)
		if !ok || tc.Task != tid || tc.Core != h.c || tc.Spec != spec {
			t.Fatalf("FromContext of a derived context: %+v, %v", tc, ok)
		}
		if again, _ := FromContext(ctx); again != tc {
			t.Fatal("two lookups found different TaskContexts")
		}
		if derived.Value(key{}) != "v" {
			t.Fatal("the parent's value is not passed through")
		}
		if _, ok := ctx.Deadline(); ok {
			t.Fatal("a deadline the parent does not have")
		}
		if s := fmt.Sprint(ctx); !strings.Contains(s, tid.String()) {
			t.Fatalf("String() %q does not name the task", s)
		}
		stop()
	}
	own, ctx := h.c.TaskContextFor(parent, spec, nil)
	derived, stop := context.WithCancel(ctx)
	defer stop()
	if ctx.Done() != own.Done() {
		t.Fatal("the task's context is not done with its own (the worker's cancellation)")
	}
	cancel()
	<-derived.Done()
	if ctx.Err() != context.Canceled || own.Err() != context.Canceled {
		t.Fatalf("parent cancelled: Err() = %v, the task's own %v", ctx.Err(), own.Err())
	}
}

// TestTaskContextForOneAllocation: a worker's task costs one allocation for its context
// and its own cancellation together (one per task).
func TestTaskContextForOneAllocation(t *testing.T) {
	h := newHarness(t)
	tid := ids.NewRootTaskID()
	spec := &pb.TaskSpec{TaskId: tid[:]}
	if n := testing.AllocsPerRun(100, func() {
		if own, ctx := h.c.TaskContextFor(context.Background(), spec, nil); own == nil || ctx.Err() != nil {
			t.Fatal("no live context")
		}
	}); n != 1 {
		t.Fatalf("%.1f allocations per task context, want 1", n)
	}
}

// TestPendingFitsItsSizeClass: every task and actor call allocates one pending (its spec
// and its return object's entry inside); Go rounds it up to a size class, and the next
// class above 640 bytes is 704. A field added to pending must not push every task into
// the larger class (task events' times once did: 632 -> 672 bytes) without a reason.
func TestPendingFitsItsSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(pending{}); n > 640 {
		t.Fatalf("pending is %d bytes, over the 640-byte size class: make room (padding, a field that can be derived) or raise this bound knowingly", n)
	}
}
