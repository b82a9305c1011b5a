package ray

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// The tasks of the recursive Cancel tests: crTop submits crMid (which submits crLeaf, a
// grandchild) and crPending, which waits for an argument the test holds back; the leaf
// runs until its gate opens or its ctx ends, and records which.
var (
	crLeaf = Task1("test.cancelrec.leaf", func(ctx context.Context, key string) (string, error) {
		crNote(key, "started")
		select {
		case <-gateOf(key):
			crNote(key, "finished")
			return key, nil
		case <-ctx.Done():
			crNote(key, "cancelled")
			return "", ctx.Err()
		}
	})
	crMid = Task1("test.cancelrec.mid", func(ctx context.Context, key string) (string, error) {
		return Get(ctx, crLeaf.Remote(ctx, V(key+"/leaf")))
	})
	crPending = Task2("test.cancelrec.pending", func(_ context.Context, dep string, key string) (string, error) {
		crNote(key, "started")
		return dep, nil
	})
	crTop = Task2("test.cancelrec.top", func(ctx context.Context, dep ObjectRef[string], key string) (string, error) {
		p := crPending.Remote(ctx, dep, V(key+"/pending"))
		crNote(key+"/pending", "task "+p.ID()[:32])
		return Get(ctx, crMid.Remote(ctx, V(key)))
	})
	crNotes sync.Map // key -> chan string: what the tasks of key did
)

func crChan(key string) chan string {
	ch, _ := crNotes.LoadOrStore(key, make(chan string, 8))
	return ch.(chan string)
}

func crNote(key, what string) { crChan(key) <- what }

// crNext waits (bounded) for the next thing the tasks of key did.
func crNext(t *testing.T, key, want string) string {
	t.Helper()
	select {
	case got := <-crChan(key):
		return got
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: no %q within 20s", key, want)
		return ""
	}
}

func availCPU(t *testing.T, ctx context.Context) float64 {
	t.Helper()
	ar, err := AvailableResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return ar["CPU"]
}

// TestCancelRecursive: Cancel of a running task cancels the tasks it submitted (a running
// child and its running child, a child waiting for its argument), as Ray's ray.cancel
// (recursive=True by default): the running ones see their ctx end and give their CPU back,
// the waiting one never runs.
func TestCancelRecursive(t *testing.T) {
	ctx := timeout(t)
	key := uniqueName(t)
	leaf, pending := key+"/leaf", key+"/pending"
	depOpen := false
	t.Cleanup(func() {
		close(gateOf(leaf))
		if !depOpen {
			close(gateOf(key + "/dep"))
		}
	})
	before := availCPU(t, ctx)
	dep := blockUntil.Options(NumCPUs(0)).Remote(ctx, V(key+"/dep")) // held back until the end
	top := crTop.Remote(ctx, V(dep), V(key))
	if got := crNext(t, leaf, "started"); got != "started" {
		t.Fatalf("leaf: %s", got)
	}
	pendingTask := crNext(t, pending, "task")[len("task "):]
	if err := Cancel(ctx, top); err != nil {
		t.Fatal(err)
	}
	if _, err := Get(ctx, top); !errors.Is(err, ErrCancelled) {
		t.Fatalf("Get of the cancelled task: %v", err)
	}
	// The grandchild (the child of the child) sees its ctx end.
	if got := crNext(t, leaf, "cancelled"); got != "cancelled" {
		t.Fatalf("grandchild of a cancelled task: %s, want cancelled", got)
	}
	// The CPUs of the three tasks come back.
	for deadline := time.Now().Add(20 * time.Second); availCPU(t, ctx) < before; {
		if time.Now().After(deadline) {
			t.Fatalf("available CPU %v, want %v again after the cancellation", availCPU(t, ctx), before)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The child waiting for its argument is cancelled and never runs, even once its
	// argument is ready.
	var state string
	for deadline := time.Now().Add(20 * time.Second); state != TaskCancelled; {
		ts, _, err := ListTasks(ctx, TaskFilter{TaskID: pendingTask})
		if err != nil {
			t.Fatal(err)
		}
		if len(ts) > 0 {
			state = ts[0].State
		}
		if state != TaskCancelled && time.Now().After(deadline) {
			t.Fatalf("waiting child of a cancelled task: state %q, want %s", state, TaskCancelled)
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(gateOf(key + "/dep"))
	depOpen = true
	if v := mustGet(t, ctx, dep); v != key+"/dep" {
		t.Fatalf("dep: %q", v)
	}
	select {
	case got := <-crChan(pending):
		t.Fatalf("the cancelled waiting child ran: %s", got)
	default:
	}
}

// TestCancelNonRecursive: Cancel(ref, NonRecursive()) cancels the task alone (Ray's
// recursive=False): the grandchild runs on and finishes.
func TestCancelNonRecursive(t *testing.T) {
	ctx := timeout(t)
	key := uniqueName(t)
	leaf := key + "/leaf"
	leafOpen := false
	t.Cleanup(func() {
		if !leafOpen {
			close(gateOf(leaf))
		}
		close(gateOf(key + "/dep"))
	})
	dep := blockUntil.Options(NumCPUs(0)).Remote(ctx, V(key+"/dep"))
	top := crTop.Remote(ctx, V(dep), V(key))
	if got := crNext(t, leaf, "started"); got != "started" {
		t.Fatalf("leaf: %s", got)
	}
	if err := Cancel(ctx, top, NonRecursive()); err != nil {
		t.Fatal(err)
	}
	if _, err := Get(ctx, top); !errors.Is(err, ErrCancelled) {
		t.Fatalf("Get of the cancelled task: %v", err)
	}
	// A recursive cancellation would reach the grandchild by now (it needs no more than
	// the messages this sleep lets through); NonRecursive leaves it running.
	time.Sleep(500 * time.Millisecond)
	close(gateOf(leaf))
	leafOpen = true
	if got := crNext(t, leaf, "finished"); got != "finished" {
		t.Fatalf("grandchild of a task cancelled with NonRecursive: %s, want finished", got)
	}
}
