package ray

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Remote functions used by the tests, registered at package level as users do.
var (
	square = Task1("test.square", func(_ context.Context, x int) (int, error) { return x * x, nil })
	answer = Task0("test.answer", func(context.Context) (int, error) { return 42, nil })
	concat = Task2("test.concat", func(_ context.Context, a string, b int) (string, error) { return fmt.Sprintf("%s%d", a, b), nil })
	sum3   = Task3("test.sum3", func(_ context.Context, a, b, c float64) (float64, error) { return a + b + c, nil })
	join4  = Task4("test.join4", func(_ context.Context, a, b, c, d string) (string, error) { return a + b + c + d, nil })
	fail   = Task1("test.fail", func(_ context.Context, msg string) (int, error) { return 0, errors.New(msg) })
	boom   = Task0("test.boom", func(context.Context) (int, error) { panic("kaboom") })
	big    = Task1("test.big", func(_ context.Context, n int) ([]int64, error) {
		out := make([]int64, n)
		for i := range out {
			out[i] = int64(i)
		}
		return out, nil
	})
	plusOne = Task1("test.plusOne", func(_ context.Context, xs []int64) ([]int64, error) {
		out := make([]int64, len(xs))
		for i, x := range xs {
			out[i] = x + 1
		}
		return out, nil
	})
	sumAll = Task1("test.sumAll", func(_ context.Context, xs []int64) (int64, error) {
		var s int64
		for _, x := range xs {
			s += x
		}
		return s, nil
	})
	anyArgTask = Task1("test.any", func(_ context.Context, v any) (int, error) { return 1, nil })
	// blockUntil waits for a named gate to open or its ctx to end.
	blockUntil = Task1("test.block", func(ctx context.Context, gate string) (string, error) {
		select {
		case <-gateOf(gate):
			return gate, nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	// flaky fails until it has been called `failures` times for its key.
	flaky = Task2("test.flaky", func(_ context.Context, key string, failures int) (int, error) {
		n := int(countCall(key))
		if n <= failures {
			return 0, fmt.Errorf("attempt %d fails", n)
		}
		return n, nil
	})
	// concurrency records the most tasks of a key running at once.
	measure = Task1("test.measure", func(_ context.Context, key string) (int, error) {
		cur := running(key).Add(1)
		defer running(key).Add(-1)
		for {
			m := peak(key).Load()
			if cur <= m || peak(key).CompareAndSwap(m, cur) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
		return int(cur), nil
	})
)

// fanOut submits n children and sums their results: a nested task. It is registered in
// init because it refers to itself.
var fanOut *Func2[int, int, int]

func init() {
	fanOut = Task2("test.fanOut", func(ctx context.Context, depth, n int) (int, error) {
		if depth == 0 {
			return 1, nil
		}
		refs := make([]ObjectRef[int], n)
		for i := range refs {
			refs[i] = fanOut.Remote(ctx, V(depth-1), V(n))
		}
		vals, err := GetAll(ctx, refs)
		if err != nil {
			return 0, err
		}
		total := 0
		for _, v := range vals {
			total += v
		}
		return total, nil
	})
}

var (
	testMu   sync.Mutex
	gates    = map[string]chan struct{}{}
	calls    = map[string]*atomic.Int64{}
	runningM = map[string]*atomic.Int64{}
	peakM    = map[string]*atomic.Int64{}
)

// testRun tells the runs of one test apart under -count=N: the gates and counters
// outlive a run, keyed by name.
var testRun atomic.Int64

// uniqueName is the test's name made unique to this run.
func uniqueName(t *testing.T) string {
	return fmt.Sprintf("%s#%d", t.Name(), testRun.Add(1))
}

func gateOf(name string) chan struct{} {
	testMu.Lock()
	defer testMu.Unlock()
	g, ok := gates[name]
	if !ok {
		g = make(chan struct{})
		gates[name] = g
	}
	return g
}

func counter(m map[string]*atomic.Int64, key string) *atomic.Int64 {
	testMu.Lock()
	defer testMu.Unlock()
	c, ok := m[key]
	if !ok {
		c = new(atomic.Int64)
		m[key] = c
	}
	return c
}

func countCall(key string) int64       { return counter(calls, key).Add(1) }
func running(key string) *atomic.Int64 { return counter(runningM, key) }
func peak(key string) *atomic.Int64    { return counter(peakM, key) }

// shared is one runtime for the tests that need no special node (each Init starts an
// embedded etcd and a cluster member).
var shared context.Context

func TestMain(m *testing.M) {
	if os.Getenv(gcFloorChildEnv) == "1" {
		gcFloorChild() // TestGCHeapFloorInInit's child process: never returns
	}
	ctx, err := Init(context.Background(), WithNumCPUs(4), WithResources(map[string]float64{"accel": 1}))
	if err != nil {
		fmt.Fprintln(os.Stderr, "Init:", err)
		os.Exit(1)
	}
	shared = ctx
	code := m.Run()
	if err := Shutdown(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "Shutdown:", err)
		code = 1
	}
	os.Exit(code)
}

func timeout(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(shared, 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustGet[T any](t *testing.T, ctx context.Context, r ObjectRef[T]) T {
	t.Helper()
	v, err := Get(ctx, r)
	if err != nil {
		t.Fatalf("Get(%v): %v", r, err)
	}
	return v
}

func TestRemoteArities(t *testing.T) {
	ctx := timeout(t)
	if v := mustGet(t, ctx, answer.Remote(ctx)); v != 42 {
		t.Errorf("Task0: %d", v)
	}
	if v := mustGet(t, ctx, square.Remote(ctx, V(4))); v != 16 {
		t.Errorf("Task1: %d", v)
	}
	if v := mustGet(t, ctx, concat.Remote(ctx, V("x"), V(7))); v != "x7" {
		t.Errorf("Task2: %q", v)
	}
	if v := mustGet(t, ctx, sum3.Remote(ctx, V(1.5), V(2.0), V(3.5))); v != 7 {
		t.Errorf("Task3: %v", v)
	}
	if v := mustGet(t, ctx, join4.Remote(ctx, V("a"), V("b"), V("c"), V("d"))); v != "abcd" {
		t.Errorf("Task4: %q", v)
	}
}

func TestRefsAsArguments(t *testing.T) {
	ctx := timeout(t)
	r := square.Remote(ctx, V(4))
	s := square.Options(MaxRetries(3)).Remote(ctx, r)
	if v := mustGet(t, ctx, s); v != 256 {
		t.Fatalf("square(square(4)) = %d, want 256", v)
	}
	// A chain of 50 dependent tasks submitted before any runs.
	x := square.Remote(ctx, V(1))
	for i := 0; i < 50; i++ {
		x = square.Remote(ctx, x)
	}
	if v := mustGet(t, ctx, x); v != 1 {
		t.Fatalf("chain: %d", v)
	}
	// Mixed value and ref arguments.
	p, err := Put(ctx, "n=")
	if err != nil {
		t.Fatal(err)
	}
	if v := mustGet(t, ctx, concat.Remote(ctx, p, answer.Remote(ctx))); v != "n=42" {
		t.Fatalf("concat(ref, ref) = %q", v)
	}
}

func TestLargeObjectsThroughTheStore(t *testing.T) {
	ctx := timeout(t)
	const n = 1 << 20 // 8 MiB: far above the inline limit
	xs := big.Remote(ctx, V(n))
	got := mustGet(t, ctx, sumAll.Remote(ctx, xs))
	if want := int64(n) * (n - 1) / 2; got != want {
		t.Fatalf("sum = %d, want %d", got, want)
	}
	vals := mustGet(t, ctx, xs)
	if len(vals) != n || vals[n-1] != n-1 {
		t.Fatalf("got %d values, last %d", len(vals), vals[len(vals)-1])
	}
	// A large Put used as an argument.
	p, err := Put(ctx, vals)
	if err != nil {
		t.Fatal(err)
	}
	if got2 := mustGet(t, ctx, sumAll.Remote(ctx, p)); got2 != got {
		t.Fatalf("sum of put = %d, want %d", got2, got)
	}
	// A large value passed by value: the runtime puts it into the store (the task's spec,
	// its lineage record, stays small) and the task reads it from there.
	if got3 := mustGet(t, ctx, sumAll.Remote(ctx, V(vals))); got3 != got {
		t.Fatalf("sum of a large by-value argument = %d, want %d", got3, got)
	}
}

func TestPutGet(t *testing.T) {
	ctx := timeout(t)
	type point struct {
		X, Y int
		Tag  string
	}
	tests := []struct {
		name string
		put  func() (any, error)
	}{
		{"int", func() (any, error) { r, _ := Put(ctx, 7); return Get(ctx, r) }},
		{"struct", func() (any, error) { r, _ := Put(ctx, point{1, 2, "p"}); return Get(ctx, r) }},
		{"bytes", func() (any, error) { r, _ := Put(ctx, []byte("raw")); v, err := Get(ctx, r); return string(v), err }},
		{"map", func() (any, error) {
			r, _ := Put(ctx, map[string]int{"a": 1})
			v, err := Get(ctx, r)
			return v["a"], err
		}},
	}
	want := []any{7, point{1, 2, "p"}, "raw", 1}
	for i, tc := range tests {
		got, err := tc.put()
		if err != nil || got != want[i] {
			t.Errorf("%s: got %v, %v; want %v", tc.name, got, err, want[i])
		}
	}
}

func TestWait(t *testing.T) {
	ctx := timeout(t)
	gate := uniqueName(t)
	refs := []ObjectRef[string]{
		blockUntil.Options(NumCPUs(0)).Remote(ctx, V(gate)),
		concat.Remote(ctx, V("a"), V(1)),
		concat.Remote(ctx, V("b"), V(2)),
	}
	ready, notReady, err := Wait(ctx, refs, NumReady(2))
	if err != nil {
		t.Fatal(err)
	}
	if len(ready) != 2 || len(notReady) != 1 || ready[0] != refs[1] || ready[1] != refs[2] || notReady[0] != refs[0] {
		t.Fatalf("ready %v not ready %v", ready, notReady)
	}
	start := time.Now()
	ready, notReady, err = Wait(ctx, refs, NumReady(3), Timeout(50*time.Millisecond))
	if err != nil || len(ready) != 2 || len(notReady) != 1 {
		t.Fatalf("timeout: ready %d, not ready %d, err %v", len(ready), len(notReady), err)
	}
	if time.Since(start) < 50*time.Millisecond {
		t.Fatalf("Wait returned before its timeout")
	}
	close(gateOf(gate))
	ready, _, err = Wait(ctx, refs, NumReady(3))
	if err != nil || len(ready) != 3 || ready[0] != refs[0] {
		t.Fatalf("all: %v, %v", ready, err)
	}
	if _, _, err := Wait(ctx, refs, NumReady(4)); err == nil {
		t.Fatal("NumReady above the number of refs accepted")
	}
	// As Ray's ray.wait: at most NumReady refs come back ready, the first in order.
	ready, notReady, err = Wait(ctx, refs, NumReady(1))
	if err != nil || len(ready) != 1 || ready[0] != refs[0] || len(notReady) != 2 {
		t.Fatalf("NumReady(1) of 3 ready: ready %v not ready %v, %v", ready, notReady, err)
	}
	// WaitAny over refs of mixed types.
	mixed := []Ref{square.Remote(ctx, V(2)), concat.Remote(ctx, V("m"), V(1))}
	if r, _, err := WaitAny(ctx, mixed, NumReady(2)); err != nil || len(r) != 2 {
		t.Fatalf("WaitAny: %v %v", r, err)
	}
}

// TestWaitArguments: Wait checks its arguments as Ray's ray.wait does. Before, a ref given
// twice was counted twice (two "ready" refs of one object), an empty list was an error
// ("NumReady(1) must be between 0 and the number of refs (0)") where Ray returns two empty
// lists, NumReady(0) and a negative Timeout were accepted, and the zero ObjectRef counted
// as ready while Get of it fails.
func TestWaitArguments(t *testing.T) {
	ctx := timeout(t)
	r := square.Remote(ctx, V(3))
	s := square.Remote(ctx, V(4))
	mustGet(t, ctx, r)
	mustGet(t, ctx, s)
	fails := func(what, want string, ready, notReady []ObjectRef[int], err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) || ready != nil || notReady != nil {
			t.Errorf("%s: ready %v, not ready %v, err %v; want an error saying %q", what, ready, notReady, err, want)
		}
	}

	ready, notReady, err := Wait(ctx, []ObjectRef[int]{r, s, r}, NumReady(2))
	fails("a ref twice", "refs[0] and refs[2] are the same object", ready, notReady, err)
	// Another handle of the same object (decoded from a value) is the same object.
	box, err := Put(ctx, []ObjectRef[int]{s})
	if err != nil {
		t.Fatal(err)
	}
	again := mustGet(t, ctx, box)[0]
	ready, notReady, err = Wait(ctx, []ObjectRef[int]{s, again})
	fails("two handles of one object", "Wait requires unique refs", ready, notReady, err)

	for _, opts := range [][]WaitOption{nil, {NumReady(5)}, {NumReady(0)}, {Timeout(0)}} {
		if ready, notReady, err := Wait(ctx, []ObjectRef[int]{}, opts...); err != nil || len(ready) != 0 || len(notReady) != 0 {
			t.Errorf("an empty list (%d options): ready %v, not ready %v, err %v; want two empty lists", len(opts), ready, notReady, err)
		}
	}

	for _, k := range []int{0, -1, 3} {
		ready, notReady, err := Wait(ctx, []ObjectRef[int]{r, s}, NumReady(k))
		fails(fmt.Sprintf("NumReady(%d) of 2", k), fmt.Sprintf("NumReady(%d) must be between 1 and the number of refs (2)", k), ready, notReady, err)
	}
	ready, notReady, err = Wait(ctx, []ObjectRef[int]{r}, Timeout(-time.Second))
	fails("a negative timeout", "Timeout(-1s) must not be negative", ready, notReady, err)
	if ready, _, err := Wait(ctx, []ObjectRef[int]{r}, Timeout(0)); err != nil || len(ready) != 1 {
		t.Errorf("Timeout(0): ready %v, %v", ready, err)
	}

	var zero ObjectRef[int]
	_, getErr := Get(ctx, zero)
	ready, notReady, err = Wait(ctx, []ObjectRef[int]{r, zero})
	fails("the zero ObjectRef", "refs[1]: the zero ObjectRef refers to no object", ready, notReady, err)
	if getErr == nil || !strings.Contains(getErr.Error(), "the zero ObjectRef refers to no object") {
		t.Errorf("Get of the zero ObjectRef: %v", getErr)
	}
	if _, _, err := WaitAny(ctx, []Ref{r, nil}); err == nil || !strings.Contains(err.Error(), "refs[1]: the zero ObjectRef refers to no object") {
		t.Errorf("WaitAny with a nil Ref: %v", err)
	}
	if _, _, err := WaitAny(ctx, []Ref{r, s, r}); err == nil || !strings.Contains(err.Error(), "refs[0] and refs[2] are the same object") {
		t.Errorf("WaitAny with a ref twice: %v", err)
	}
	// What is valid still works: both ready, in order.
	if ready, notReady, err := Wait(ctx, []ObjectRef[int]{s, r}, NumReady(2), Timeout(time.Second)); err != nil || len(ready) != 2 || ready[0] != s || len(notReady) != 0 {
		t.Errorf("two distinct ready refs: ready %v, not ready %v, %v", ready, notReady, err)
	}
}

func TestTaskErrors(t *testing.T) {
	ctx := timeout(t)
	_, err := Get(ctx, fail.Remote(ctx, V("bad input")))
	var te *TaskError
	if !errors.As(err, &te) {
		t.Fatalf("error %v (%T) is not a *TaskError", err, err)
	}
	if te.Function != "test.fail" || te.Message != "bad input" || te.TaskID == "" || te.Panic {
		t.Fatalf("TaskError %+v", te)
	}

	_, err = Get(ctx, boom.Remote(ctx))
	if !errors.As(err, &te) || !te.Panic || !strings.Contains(te.Message, "kaboom") || !strings.Contains(te.Stack, "ray_test.go") {
		t.Fatalf("panic: %v (%+v)", err, te)
	}
	// The error says "panic" once, then the value.
	if msg := err.Error(); strings.Count(msg, "panic") != 1 || !strings.HasSuffix(msg, "failed with a panic: kaboom") {
		t.Errorf("error of a panicking task: %q", msg)
	}

	// Through a chain of dependent tasks, the original error arrives unchanged.
	r := fail.Remote(ctx, V("root cause"))
	for i := 0; i < 3; i++ {
		r = square.Remote(ctx, r)
	}
	_, err = Get(ctx, r)
	if !errors.As(err, &te) || te.Function != "test.fail" || te.Message != "root cause" {
		t.Fatalf("chained: %v", err)
	}
}

func TestSubmissionErrors(t *testing.T) {
	ctx := timeout(t)
	getErr := func(r ObjectRef[int]) func() error {
		return func() error { _, err := Get(ctx, r); return err }
	}
	noGPU := square.Options(NumGPUs(1)).Remote(ctx, V(1))
	tests := []struct {
		name string
		get  func() error
		want error
		text string
	}{
		{"unknown function", getErr(Call[int](ctx, "test.no-such-function", []any{1})), ErrUnknownFunction, "test.no-such-function"},
		{"GPU", getErr(noGPU), ErrInfeasible, "GPU"},
		{"too much custom", getErr(square.Options(Resources(map[string]float64{"accel": 2})).Remote(ctx, V(1))), ErrInfeasible, "accel"},
		{"missing custom", getErr(square.Options(Resources(map[string]float64{"tpu": 1})).Remote(ctx, V(1))), ErrInfeasible, "tpu"},
		{"unencodable argument", getErr(anyArgTask.Remote(ctx, V[any](func() {}))), ErrEncode, "func"},
		{"negative CPUs", getErr(square.Options(NumCPUs(-1)).Remote(ctx, V(1))), nil, "CPU"},
		{"negative retries", getErr(square.Options(MaxRetries(-2)).Remote(ctx, V(1))), nil, "MaxRetries(-2)"},
	}
	for _, tc := range tests {
		start := time.Now()
		err := tc.get()
		if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: error %v, want %v mentioning %q", tc.name, err, tc.want, tc.text)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: took %v to fail", tc.name, d)
		}
	}
	// A dependent of a failed submission fails too, without hanging.
	if _, err := Get(ctx, square.Remote(ctx, noGPU)); !errors.Is(err, ErrInfeasible) {
		t.Errorf("dependent of an infeasible task: %v", err)
	}
	if _, err := Get(context.Background(), noGPU); !errors.Is(err, ErrNotInitialized) {
		t.Errorf("Get without a runtime: %v", err)
	}
}

func TestNestedTasksDoNotDeadlock(t *testing.T) {
	ctx := timeout(t)
	// 4 CPUs; each parent holds one CPU while it waits for its children: without CPU
	// lending in Get, 8 parents of depth 3 (4^3 = 64 leaves each) would deadlock.
	refs := make([]ObjectRef[int], 8)
	for i := range refs {
		refs[i] = fanOut.Remote(ctx, V(3), V(4))
	}
	vals, err := GetAll(ctx, refs)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vals {
		if v != 64 {
			t.Fatalf("fan-out result %d, want 64", v)
		}
	}
}

func TestResourcesLimitConcurrency(t *testing.T) {
	ctx := timeout(t)
	tests := []struct {
		name string
		opts []TaskOption
		max  int64
	}{
		{"2 CPUs each on a 4-CPU node", []TaskOption{NumCPUs(2)}, 2},
		{"the only accel", []TaskOption{NumCPUs(0), Resources(map[string]float64{"accel": 1})}, 1},
	}
	for _, tc := range tests {
		key := uniqueName(t) + tc.name
		refs := make([]ObjectRef[int], 6)
		for i := range refs {
			refs[i] = measure.Options(tc.opts...).Remote(ctx, V(key))
		}
		if _, err := GetAll(ctx, refs); err != nil {
			t.Fatal(err)
		}
		if p := peak(key).Load(); p != tc.max {
			t.Errorf("%s: at most %d ran at once, want %d", tc.name, p, tc.max)
		}
	}
}

func TestRetries(t *testing.T) {
	ctx := timeout(t)
	key := uniqueName(t)
	v, err := Get(ctx, flaky.Options(MaxRetries(3), RetryExceptions(true)).Remote(ctx, V(key), V(2)))
	if err != nil || v != 3 {
		t.Fatalf("retried task: %d, %v; want success on attempt 3", v, err)
	}
	// MaxRetries(-1): no limit (Ray's max_retries=-1), past the default 3.
	keyInf := key + "/unlimited"
	v, err = Get(ctx, flaky.Options(MaxRetries(-1), RetryExceptions(true)).Remote(ctx, V(keyInf), V(5)))
	if err != nil || v != 6 {
		t.Fatalf("task with MaxRetries(-1): %d, %v; want success on attempt 6", v, err)
	}
	key2 := key + "/no-retry"
	_, err = Get(ctx, flaky.Options(MaxRetries(3)).Remote(ctx, V(key2), V(1)))
	var te *TaskError
	if !errors.As(err, &te) || countCall(key2) != 2 { // one call by the task, one here
		t.Fatalf("application errors must not be retried by default: %v", err)
	}
	key3 := key + "/exhausted"
	_, err = Get(ctx, flaky.Options(MaxRetries(1), RetryExceptions(true)).Remote(ctx, V(key3), V(5)))
	if !errors.As(err, &te) || !strings.Contains(te.Message, "attempt 2") {
		t.Fatalf("after the last retry the last error is returned: %v", err)
	}
}

func TestGetDeadlineAndCancel(t *testing.T) {
	ctx := timeout(t)
	gate := uniqueName(t)
	r := blockUntil.Options(NumCPUs(0)).Remote(ctx, V(gate))
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if _, err := Get(short, r); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get past the deadline: %v", err)
	}
	// Cancel the running task: its ctx is cancelled and Get reports ErrCancelled.
	if err := Cancel(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := Get(ctx, r); !errors.Is(err, ErrCancelled) {
		t.Fatalf("Get of a cancelled task: %v", err)
	}
	// Cancel a task still waiting for its argument: it never runs.
	dep := blockUntil.Options(NumCPUs(0)).Remote(ctx, V(gate+"/dep"))
	waiting := concat.Remote(ctx, dep, V(1))
	if err := Cancel(ctx, waiting); err != nil {
		t.Fatal(err)
	}
	if _, err := Get(ctx, waiting); !errors.Is(err, ErrCancelled) {
		t.Fatalf("Get of a cancelled waiting task: %v", err)
	}
	close(gateOf(gate + "/dep"))
	if v := mustGet(t, ctx, dep); v != gate+"/dep" {
		t.Fatalf("dependency: %q", v)
	}
}
