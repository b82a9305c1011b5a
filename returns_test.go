package ray

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/internal/base/ids"
)

// Remote functions of several returns for these tests.
var (
	divMod = Task2R2("test.divMod", func(_ context.Context, a, b int) (int, int, error) {
		if b == 0 {
			return 0, 0, errors.New("division by zero")
		}
		return a / b, a % b, nil
	})
	splitWords = Task1R3("test.splitWords", func(_ context.Context, s string) (string, int, []string, error) {
		w := strings.Fields(s)
		if len(w) == 0 {
			return "", 0, nil, nil
		}
		return w[0], len(w), w, nil
	})
	// bigPair returns two large values (over the inline limit: they live in the store).
	bigPairRuns atomic.Int64
	bigPair     = Task1R2("test.bigPair", func(_ context.Context, n int) ([]int64, []int64, error) {
		bigPairRuns.Add(1)
		a, b := make([]int64, n), make([]int64, n)
		for i := range a {
			a[i], b[i] = int64(i), int64(2*i)
		}
		return a, b, nil
	})
	// refPair returns a ref inside its second value.
	refPair = Task0R2("test.refPair", func(ctx context.Context) (int, refBox, error) {
		r, err := Put(ctx, []int64{7, 8, 9})
		return 1, refBox{R: r}, err
	})
	panicPair = Task0R3("test.panicPair", func(context.Context) (int, int, int, error) { panic("boom") })
	pairOf    = Task1R2("test.pairOf", func(_ context.Context, x int) (int, string, error) { return x, fmt.Sprint(x), nil })
	constPair = Task0R2("test.constPair", func(context.Context) (string, string, error) { return "a", "b", nil })
	addInts   = Task2("test.addInts", func(_ context.Context, a, b int) (int, error) { return a + b, nil })
	tripleOf  = Task2R3("test.tripleOf", func(_ context.Context, a, b int) (int, int, int, error) { return a + b, a - b, a * b, nil })
)

func TestMultipleReturnsEachOnItsOwn(t *testing.T) {
	ctx := shared
	q, r := divMod.Remote(ctx, V(47), V(5))
	if q.ID() == r.ID() || q.ID()[:len(q.ID())-8] != r.ID()[:len(r.ID())-8] {
		t.Fatalf("refs %s and %s: want two returns of one task", q.ID(), r.ID())
	}
	// The second alone, then the first.
	if v, err := Get(ctx, r); err != nil || v != 2 {
		t.Fatalf("Get(remainder) = %v, %v; want 2", v, err)
	}
	if v, err := Get(ctx, q); err != nil || v != 9 {
		t.Fatalf("Get(quotient) = %v, %v; want 9", v, err)
	}
	// Each is an argument of another task on its own.
	if v, err := Get(ctx, square.Remote(ctx, r)); err != nil || v != 4 {
		t.Fatalf("Square(remainder) = %v, %v; want 4", v, err)
	}
	a, b := divMod.Remote(ctx, V(100), V(7))
	if v, err := Get(ctx, addInts.Remote(ctx, a, b)); err != nil || v != 14+2 {
		t.Fatalf("Add(quotient, remainder) = %v, %v; want 16", v, err)
	}
	// Three returns of different types.
	first, n, words := splitWords.Remote(ctx, V("ray for go"))
	w, err1 := Get(ctx, words)
	f, err2 := Get(ctx, first)
	k, err3 := Get(ctx, n)
	if err := errors.Join(err1, err2, err3); err != nil || f != "ray" || k != 3 || strings.Join(w, ",") != "ray,for,go" {
		t.Fatalf("splitWords = %q %d %q, %v", f, k, w, err)
	}
	s, d, p := tripleOf.Remote(ctx, V(6), V(4))
	if got, err := GetAll(ctx, []ObjectRef[int]{s, d, p}); err != nil || fmt.Sprint(got) != "[10 2 24]" {
		t.Fatalf("tripleOf = %v, %v", got, err)
	}
	// Options keep the returns.
	x, y := constPair.Options(NumCPUs(0)).Remote(ctx)
	if a, b, err := get2(ctx, x, y); err != nil || a+b != "ab" {
		t.Fatalf("constPair with options = %q %q, %v", a, b, err)
	}
}

func get2[A, B any](ctx context.Context, a ObjectRef[A], b ObjectRef[B]) (A, B, error) {
	x, err1 := Get(ctx, a)
	y, err2 := Get(ctx, b)
	return x, y, errors.Join(err1, err2)
}

