package ray

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/eventually"
)

// Generators for these tests.
var (
	genCount = Generator1("test.gen.count", func(_ context.Context, n int, yield func(int) error) error {
		for i := range n {
			if err := yield(i); err != nil {
				return err
			}
		}
		return nil
	})
	// genYielded counts the items genWindowed's yields returned for.
	genYielded  atomic.Int64
	genWindowed = Generator0("test.gen.windowed", func(_ context.Context, yield func(int) error) error {
		for i := range 10 {
			if err := yield(i); err != nil {
				return err
			}
			genYielded.Add(1)
		}
		return nil
	})
	genFailAfter = Generator2("test.gen.failAfter", func(_ context.Context, k int, msg string, yield func(string) error) error {
		for i := range k {
			if err := yield(fmt.Sprint("item", i)); err != nil {
				return err
			}
		}
		return errors.New(msg)
	})
	genPanic = Generator0("test.gen.panic", func(_ context.Context, yield func(int) error) error {
		if err := yield(1); err != nil {
			return err
		}
		panic("generator boom")
	})
	// genForever yields until its ctx is done; genForeverEnded counts its returns.
	genForeverEnded atomic.Int64
	genForever      = Generator0("test.gen.forever", func(ctx context.Context, yield func(int) error) error {
		defer genForeverEnded.Add(1)
		for i := 0; ; i++ {
			if err := yield(i); err != nil {
				return err
			}
		}
	})
	// genStall yields one item, then waits for its ctx to end.
	genStall = Generator0("test.gen.stall", func(ctx context.Context, yield func(int) error) error {
		if err := yield(1); err != nil {
			return err
		}
		<-ctx.Done()
		return ctx.Err()
	})
	genBigRuns atomic.Int64
	genBig     = Generator1("test.gen.big", func(_ context.Context, n int, yield func([]int64) error) error {
		genBigRuns.Add(1)
		for k := range 2 {
			xs := make([]int64, n)
			for i := range xs {
				xs[i] = int64(k*n + i)
			}
			if err := yield(xs); err != nil {
				return err
			}
		}
		return nil
	})
	// sumOfCount consumes a generator inside a task.
	sumOfCount = Task1("test.gen.sumOfCount", func(ctx context.Context, n int) (int, error) {
		gen := genCount.Options(GeneratorBackpressure(1)).Remote(ctx, V(n))
		defer gen.Close()
		sum := 0
		for {
			ref, err := gen.Next(ctx)
			if errors.Is(err, ErrGeneratorDone) {
				return sum, nil
			}
			if err != nil {
				return 0, err
			}
			v, err := Get(ctx, ref)
			if err != nil {
				return 0, err
			}
			sum += v
		}
	})
)

// drainGen reads every item of gen and the error that ends it.
func drainGen[T any](t *testing.T, ctx context.Context, gen *ObjectRefGenerator[T]) ([]T, error) {
	t.Helper()
	var out []T
	for range 1000 {
		ref, err := gen.Next(ctx)
		if err != nil {
			return out, err
		}
		v, err := Get(ctx, ref)
		if err != nil {
			t.Fatalf("Get(item %d): %v", len(out)+1, err)
		}
		out = append(out, v)
	}
	t.Fatal("the generator did not end")
	return nil, nil
}

func TestGeneratorOrder(t *testing.T) {
	ctx := shared
	got, err := drainGen(t, ctx, genCount.Remote(ctx, V(20)))
	if !errors.Is(err, ErrGeneratorDone) || fmt.Sprint(got) != fmt.Sprint([]int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}) {
		t.Fatalf("items %v, end %v", got, err)
	}
	// An empty stream ends at once; Next after the end says so again.
	gen := genCount.Remote(ctx, V(0))
	for range 2 {
		if _, err := gen.Next(ctx); !errors.Is(err, ErrGeneratorDone) {
			t.Fatalf("Next of an empty generator: %v", err)
		}
	}
	// Items are refs like any other: passed to a task, freed on their own.
	gen = genCount.Remote(ctx, V(3))
	var refs []ObjectRef[int]
	for range 3 {
		r, err := gen.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, r)
	}
	if v, err := Get(ctx, square.Remote(ctx, refs[2])); err != nil || v != 4 {
		t.Fatalf("square(item 3) = %v, %v", v, err)
	}
	refs[0].Release()
	if v, err := Get(ctx, refs[1]); err != nil || v != 1 {
		t.Fatalf("item 2 after item 1 was released: %v, %v", v, err)
	}
}

