package core

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// putOfATask submits a task whose worker (another process, the owner at owner) put an
// object and returned its ref nested in the task's result, as a Ray task returning
// ray.Put's ref does: this runtime borrows the Put (adopted from the result) and holds the
// lineage record of the task that put it, the Put ID's task. It returns the Put's ID once
// the task's result is here.
func putOfATask(h *harness, owner *pb.PID) ids.ObjectID {
	h.t.Helper()
	ret := h.submit(Arg{Data: []byte("n")})
	s := h.spec()
	tid, err := ids.TaskIDFromBytes(s.TaskId)
	if err != nil {
		h.t.Fatal(err)
	}
	put := ids.PutID(tid, 1)
	h.reply(&pb.TaskResult{TaskId: s.TaskId, Data: []byte("holder"), Nested: [][]byte{RefPayload(put, owner)}})
	if _, err := h.get(ret); err != nil {
		h.t.Fatalf("the task's result: %v", err)
	}
	if !h.c.borrowed(put) || h.c.refs.Spec(tid) == nil {
		h.t.Fatalf("the Put is borrowed: %v, its task's record is held: %v; want both", h.c.borrowed(put), h.c.refs.Spec(tid) != nil)
	}
	return put
}

// exitedAddress returns an address where nothing listens any more (a process that exited).
func exitedAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// wantOwnerDied fails t unless err is an object-lost error of id saying that its owner died.
func wantOwnerDied(t *testing.T, what string, id ids.ObjectID, err error) {
	t.Helper()
	var oe *ObjectError
	if !errors.As(err, &oe) || oe.Info.GetKind() != pb.ErrorInfo_OBJECT_LOST || !strings.Contains(err.Error(), OwnerDiedText) ||
		!strings.Contains(err.Error(), id.String()) {
		t.Fatalf("%s: %v, want object %s lost because its owner died (OBJECT_LOST, %q)", what, err, id, OwnerDiedText)
	}
}

// TestOwnerGoneFailsAnUnresolvedPutOfAHeldTask: a task's worker puts an object and returns
// its ref; its process dies before it answered this runtime's request for the value, so
// the borrowed object is still pending here when the membership reports the owner gone.
// The adoption fails it (a Put cannot be made again), and a Get says its owner died. It
// stayed pending for good, a Get hanging until its context ended: the adoption took the
// record of the task that put it (which this runtime holds: it submitted that task) for
// the Put's own, as if the object were being recreated.
func TestOwnerGoneFailsAnUnresolvedPutOfAHeldTask(t *testing.T) {
	h := newHarness(t)
	addr := exitedAddress(t)
	put := putOfATask(h, &pb.PID{Address: addr, Id: "owner-w1"})
	if _, ready, known := h.c.mem.Get(put); !known || ready {
		t.Fatalf("the borrowed Put before its owner answered: known %v, ready %v; want pending", known, ready)
	}
	h.c.OwnerGone(addr, "n9")
	_, err := h.get(put) // bounded: 5 s
	wantOwnerDied(t, "Get of a pending Put whose owner died", put, err)
	if !strings.Contains(err.Error(), "made by Put") {
		t.Fatalf("Get of a pending Put whose owner died: %v, want it to say that an object made by Put cannot be made again", err)
	}
}

// resolveInStore answers the borrow of put as its owner would: its bytes are in the store
// of node n1 (this runtime's), and waits until the value is here.
func resolveInStore(h *harness, put ids.ObjectID) {
	h.t.Helper()
	h.c.root.Send(h.c.owner, &pb.ObjectResolved{ObjectId: put[:], InStore: true, NodeId: "n1", Size: 1 << 20})
	for i := 0; ; i++ {
		if _, ready, _ := h.c.mem.Get(put); ready {
			return
		}
		if i == 500 {
			h.t.Fatal("the owner's answer did not resolve the borrowed Put")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLostBytesOfAnExitedOwnersPut: a borrowed Put whose value this runtime resolved (its
// bytes in a store) cannot be read any more, and its owner's process has exited (its
// address refuses connections; the membership has not reported it). The Get does not ask
// the owner for the value again (nothing would answer: the object stayed pending for
// reresolveWait, 5 minutes); it waits a bounded while for the owner's adoption, then fails
// saying that the owner died, matching ray.ErrOwnerDied, with the read's error after it.
func TestLostBytesOfAnExitedOwnersPut(t *testing.T) {
	h := newHarness(t)
	addr := exitedAddress(t)
	owner := &pb.PID{Address: addr, Id: "owner-w2"}
	put := putOfATask(h, owner)
	// The owner's answer: the bytes are in this node's store, which does not have them
	// (as a store on a node whose process died would not answer).
	resolveInStore(h, put)
	ctx, cancel := context.WithTimeout(context.Background(), 2*orphanWait+10*time.Second)
	defer cancel()
	_, err := h.tc.Get(ctx, put)
	wantOwnerDied(t, "Get of a lost Put whose owner exited", put, err)
	if !strings.Contains(err.Error(), "has exited") || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "not in the store") {
		t.Fatalf("Get of a lost Put whose owner exited: %v, want it to say that the process at %s has exited, and why the read failed", err, addr)
	}
}

// TestPutFailedByTheAdoptionDuringARead: a borrowed Put whose value this runtime resolved
// is read while its owner dies: the membership reports the owner gone, and the adoption of
// its objects fails the Put (nothing makes it again), before the read finds its bytes
// gone. The Get fails with the adoption's error, which says that the owner died and why
// the object cannot be made again, as a Get started after it does. It returned the read's
// error ("object lost: ... is not in the store of node n1"), of the value the adoption had
// replaced, with no word of the owner (not ray.ErrOwnerDied).
func TestPutFailedByTheAdoptionDuringARead(t *testing.T) {
	addr := exitedAddress(t)
	var (
		target atomic.Pointer[ids.ObjectID]
		h      *harness
	)
	h = newHarnessStore(t, func(sys *actor.ActorSystem, store *actor.PID) *actor.PID {
		// The store: the owner dies while it reads target (then it has not got it). The
		// owner's node is n1 (whose store held the Put's bytes: a worker process's own),
		// so the adoption takes the bytes there for lost.
		return sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
			if m, ok := c.Message().(*pb.GetObject); ok {
				if id := target.Load(); id != nil && string(m.ObjectId) == string(id[:]) {
					h.c.OwnerGone(addr, "n1")
				}
			}
			if _, system := c.Message().(actor.SystemMessage); !system {
				if _, auto := c.Message().(actor.AutoReceiveMessage); !auto {
					c.Forward(store)
				}
			}
		}))
	})
	put := putOfATask(h, &pb.PID{Address: addr, Id: "owner-w3"})
	resolveInStore(h, put)
	target.Store(&put)
	_, err := h.get(put) // bounded: 5 s
	wantOwnerDied(t, "Get of a Put whose owner died while it was read", put, err)
	if !strings.Contains(err.Error(), "made by Put") {
		t.Fatalf("Get of a Put whose owner died while it was read: %v, want the adoption's error (an object made by Put cannot be made again)", err)
	}
}
