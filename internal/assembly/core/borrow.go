package core

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/ask"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/lineage"
	"github.com/ray-go/ray/objects"
)

// Borrowing: object refs nested inside values (Ray's ownership protocol, simplified).
//
// An ObjectRef encoded inside a value carries the object ID and its owner's PID
// (pb.RefPayload). A runtime that decodes one and is not the owner becomes a borrower: it
// registers with the owner (AddBorrower, answered before the decoding returns), keeps a
// count of its own handles, resolves the value through the owner (ResolveObject, then the
// bytes from the node holding them), and tells the owner when its last handle is gone
// (RemoveBorrower). The owner counts each borrower as one local reference, so the object
// lives while any borrower does.
//
// What keeps an object alive between the encoding and the borrower's registration is the
// encoder's pin: refs nested in a task's arguments are pinned by the submitter until the
// task finishes (its arguments are decoded, and borrowers registered, before it returns);
// refs nested in a Put value are pinned while the Put object lives; refs nested in a task's
// return value are registered by the worker on the submitter's behalf before it answers
// (TaskResult.nested), and the submitter holds them while the return object lives.

// borrowRegisterTimeout bounds the wait for an owner to acknowledge a new borrower.
const borrowRegisterTimeout = 10 * time.Second

// Pins of refs nested in values (objects.Borrows pins): an owned ref holds a local
// reference, a borrowed one a borrow; both are given back by unpin. A ref owned by this
// runtime that a worker returned to it was counted as a local reference when the worker
// registered it (addLender to self), and is given back the same way. The tables are
// objects.Borrows (partitioned by object ID); this file is the protocol's messages.

// Nested is an object ref found inside an encoded value: its ID and owner.
type Nested = objects.Nested

// ParseNested decodes RefPayloads.
func ParseNested(payloads [][]byte) ([]Nested, error) {
	out := make([]Nested, 0, len(payloads))
	for _, p := range payloads {
		var rp pb.RefPayload
		if err := proto.Unmarshal(p, &rp); err != nil {
			return nil, fmt.Errorf("core: a nested object ref is corrupt: %w", err)
		}
		id, err := ids.ObjectIDFromBytes(rp.ObjectId)
		if err != nil || rp.Owner == nil {
			return nil, fmt.Errorf("core: a nested object ref is corrupt: %v", err)
		}
		out = append(out, Nested{ID: id, Owner: rp.Owner})
	}
	return out, nil
}

// RefPayload encodes the wire form of a ref to id owned by this runtime's owner (or owner).
func RefPayload(id ids.ObjectID, owner *pb.PID) []byte {
	b, _ := proto.Marshal(&pb.RefPayload{ObjectId: id[:], Owner: owner})
	return b
}

// OwnerPID is this runtime's owner actor (the owner recorded in the refs it creates).
func (c *Core) OwnerPID() *pb.PID { return c.ownerW }

func (c *Core) isSelf(p *pb.PID) bool {
	return p != nil && p.Address == c.ownerW.Address && p.Id == c.ownerW.Id
}

func pidKey(p *pb.PID) string { return p.Address + "/" + p.Id }

// Hold takes one reference to id for a handle decoded in this runtime: a local reference
// if this runtime owns it, else a borrow (registering with the owner on the first one,
// waiting for its acknowledgement). A borrowed object the owner no longer knows reads as
// lost.
func (c *Core) Hold(id ids.ObjectID, owner *pb.PID) {
	if c.isSelf(owner) {
		c.refs.AddLocal(id)
		return
	}
	e, first := c.borrows.Take(id, owner)
	if !first {
		<-e.Registered
		return
	}
	c.mem.Create(id)
	defer close(e.Registered)
	if c.ownerGone(owner.Address) { // asking would only wait for borrowRegisterTimeout
		c.lostBorrow(id, fmt.Sprintf("its owner died (%s)", pidKey(owner)))
		return
	}
	if c.ownerExited(owner.Address) { // known without asking it or probing its address
		c.lostBorrow(id, ownerExitedWhy(owner))
		return
	}
	ownerPID := actor.NewPID(owner.Address, owner.Id)
	res, err, exited := c.askOwner(ownerPID, &pb.AddBorrower{ObjectId: id[:], Borrower: c.ownerW})
	ack, ok := res.(*pb.BorrowerAck)
	switch {
	case exited:
		c.lostBorrow(id, ownerExitedWhy(owner))
	case err != nil:
		c.lostBorrow(id, fmt.Sprintf("its owner %s did not answer: %v", pidKey(owner), err))
	case !ok || !ack.Known:
		c.lostBorrow(id, fmt.Sprintf("its owner %s has freed it", pidKey(owner)))
	default:
		c.root.Send(ownerPID, &pb.ResolveObject{ObjectId: id[:], ReplyTo: c.ownerW})
	}
}