// TestGeneratorBackpressure: with a window of n, the producer is never more than n items
// ahead of the consumer, and does get n ahead when the consumer waits.
func TestGeneratorBackpressure(t *testing.T) {
	ctx := shared
	const n = 3
	genYielded.Store(0)
	gen := genWindowed.Options(GeneratorBackpressure(n)).Remote(ctx)
	consumed := int64(0)
	for {
		want := min(consumed+n, 10)
		eventually.True(t, 10*time.Second, fmt.Sprintf("the producer to get %d items ahead", n), func() bool { return genYielded.Load() >= want })
		if y := genYielded.Load(); y > consumed+n {
			t.Fatalf("the producer yielded %d items with %d consumed and a window of %d", y, consumed, n)
		}
		ref, err := gen.Next(ctx)
		if errors.Is(err, ErrGeneratorDone) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		consumed++
		if y := genYielded.Load(); y > consumed+n {
			t.Fatalf("the producer yielded %d items with %d consumed and a window of %d", y, consumed, n)
		}
		if v, err := Get(ctx, ref); err != nil || v != int(consumed-1) {
			t.Fatalf("item %d = %v, %v", consumed, v, err)
		}
	}
	if consumed != 10 {
		t.Fatalf("%d items, want 10", consumed)
	}
}

func TestGeneratorErrorMidStream(t *testing.T) {
	ctx := shared
	got, err := drainGen(t, ctx, genFailAfter.Options(MaxRetries(0)).Remote(ctx, V(3), V("it broke")))
	var te *TaskError
	if fmt.Sprint(got) != "[item0 item1 item2]" || !errors.As(err, &te) || te.Message != "it broke" {
		t.Fatalf("items %v, end %v; want three items and the task's error", got, err)
	}
	// The error stays the stream's end.
	gen := genFailAfter.Remote(ctx, V(0), V("at once"))
	for range 2 {
		if _, err := gen.Next(ctx); !errors.As(err, &te) || te.Message != "at once" {
			t.Fatalf("Next of a generator that failed at once: %v", err)
		}
	}
	got2, err := drainGen(t, ctx, genPanic.Remote(ctx))
	if len(got2) != 1 || !errors.As(err, &te) || !te.Panic || !strings.Contains(te.Message, "generator boom") {
		t.Fatalf("a generator that panicked after one item: %v, %v", got2, err)
	}
}

// TestGeneratorNested: a task consumes a generator it started.
func TestGeneratorNested(t *testing.T) {
	ctx := shared
	if v, err := Get(ctx, sumOfCount.Remote(ctx, V(10))); err != nil || v != 45 {
		t.Fatalf("sum of a generator consumed in a task = %v, %v; want 45", v, err)
	}
}