// TestMultipleReturnsFreedOnTheirOwn: releasing one return frees its value only; the
// task's lineage record lives until the last return is gone.
func TestMultipleReturnsFreedOnTheirOwn(t *testing.T) {
	ctx := shared
	c := nodeOf(ctx).Core
	a, b := pairOf.Remote(ctx, V(5))
	if _, _, err := get2(ctx, a, b); err != nil {
		t.Fatal(err)
	}
	ida, _ := ids.ParseObjectID(a.ID())
	idb, _ := ids.ParseObjectID(b.ID())
	a.Release()
	if _, _, known := c.Objects().Get(ida); known {
		t.Error("the released return's value is still kept")
	}
	if v, err := Get(ctx, b); err != nil || v != "5" {
		t.Fatalf("Get(the other return) after the first was released = %q, %v", v, err)
	}
	if !c.Refs().HasLineage(ida.Task()) {
		t.Error("the task's lineage record went with its first return while the second lives")
	}
	b.Release()
	if _, _, known := c.Objects().Get(idb); known {
		t.Error("the second return's value outlived its release")
	}
	if c.Refs().HasLineage(ida.Task()) {
		t.Error("the task's lineage record outlived all its returns")
	}
	// Released in the other order, and by the garbage collector.
	func() {
		a, b := pairOf.Remote(ctx, V(6))
		if _, _, err := get2(ctx, a, b); err != nil {
			t.Fatal(err)
		}
		ida, _ = ids.ParseObjectID(a.ID())
		b.Release()
		if !c.Refs().HasLineage(ida.Task()) {
			t.Error("the task's lineage record went with its second return while the first lives")
		}
		runtime.KeepAlive(a)
	}()
	eventually.AfterGC(t, 10*time.Second, "the lineage record of a task whose returns were collected to go", func() bool {
		return !c.Refs().HasLineage(ida.Task())
	})
}

func TestMultipleReturnsErrorFailsEveryRef(t *testing.T) {
	ctx := shared
	q, r := divMod.Remote(ctx, V(1), V(0))
	_, errR := Get(ctx, r)
	_, errQ := Get(ctx, q)
	var te1, te2 *TaskError
	if !errors.As(errR, &te1) || !errors.As(errQ, &te2) || te1.Message != "division by zero" || te1.Message != te2.Message || te1.TaskID != te2.TaskID {
		t.Fatalf("errors of the returns: %v / %v; want the task's error on both", errQ, errR)
	}
	// A task that depends on a failed return fails with the same error.
	if _, err := Get(ctx, square.Remote(ctx, r)); !errors.As(err, &te1) || te1.Message != "division by zero" {
		t.Fatalf("a task depending on a failed return: %v", err)
	}
	// A panic fails all three.
	x, y, z := panicPair.Remote(ctx)
	for i, ref := range []ObjectRef[int]{x, y, z} {
		var te *TaskError
		if _, err := Get(ctx, ref); !errors.As(err, &te) || !te.Panic || !strings.Contains(te.Message, "boom") {
			t.Errorf("return %d of a task that panicked: %v", i+1, err)
		}
	}
}

func TestMultipleReturnsLargeValues(t *testing.T) {
	ctx := shared
	const n = 64 << 10 // 512 KiB each: both in the store
	a, b := bigPair.Remote(ctx, V(n))
	y, err := Get(ctx, b)
	if err != nil || len(y) != n || y[n-1] != 2*(n-1) {
		t.Fatalf("Get(second large return): %d values, %v", len(y), err)
	}
	x, err := Get(ctx, a)
	if err != nil || len(x) != n || x[n-1] != n-1 {
		t.Fatalf("Get(first large return): %d values, %v", len(x), err)
	}
	// Small ones that together pass the inline total: some go through the store too.
	p, q := bigPair.Remote(ctx, V(12<<10)) // 96 KiB each, 192 KiB
	if x, y, err := get2(ctx, p, q); err != nil || len(x) != 12<<10 || len(y) != 12<<10 {
		t.Fatalf("two returns under the inline limit: %d, %d, %v", len(x), len(y), err)
	}
}

