package ray

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestActorWaitingForResourcesSaysWhy: an actor whose resources are held by another
// actor stays pending, and its state says why (what it waits for, on which node, that
// they are in use, what is free), in its Detail and in its history; once the other
// actor is gone it starts, and the reason is gone with it.
func TestActorWaitingForResourcesSaysWhy(t *testing.T) {
	ctx := timeout(t)
	holder := tallyClass.Remote(ctx, Resources(map[string]float64{"accel": 1}))
	if _, err := Get(ctx, tallyAdd.Remote(ctx, holder, V(1))); err != nil {
		t.Fatal(err)
	}
	waiter := tallyClass.Remote(ctx, Resources(map[string]float64{"accel": 1}))
	if err := waiter.Err(); err != nil {
		t.Fatal(err)
	}
	var st ActorState
	for deadline := time.Now().Add(20 * time.Second); ; {
		var err error
		if st, err = GetActorState(ctx, waiter); err != nil {
			t.Fatal(err)
		}
		if st.Detail != "" || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st.Phase != ActorPending {
		t.Fatalf("the second actor needing the only accel: %+v, want Pending", st)
	}
	for _, want := range []string{"waiting for resources {accel=1} on node " + st.Node, "in use by other tasks or actors", "free there now {CPU=", "accel=1}"} {
		if !strings.Contains(st.Detail, want) {
			t.Errorf("the pending actor's detail %q does not say %q", st.Detail, want)
		}
	}
	if last := st.History[len(st.History)-1]; last.Phase != ActorPending || last.Detail != st.Detail {
		t.Errorf("the pending actor's history ends with %+v, want the start of its wait", last)
	}
	t.Log(st.Detail)
	if err := Kill(ctx, holder, true); err != nil {
		t.Fatal(err)
	}
	if n, err := Get(ctx, tallyAdd.Remote(ctx, waiter, V(2))); err != nil || n != 2 {
		t.Fatalf("a call on the actor once the accel was free: %v, %v", n, err)
	}
	st, err := GetActorState(ctx, waiter)
	if err != nil {
		t.Fatal(err)
	}
	if st.Phase != ActorAlive || st.Detail != "" {
		t.Fatalf("started, the actor's state is %+v, want Alive with no detail", st)
	}
	Kill(context.WithoutCancel(ctx), waiter, true)
}