// TestGeneratorBadCalls: a generator called by name as a function, a function of one
// return called... and resources no node has: clear errors, at once.
func TestGeneratorBadCalls(t *testing.T) {
	ctx := shared
	_, err := Get(ctx, Call[int](ctx, "test.gen.count", []any{3}))
	if err == nil || !strings.Contains(err.Error(), `"test.gen.count" returns a stream of values (a generator), but was called for 1 value`) {
		t.Fatalf("Call of a generator: %v", err)
	}
	gen := genCount.Options(NumCPUs(1000)).Remote(ctx, V(3))
	if _, err := gen.Next(ctx); !errors.Is(err, ErrInfeasible) {
		t.Fatalf("Next of an infeasible generator: %v", err)
	}
	gen = genCount.Remote(context.Background(), V(3))
	if _, err := gen.Next(ctx); !errors.Is(err, ErrNotInitialized) {
		t.Fatalf("Next of a generator made without a runtime: %v", err)
	}
	// Next that would wait, through a ctx that is done, gives up.
	gen = genStall.Remote(ctx)
	defer gen.Close()
	if _, err := gen.Next(ctx); err != nil {
		t.Fatal(err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := gen.Next(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next through a cancelled ctx: %v", err)
	}
}

// TestGeneratorClose: Close gives back the items not consumed and stops the task.
func TestGeneratorClose(t *testing.T) {
	ctx := shared
	ended := genForeverEnded.Load()
	gen := genForever.Options(GeneratorBackpressure(2)).Remote(ctx)
	first, err := gen.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gen.Close()
	if _, err := gen.Next(ctx); !errors.Is(err, ErrGeneratorClosed) {
		t.Fatalf("Next after Close: %v", err)
	}
	eventually.True(t, 10*time.Second, "the closed generator's task to end", func() bool { return genForeverEnded.Load() > ended })
	if v, err := Get(ctx, first); err != nil || v != 0 {
		t.Fatalf("an item handed out before Close: %v, %v", v, err)
	}
	// A generator nobody holds is closed by the collector, and its task stops.
	ended = genForeverEnded.Load()
	func() {
		g := genForever.Options(GeneratorBackpressure(1)).Remote(ctx)
		if _, err := g.Next(ctx); err != nil {
			t.Fatal(err)
		}
	}()
	eventually.AfterGC(t, 10*time.Second, "an unreachable generator's task to end", func() bool { return genForeverEnded.Load() > ended })
}

// TestGeneratorLostItemRecreated: the spill file of a generator's second item is
// corrupted; a Get of it runs the generator again and reads the item it yields, while the
// first item keeps its value.
func TestGeneratorLostItemRecreated(t *testing.T) {
	ctx, err := Init(context.Background(), WithNumCPUs(2), WithObjectStoreMemory(4<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer Shutdown(ctx)
	const n = 128 << 10 // 1 MiB an item: in the store
	gen := genBig.Remote(ctx, V(n))
	a, err := gen.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := gen.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.Next(ctx); !errors.Is(err, ErrGeneratorDone) {
		t.Fatalf("end of the stream: %v", err)
	}
	runs := genBigRuns.Load()
	more := corruptOnceSpilled(t, ctx, b.ID(), n)
	y, err := Get(ctx, b)
	if err != nil || len(y) != n || y[0] != n || y[n-1] != 2*n-1 {
		t.Fatalf("a lost item: %d values, %v (want it recreated)", len(y), err)
	}
	if r := genBigRuns.Load() - runs; r != 1 {
		t.Errorf("the generator ran %d more times, want 1", r)
	}
	x, err := Get(ctx, a)
	if err != nil || len(x) != n || x[n-1] != n-1 {
		t.Fatalf("item 1 after item 2 was recreated: %d values, %v", len(x), err)
	}
	runtime.KeepAlive(more)
}

// TestGeneratorWaitingLendsItsCPU: a generator held by backpressure lends its CPU back,
// so on a node of one CPU the tasks its consumer runs between items still run.
func TestGeneratorWaitingLendsItsCPU(t *testing.T) {
	ctx, err := Init(context.Background(), WithNumCPUs(1))
	if err != nil {
		t.Fatal(err)
	}
	defer Shutdown(ctx)
	gen := genForever.Options(GeneratorBackpressure(1)).Remote(ctx)
	defer gen.Close()
	for i := range 3 {
		ref, err := gen.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wait, cancel := context.WithTimeout(ctx, 30*time.Second)
		v, err := Get(wait, square.Remote(ctx, ref))
		cancel()
		if err != nil || v != i*i {
			t.Fatalf("square(item %d) = %v, %v (with the generator holding the only CPU?)", i+1, v, err)
		}
	}
}