// TestMultipleReturnsNestedRef: a ref inside one return stays usable while that return
// lives, whatever becomes of the other.
func TestMultipleReturnsNestedRef(t *testing.T) {
	ctx := shared
	one, box := refPair.Remote(ctx)
	if v, err := Get(ctx, one); err != nil || v != 1 {
		t.Fatal(v, err)
	}
	one.Release()
	runtime.GC()
	b, err := Get(ctx, box)
	if err != nil {
		t.Fatal(err)
	}
	if xs, err := Get(ctx, b.R); err != nil || fmt.Sprint(xs) != "[7 8 9]" {
		t.Fatalf("the ref inside the second return: %v, %v", xs, err)
	}
}

// TestMultipleReturnsBadCalls: calling a function of several returns for one return (by
// name), or a name nobody registered, fails every ref at once with an error that says why.
func TestMultipleReturnsBadCalls(t *testing.T) {
	ctx := shared
	_, err := Get(ctx, Call[int](ctx, "test.divMod", []any{1, 2}))
	var te *TaskError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), `"test.divMod" returns 2 values, but was called for 1`) {
		t.Fatalf("Call of a function of two returns: %v", err)
	}
	_, err = Get(ctx, Call[int](ctx, "test.noSuchFunction", nil))
	if !errors.Is(err, ErrUnknownFunction) {
		t.Fatalf("Call of an unknown function: %v", err)
	}
	// A function of several returns asked for resources no node has: every ref fails.
	a, b := divMod.Options(NumCPUs(1000)).Remote(ctx, V(1), V(2))
	if _, err := Get(ctx, a); !errors.Is(err, ErrInfeasible) {
		t.Fatalf("first return of an infeasible call: %v", err)
	}
	if _, err := Get(ctx, b); !errors.Is(err, ErrInfeasible) {
		t.Fatalf("second return of an infeasible call: %v", err)
	}
	// Without a runtime.
	x, _ := divMod.Remote(context.Background(), V(1), V(2))
	if _, err := Get(ctx, x); !errors.Is(err, ErrNotInitialized) {
		t.Fatalf("a call without a runtime: %v", err)
	}
}

// TestMultipleReturnsLostOneRecreated: the spill file of a task's second return is
// corrupted; a Get of it runs the task again and reads the value it made, while the first
// return keeps its own.
func TestMultipleReturnsLostOneRecreated(t *testing.T) {
	ctx, err := Init(context.Background(), WithNumCPUs(2), WithObjectStoreMemory(4<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer Shutdown(ctx)
	const elems = 128 << 10 // 1 MiB each
	a, b := bigPair.Remote(ctx, V(elems))
	if _, _, err := get2(ctx, a, b); err != nil {
		t.Fatal(err)
	}
	runs := bigPairRuns.Load()
	// More objects push both returns out to disk.
	more := corruptOnceSpilled(t, ctx, b.ID(), elems)
	before, err := Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	y, err := Get(ctx, b)
	if err != nil || len(y) != elems || y[elems-1] != 2*(elems-1) {
		t.Fatalf("a lost second return: %d values, %v (want it recreated)", len(y), err)
	}
	after, _ := Stats(ctx)
	if n := after.ObjectsReconstructed - before.ObjectsReconstructed; n != 1 {
		t.Errorf("%d objects recreated, want 1", n)
	}
	if n := bigPairRuns.Load() - runs; n != 1 {
		t.Errorf("the task ran %d more times, want 1", n)
	}
	x, err := Get(ctx, a)
	if err != nil || len(x) != elems || x[elems-1] != elems-1 {
		t.Fatalf("the first return after the second was recreated: %d values, %v", len(x), err)
	}
	runtime.KeepAlive(more)
}

// corruptOnceSpilled puts 4 objects of elems int64s, which push the object id out to its
// node's spill directory, waits until its spill file is there and flips a byte in the
// middle of it (a lost object, which lineage must recreate). It returns the objects put;
// the caller keeps them as long as the pressure must last.
func corruptOnceSpilled(t *testing.T, ctx context.Context, id string, elems int) []ObjectRef[[]int64] {
	t.Helper()
	var more []ObjectRef[[]int64]
	for range 4 {
		r, err := Put(ctx, make([]int64, elems))
		if err != nil {
			t.Fatal(err)
		}
		more = append(more, r)
	}
	var path string
	eventually.True(t, 30*time.Second, id+" to be spilled", func() bool {
		path = spillFileOf(filepath.Join(nodeOf(ctx).Dir(), "spill"), id)
		return path != ""
	})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return more
}
