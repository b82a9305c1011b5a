package ray

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/pb"
)

// sentinelFailures make, inside a task, a nested task or actor call fail with a sentinel
// error, and return the error its Get gave. lost is the ref of an object made by Put whose
// spill file is corrupt (for "lost object"; zero otherwise).
var sentinelFailures = map[string]struct {
	sentinel error
	fail     func(ctx context.Context, lost ObjectRef[[]int64]) error
}{
	// A nested task whose argument's bytes are lost (Put, so no lineage to recreate them).
	"lost object": {ErrObjectLost, func(ctx context.Context, lost ObjectRef[[]int64]) error {
		_, err := Get(ctx, plusOne.Remote(ctx, lost))
		return err
	}},
	// The task's own Get of an object released before: ErrObjectLost itself.
	"released object": {ErrObjectLost, func(ctx context.Context, _ ObjectRef[[]int64]) error {
		r, err := Put(ctx, "gone soon")
		if err != nil {
			return fmt.Errorf("Put: %v", err)
		}
		r.Release()
		_, err = Get(ctx, r)
		return err
	}},
	// A call to an actor killed for good.
	"killed actor": {ErrActorDied, func(ctx context.Context, _ ObjectRef[[]int64]) error {
		h := tallyClass.Remote(ctx)
		if _, err := Get(ctx, tallyAdd.Remote(ctx, h, V(1))); err != nil {
			return fmt.Errorf("a call to the live actor: %v", err)
		}
		if err := Kill(ctx, h, true); err != nil {
			return fmt.Errorf("Kill: %v", err)
		}
		_, err := Get(ctx, tallyAdd.Remote(ctx, h, V(1)))
		return err
	}},
	// A nested task cancelled (queued or running).
	"cancelled task": {ErrCancelled, func(ctx context.Context, _ ObjectRef[[]int64]) error {
		r := waitForCancel.Remote(ctx)
		if err := Cancel(ctx, r); err != nil {
			return fmt.Errorf("Cancel: %v", err)
		}
		_, err := Get(ctx, r)
		return err
	}},
	// A nested task in a placement group removed before it ran.
	"removed group": {ErrPlacementGroupRemoved, func(ctx context.Context, _ ObjectRef[[]int64]) error {
		pg, err := PlacementGroup(ctx, []Bundle{{"CPU": 0.5}}, StrategyPack)
		if err != nil {
			return fmt.Errorf("PlacementGroup: %v", err)
		}
		if err := pg.Ready(ctx); err != nil {
			return fmt.Errorf("Ready: %v", err)
		}
		if err := pg.Remove(ctx); err != nil {
			return fmt.Errorf("Remove: %v", err)
		}
		_, err = Get(ctx, lookAround.Options(PlacementGroupBundle(pg, 0), NumCPUs(0.5)).Remote(ctx))
		return err
	}},
	// A nested task whose result is larger than the node's whole object store (4 MiB in
	// the runtime of this case).
	"too large result": {ErrObjectTooLarge, func(ctx context.Context, _ ObjectRef[[]int64]) error {
		_, err := Get(ctx, big.Remote(ctx, V(768<<10))) // 6 MiB of int64
		return err
	}},
}

var (
	waitForCancel = Task0("test.waitForCancel", func(ctx context.Context) (int, error) {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Minute):
			return 0, errors.New("not cancelled in a minute")
		}
	})
	// sentinelLevel1 returns the error of the nested failure how, unchanged.
	sentinelLevel1 = Task2("test.sentinelLevel1", func(ctx context.Context, how string, lost refBox) (int, error) {
		err := sentinelFailures[how].fail(ctx, lost.R)
		if err == nil {
			return 0, errors.New("the nested failure did not fail")
		}
		return 0, err
	})
	// sentinelLevel2 returns sentinelLevel1's error, wrapped.
	sentinelLevel2 = Task2("test.sentinelLevel2", func(ctx context.Context, how string, lost refBox) (int, error) {
		_, err := Get(ctx, sentinelLevel1.Remote(ctx, V(how), V(lost)))
		return 0, fmt.Errorf("level 2: %w", err)
	})
	// sentinelMethod is sentinelLevel1 as an actor method.
	sentinelMethod = Method2(tallyClass, "Sentinel", func(_ *tally, ctx context.Context, how string, lost refBox) (int, error) {
		return Get(ctx, sentinelLevel1.Remote(ctx, V(how), V(lost)))
	})
)

// allSentinels are the sentinels a task's failure can match.
var allSentinels = []error{ErrCancelled, ErrInfeasible, ErrUnknownFunction, ErrObjectLost, ErrActorDied,
	ErrObjectTooLarge, ErrPlacementGroupRemoved, ErrGCSFull, ErrClusterLost}