// OwnerDiedText is in the message of every object lost because its owner died (a borrow
// of a dead or exited owner, an adoption that could not make it again): ray.ErrOwnerDied
// matches such errors by it.
const OwnerDiedText = lineage.OwnerDied

// ownerExitedWhy says why a ref of owner, whose process has exited, is lost.
func ownerExitedWhy(owner *pb.PID) string {
	return fmt.Sprintf("its owner died: the process at %s that created it (%s) has exited: "+
		"nothing listens at its address any more, and a ref lives only as long as the process that owns it", owner.Address, owner.Id)
}

// ownerProbeAfter is how long Hold waits for an owner's answer before it checks whether
// anything listens at the owner's address at all.
var ownerProbeAfter = 300 * time.Millisecond

// askOwner asks the owner for msg, waiting up to borrowRegisterTimeout. An owner that has
// not answered within ownerProbeAfter, or whose ask failed, is checked: when the membership
// found its process exited meanwhile (ProcessExited), or else a probe finds that its
// address refuses connections (the process has exited, and no process took its port), it
// reports exited at once rather than waiting out the timeout (Ray's OwnerDiedError is
// immediate too).
func (c *Core) askOwner(owner *actor.PID, msg proto.Message) (any, error, bool) {
	type answer struct {
		res any
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		res, err := ask.Request(c.root, owner, msg, borrowRegisterTimeout)
		ch <- answer{res, err}
	}()
	probe := time.NewTimer(ownerProbeAfter)
	defer probe.Stop()
	for {
		select {
		case a := <-ch:
			// A failed ask (a dead letter, a timeout) says why better when nothing
			// listens at the owner's address.
			return a.res, a.err, a.err != nil && c.ownerExitedOrRefuses(owner.Address)
		case <-probe.C:
			if c.ownerExitedOrRefuses(owner.Address) {
				return nil, nil, true
			}
		}
	}
}

// ownerExitedOrRefuses reports whether the process at address has exited: the membership
// found so (ProcessExited), or, when it has not, a TCP connection to address is refused.
func (c *Core) ownerExitedOrRefuses(address string) bool {
	return c.ownerExited(address) || addressRefuses(c.probeDial, address)
}

