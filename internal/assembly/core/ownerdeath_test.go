package core

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/actors"
	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// TestOwnerGoneAnswersAtOnce: once this runtime knows that a runtime died (ProcessGone),
// looking up a named non-detached actor it owned says the actor died with its owner
// (a *lifecycle.DiedError, cause OwnerDied) instead of registering a handle with the dead
// owner, and a handle decoded with a dead owner reads as lost, saying the owner died,
// without asking it (which waited borrowRegisterTimeout). A detached actor of the same
// owner is found as before.
func TestOwnerGoneAnswersAtOnce(t *testing.T) {
	h := newHarness(t)
	store := memstore.New(memstore.Options{})
	t.Cleanup(func() { store.Close() })
	table := &actors.Table{Store: store}
	h.c.cfg.Actors = &ActorConfig{Table: table,
		Info: func(string) (*pb.ActorInfo, bool) { return nil, false },
		PID:  func(string) *actor.PID { return nil }}
	const deadAddr = "127.0.0.1:9" // nothing answers there
	dead := &pb.PID{Address: deadAddr, Id: "core"}
	create := func(name string, detached bool) ids.ActorID {
		t.Helper()
		id := ids.NewActorID()
		info := &pb.ActorInfo{ActorId: id[:], Class: "test.C", Name: name, Namespace: "ns", Detached: detached, Owner: dead}
		if _, _, err := table.Create(context.Background(), info); err != nil {
			t.Fatal(err)
		}
		return id
	}
	nondet, det := create("nondet", false), create("det", true)
	ctx := context.Background()

	// Before the death is known, the lookup gives the owner to register with.
	if id, _, owner, err := h.c.LookupActor(ctx, "ns", "nondet"); err != nil || id != nondet || owner.GetAddress() != deadAddr {
		t.Fatalf("LookupActor before the owner's death: %v %v %v", id, owner, err)
	}
	h.c.OwnerGone(deadAddr, "n9") // unreachable: not known dead for good yet
	if _, _, owner, err := h.c.LookupActor(ctx, "ns", "nondet"); err != nil || owner.GetAddress() != deadAddr {
		t.Fatalf("LookupActor after the owner became unreachable: %v %v", owner, err)
	}
	h.c.ProcessGone(deadAddr)

	_, _, _, err := h.c.LookupActor(ctx, "ns", "nondet")
	var died *lifecycle.DiedError
	if !errors.As(err, &died) || died.Cause != lifecycle.CauseOwnerDied || !errors.Is(err, lifecycle.ErrActorDied) ||
		!strings.Contains(err.Error(), "owner died") || died.ActorID != nondet.String() {
		t.Fatalf("LookupActor of a dead owner's non-detached actor: %v, want a DiedError (OwnerDied) naming it", err)
	}
	if id, _, owner, err := h.c.LookupActor(ctx, "ns", "det"); err != nil || id != det || owner != nil {
		t.Fatalf("LookupActor of a dead owner's detached actor: %v %v %v, want the actor and no owner", id, owner, err)
	}

	obj := ids.ActorHandleID(nondet)
	h.c.Hold(obj, dead)
	_, err = h.get(obj)
	if err == nil || !strings.Contains(err.Error(), "died") {
		t.Fatalf("a handle held with a dead owner reads %v, want lost because its owner died", err)
	}
	h.c.ReleaseRef(obj, false)

	// A process registers at the dead one's address again (a reused port): its actors
	// are looked up as any others.
	h.c.ProcessBack(deadAddr)
	if _, _, owner, err := h.c.LookupActor(ctx, "ns", "nondet"); err != nil || owner.GetAddress() != deadAddr {
		t.Fatalf("LookupActor once a process is back at the address: %v %v", owner, err)
	}
}

// TestHoldOfAnExitedOwnerFailsAtOnce: a ref whose owner's process has exited, which this
// runtime has not heard of (another job's driver: no ProcessGone), reads as lost saying the
// owner has exited, as soon as a probe finds nothing listening at its address, instead of
// waiting out borrowRegisterTimeout and failing with "did not answer: future: timeout".
func TestHoldOfAnExitedOwnerFailsAtOnce(t *testing.T) {
	h := newHarness(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // the owner's process has exited: its port refuses connections
	owner := &pb.PID{Address: addr, Id: "owner-j2"}
	obj := ids.PutID(ids.NewRootTaskID(), 1)
	h.c.Hold(obj, owner)
	_, err = h.get(obj)
	var oe *ObjectError
	if !errors.As(err, &oe) || oe.Info.Kind != pb.ErrorInfo_OBJECT_LOST || !strings.Contains(err.Error(), "has exited") ||
		!strings.Contains(err.Error(), addr) || strings.Contains(err.Error(), "timeout") {
		t.Fatalf("a ref held with an exited owner reads %v, want lost because its owner at %s has exited", err, addr)
	}
	h.c.ReleaseRef(obj, false)
}

// TestHoldOfAKnownExitedOwnerDoesNotProbe: a ref whose owner the membership found exited
// (ProcessExited) reads as lost at once, naming the owner, without a probe of its address
// (here one that would never answer); once a process is back at the address
// (ProcessBack), an owner that does not answer is probed again.
func TestHoldOfAKnownExitedOwnerDoesNotProbe(t *testing.T) {
	h := newHarness(t)
	var dials atomic.Int32
	h.c.probeDial = func(network, address string, timeout time.Duration) (net.Conn, error) {
		dials.Add(1)
		return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
	}
	const addr = "127.0.0.1:9" // nothing answers the owner's asks there
	owner := &pb.PID{Address: addr, Id: "owner-exited"}
	h.c.ProcessExited(addr)
	obj := ids.PutID(ids.NewRootTaskID(), 1)
	h.c.Hold(obj, owner)
	_, err := h.get(obj)
	var oe *ObjectError
	if !errors.As(err, &oe) || oe.Info.Kind != pb.ErrorInfo_OBJECT_LOST || !strings.Contains(err.Error(), "has exited") ||
		!strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), owner.Id) {
		t.Fatalf("a ref held with an owner known exited reads %v, want lost because its owner %s at %s has exited", err, owner.Id, addr)
	}
	if n := dials.Load(); n != 0 {
		t.Fatalf("the owner known exited was probed %d times, want none", n)
	}
	h.c.ReleaseRef(obj, false)

	h.c.ProcessBack(addr)
	obj2 := ids.PutID(ids.NewRootTaskID(), 1)
	h.c.Hold(obj2, owner)
	if _, err := h.get(obj2); !strings.Contains(fmt.Sprint(err), "has exited") || dials.Load() == 0 {
		t.Fatalf("a ref of an owner not known exited: %v after %d probes, want lost once a probe was refused", err, dials.Load())
	}
	h.c.ReleaseRef(obj2, false)
}