// checkNestedSentinel runs the nested failure how one and two levels down, and checks that
// the driver's error is a *TaskError that matches its sentinel and no other.
func checkNestedSentinel(t *testing.T, ctx context.Context, how string, lost ObjectRef[[]int64]) {
	t.Helper()
	want := sentinelFailures[how].sentinel
	check := func(where string, err error) {
		t.Helper()
		var te *TaskError
		if !errors.As(err, &te) {
			t.Errorf("%s, %s: %v, want a *TaskError", how, where, err)
			return
		}
		t.Logf("%s, %s: %v", how, where, err)
		for _, s := range allSentinels {
			if got := errors.Is(err, s); got != (s == want) {
				t.Errorf("%s, %s: errors.Is(err, %q) = %v, want %v", how, where, s, got, s == want)
			}
		}
	}
	box := V(refBox{R: lost})
	for _, f := range []*Func2[string, refBox, int]{sentinelLevel1, sentinelLevel2} {
		_, err := Get(ctx, f.Remote(ctx, V(how), box))
		check(f.Name(), err)
	}
	// An actor method that returns sentinelLevel1's error unchanged.
	_, err := Get(ctx, sentinelMethod.Remote(ctx, tallyClass.Remote(ctx), V(how), box))
	check("an actor method", err)
}

// TestSentinelsThroughNesting: a task that returns the error a nested task's or actor
// call's Get gave it (unchanged, or wrapped with %w a level up) fails with a *TaskError
// that matches that failure's sentinel, and no other, as Ray's RayTaskError keeps its
// cause.
func TestSentinelsThroughNesting(t *testing.T) {
	ctx := timeout(t)
	for _, how := range []string{"released object", "killed actor", "cancelled task", "removed group"} {
		checkNestedSentinel(t, ctx, how, ObjectRef[[]int64]{})
	}
	// A runtime of a small store, whose spill files the test can corrupt.
	ctx, err := Init(context.Background(), WithNumCPUs(2), WithObjectStoreMemory(4<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer Shutdown(ctx)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	checkNestedSentinel(t, ctx, "too large result", ObjectRef[[]int64]{})
	lost := corruptPut(t, ctx)
	checkNestedSentinel(t, ctx, "lost object", lost)
}

// corruptPut puts a 2 MiB object into ctx's runtime of a 4 MiB store, has it spilled, and
// corrupts its spill file: its bytes are lost, and as Put made it, nothing recreates them.
func corruptPut(t *testing.T, ctx context.Context) ObjectRef[[]int64] {
	t.Helper()
	const elems = 256 << 10 // 2 MiB
	put, err := Put(ctx, make([]int64, elems))
	if err != nil {
		t.Fatal(err)
	}
	// Two more objects push it out to disk.
	var more []ObjectRef[[]int64]
	for range 2 {
		r, err := Put(ctx, make([]int64, elems))
		if err != nil {
			t.Fatal(err)
		}
		more = append(more, r)
	}
	spill := filepath.Join(nodeOf(ctx).Dir(), "spill")
	var path string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if path = spillFileOf(spill, put.ID()); path != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("object %s was not spilled", put.ID())
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(more)
	return put
}

// TestTaskErrorCausesNotText: a *TaskError matches the sentinels its wire form's causes
// name, several at once (an error that joins two failures), and not one whose text its
// message only quotes (matching by text took an application error that said "sched:
// infeasible: " for ErrInfeasible).
func TestTaskErrorCausesNotText(t *testing.T) {
	quoted := fromInfo(&pb.ErrorInfo{Kind: pb.ErrorInfo_APPLICATION, Function: "f",
		Message: "parse: " + ErrInfeasible.Error() + ": no, " + ErrUnknownFunction.Error() + ": a plain failure"})
	for _, s := range allSentinels {
		if errors.Is(quoted, s) {
			t.Errorf("an application error quoting sentinels' text, %q, matches %q", quoted, s)
		}
	}
	joined := fmt.Errorf("both: %w", errors.Join(ErrActorDied, fmt.Errorf("read: %w", ErrObjectLost)))
	causes := causesOf(joined)
	if want := []pb.ErrorInfo_Kind{pb.ErrorInfo_OBJECT_LOST, pb.ErrorInfo_ACTOR_DIED}; !slices.Equal(causes, want) {
		t.Fatalf("causes of %q: %v, want %v", joined, causes, want)
	}
	te := fromInfo(&pb.ErrorInfo{Kind: pb.ErrorInfo_APPLICATION, Function: "f", Message: joined.Error(), Causes: causes})
	for _, s := range allSentinels {
		if got, want := errors.Is(te, s), s == ErrActorDied || s == ErrObjectLost; got != want {
			t.Errorf("a task that returned %q: errors.Is(err, %q) = %v, want %v", joined, s, got, want)
		}
	}
	// Returned unchanged by another task, it keeps them.
	if again := causesOf(te); !slices.Equal(again, causes) {
		t.Errorf("causes of the *TaskError: %v, want %v", again, causes)
	}
}