// addressRefuses reports whether a TCP connection to address (made by dial, nil:
// net.DialTimeout) is refused: nothing listens there. An address that is not host:port, or
// a connection that times out or succeeds, is not (the owner may be slow or unreachable
// for a while).
func addressRefuses(dial func(network, address string, timeout time.Duration) (net.Conn, error), address string) bool {
	if _, _, err := net.SplitHostPort(address); err != nil {
		return false
	}
	if dial == nil {
		dial = net.DialTimeout
	}
	conn, err := dial("tcp", address, 2*time.Second)
	if err == nil {
		conn.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// adopt takes one borrow that another runtime registered on this one's behalf (refs
// nested in a task's return value).
func (c *Core) adopt(n Nested) {
	if c.isSelf(n.Owner) {
		return // the worker registered us as a borrower of our own object: the lender count holds it
	}
	if c.borrows.Adopt(n.ID, n.Owner) {
		c.mem.Create(n.ID)
		c.root.Send(actor.NewPID(n.Owner.Address, n.Owner.Id), &pb.ResolveObject{ObjectId: n.ID[:], ReplyTo: c.ownerW})
	}
}

// reresolve asks the owner of borrowed object id again for its value: v, the value this
// runtime had, is in a store whose copy could not be read (the node that held it died). A
// borrower cannot recreate the object; its owner can, and may have already (then its
// value is elsewhere now). Without this, the borrower kept reading the dead node for as
// long as it borrowed the object (a task whose argument refs were recreated by their owner
// failed again on each retry). The entry is pending until the owner answers; an owner that
// does not answer within reresolveWait (it died too: its adoption sets the entry, or this
// bound does) leaves the object lost. An owner whose process has exited (the membership
// found so, or its address refuses connections: the usual case when the owner's own store
// held the bytes) is not asked. It reports whether a request is under way. It runs only
// after a failed read: the probe of the owner's address costs no Get that reads.
func (c *Core) reresolve(id ids.ObjectID, v objects.Value) bool {
	e, ok := c.borrows.Get(id)
	if !ok || e.Owner == nil || !v.InStore || v.Node == "" {
		return false
	}
	if c.ownerExitedOrRefuses(e.Owner.GetAddress()) {
		// Nothing would answer: the Get waits for the adoption of the dead owner's objects
		// instead (lineage.Get: Refused, then AwaitAdoption), which recreates a task's
		// return and fails a Put. Asked, the entry stayed pending for reresolveWait.
		return false
	}
	if !c.mem.Reset(id) {
		_, ready, known := c.mem.Get(id)
		return known && !ready // another Get asked already
	}
	c.root.Send(actor.NewPID(e.Owner.Address, e.Owner.Id), &pb.ResolveObject{ObjectId: id[:], ReplyTo: c.ownerW, Lost: true, LostNode: string(v.Node)})
	time.AfterFunc(reresolveWait, func() {
		if _, ready, known := c.mem.Get(id); known && !ready {
			c.lostBorrow(id, fmt.Sprintf("its bytes on node %s are lost, and its owner %s did not answer within %v", v.Node, pidKey(e.Owner), reresolveWait))
		}
	})
	return true
}

// reresolveWait bounds the wait for an owner's answer to reresolve, which may include
// running the object's task again.
var reresolveWait = 5 * time.Minute

func (c *Core) lostBorrow(id ids.ObjectID, why string) {
	c.mem.Set(id, objects.Value{Err: &pb.ErrorInfo{Kind: pb.ErrorInfo_OBJECT_LOST,
		Message: fmt.Sprintf("object %s is lost: %s", id, why)}})
}

// borrowed reports whether id is borrowed by this runtime.
func (c *Core) borrowed(id ids.ObjectID) bool {
	_, ok := c.borrows.Get(id)
	return ok
}

// Borrowed returns how many objects this runtime borrows (tests and reports).
func (c *Core) Borrowed() int { return c.borrows.Borrowed() }

// Lenders returns how many borrowers hold id, as its owner knows (tests).
func (c *Core) Lenders(id ids.ObjectID) int { return c.borrows.Lenders(id) }

// unborrow drops one borrow of id; the last one tells the owner. It reports false when id
// is not borrowed (so the caller treats it as an owned object).
func (c *Core) unborrow(id ids.ObjectID) bool {
	e, last, borrowed := c.borrows.Drop(id)
	if !borrowed {
		return false
	}
	if last {
		c.mem.Delete(id)
		oid := id // a copy for the message: id stays on the stack of every release
		c.root.Send(actor.NewPID(e.Owner.Address, e.Owner.Id), &pb.RemoveBorrower{ObjectId: oid[:], Borrower: c.ownerW})
	}
	return true
}

// pin keeps the nested refs alive for outer (a Put object, a return object, or a task's
// arguments keyed by its return object).
func (c *Core) pin(outer ids.ObjectID, nested []Nested) {
	if len(nested) == 0 {
		return
	}
	for _, n := range nested {
		if c.isSelf(n.Owner) {
			c.refs.AddLocal(n.ID)
		} else if !c.borrows.More(n.ID) {
			c.Hold(n.ID, n.Owner)
		}
	}
	c.borrows.Pin(outer, nested)
}

// pinAdopted keeps refs a worker registered for this runtime while outer lives.
func (c *Core) pinAdopted(outer ids.ObjectID, nested []Nested) {
	for _, n := range nested {
		if !c.isSelf(n.Owner) {
			c.adopt(n)
		}
	}
	c.borrows.Pin(outer, nested)
}

// unpin releases what pin (or pinAdopted) holds for outer.
func (c *Core) unpin(outer ids.ObjectID) {
	for _, n := range c.borrows.Unpin(outer) {
		if c.isSelf(n.Owner) || !c.unborrow(n.ID) {
			c.free(c.refs.RemoveLocal(n.ID))
		}
	}
}

// dropLender removes borrower key from id's lenders and its reference.
func (c *Core) dropLender(id ids.ObjectID, key string) {
	if c.borrows.DropLender(id, key) {
		c.free(c.refs.RemoveLocal(id))
	}
}

// Escape registers the runtime that owns a task (spec.owner) as a borrower of the refs
// nested in the task's return value, before the result is sent: objects this runtime owns
// get a lender entry, borrowed ones are registered with their owners. It returns the
// payloads for TaskResult.nested.
func (c *Core) Escape(nested []Nested, to *pb.PID) [][]byte {
	out := make([][]byte, 0, len(nested))
	for _, n := range nested {
		if c.isSelf(n.Owner) {
			c.addLender(n.ID, to)
		} else {
			owner := actor.NewPID(n.Owner.Address, n.Owner.Id)
			_, _ = ask.Request(c.root, owner, &pb.AddBorrower{ObjectId: n.ID[:], Borrower: to}, borrowRegisterTimeout)
		}
		out = append(out, RefPayload(n.ID, n.Owner))
	}
	return out
}

// addLender records borrower for an object this runtime owns; reports whether it knew it.
// This runtime itself as the borrower (a worker returned one of its own refs to it) counts
// one local reference per registration, given back by unpin.
func (c *Core) addLender(id ids.ObjectID, borrower *pb.PID) bool {
	if _, _, known := c.mem.Get(id); !known {
		return false
	}
	if c.isSelf(borrower) {
		c.refs.AddLocal(id)
		return true
	}
	if c.borrows.AddLender(id, pidKey(borrower)) {
		c.refs.AddLocal(id)
	}
	return true
}

// BorrowersGone drops every borrow held by runtimes at address (their process died).
func (c *Core) BorrowersGone(address string) {
	for _, l := range c.borrows.LendersAt(address) {
		c.dropLender(l.ID, l.Key)
	}
}

// onBorrowMessage handles the borrowing messages of the owner actor.
func (c *Core) onBorrowMessage(ctx actor.Context) bool {
	switch m := ctx.Message().(type) {
	case *pb.AddBorrower:
		id, err := ids.ObjectIDFromBytes(m.ObjectId)
		known := err == nil && m.Borrower != nil && c.addLender(id, m.Borrower)
		if ctx.Sender() != nil {
			ctx.Respond(&pb.BorrowerAck{ObjectId: m.ObjectId, Known: known})
		}
	case *pb.RemoveBorrower:
		if id, err := ids.ObjectIDFromBytes(m.ObjectId); err == nil && m.Borrower != nil {
			c.dropLender(id, pidKey(m.Borrower))
		}
	case *pb.ResolveObject:
		id, err := ids.ObjectIDFromBytes(m.ObjectId)
		if err != nil || m.ReplyTo == nil {
			return true
		}
		to := actor.NewPID(m.ReplyTo.Address, m.ReplyTo.Id)
		answer := func(v objects.Value) {
			if v.Gone { // freed while pending
				c.root.Send(to, &pb.ObjectResolved{ObjectId: m.ObjectId, Unknown: true})
				return
			}
			c.root.Send(to, &pb.ObjectResolved{ObjectId: m.ObjectId, Data: v.Data, InStore: v.InStore,
				NodeId: string(v.Node), Size: v.Size, Error: v.Err})
		}
		if m.Lost {
			// The borrower could not read the bytes at LostNode: if this owner's value still
			// says they are there, they are lost; recreate the object (its future becomes
			// pending, and the answer waits for the new value).
			if v, ready, _ := c.mem.Get(id); ready && v.InStore && string(v.Node) == m.LostNode {
				c.reconstruct(id)
			}
		}
		if !c.mem.OnReady(id, answer) {
			c.root.Send(to, &pb.ObjectResolved{ObjectId: m.ObjectId, Unknown: true})
		}
	case *pb.ObjectResolved:
		id, err := ids.ObjectIDFromBytes(m.ObjectId)
		if err != nil || !c.borrowed(id) {
			return true
		}
		if m.Unknown {
			c.lostBorrow(id, "its owner has freed it")
			return true
		}
		node := ids.NodeID(m.NodeId)
		c.mem.Set(id, objects.Value{Data: m.Data, InStore: m.InStore, Node: node, Size: m.Size, Err: m.Error})
	default:
		return false
	}
	return true
}

// BorrowsFrom reports whether this runtime borrows an object owned by the runtime at
// address (a scan of the borrows: for rare events, such as a lost connection to a peer).
func (c *Core) BorrowsFrom(address string) bool {
	found := false
	c.borrows.ScanBorrowed(func(b objects.BorrowInfo) bool {
		found = b.Owner.GetAddress() == address
		return !found
	})
	return found
}
