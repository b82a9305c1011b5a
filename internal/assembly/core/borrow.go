package core

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
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

type borrow struct {
	owner      *actor.PID
	count      int
	registered chan struct{} // closed once the owner acknowledged (or failed)
}

type borrowState struct {
	mu      sync.Mutex
	entries map[ids.ObjectID]*borrow
	// owner side: who borrows what (borrower key "address/id")
	lenders map[ids.ObjectID]map[string]bool
	// pins held for an outer object or a task: released when it is freed or finishes
	contained map[ids.ObjectID][]Nested
	// nEntries and nContained count entries and contained (changed under mu, read
	// without it): a runtime that borrows nothing and pins nothing, the common case,
	// skips the mutex on every task's completion and every release.
	nEntries, nContained atomic.Int64
}

// Pins of refs nested in values (borrowState.contained): an owned ref holds a local
// reference, a borrowed one a borrow; both are given back by unpin. A ref owned by this
// runtime that a worker returned to it was counted as a local reference when the worker
// registered it (addLender to self), and is given back the same way.

// Nested is an object ref found inside an encoded value: its ID and owner.
type Nested struct {
	ID    ids.ObjectID
	Owner *pb.PID
}

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
	b := &c.borrows
	b.mu.Lock()
	if b.entries == nil {
		b.entries = map[ids.ObjectID]*borrow{}
	}
	e := b.entries[id]
	if e != nil {
		e.count++
		b.mu.Unlock()
		<-e.registered
		return
	}
	e = &borrow{owner: actor.NewPID(owner.Address, owner.Id), count: 1, registered: make(chan struct{})}
	b.entries[id] = e
	b.nEntries.Add(1)
	b.mu.Unlock()
	c.mem.Create(id)
	defer close(e.registered)
	res, err := c.root.RequestFuture(e.owner, &pb.AddBorrower{ObjectId: id[:], Borrower: c.ownerW}, borrowRegisterTimeout).Result()
	ack, ok := res.(*pb.BorrowerAck)
	switch {
	case err != nil:
		c.lostBorrow(id, fmt.Sprintf("its owner %s did not answer: %v", pidKey(owner), err))
	case !ok || !ack.Known:
		c.lostBorrow(id, fmt.Sprintf("its owner %s has freed it", pidKey(owner)))
	default:
		c.root.Send(e.owner, &pb.ResolveObject{ObjectId: id[:], ReplyTo: c.ownerW})
	}
}

// adopt takes one borrow that another runtime registered on this one's behalf (refs
// nested in a task's return value).
func (c *Core) adopt(n Nested) {
	if c.isSelf(n.Owner) {
		return // the worker registered us as a borrower of our own object: the lender count holds it
	}
	b := &c.borrows
	b.mu.Lock()
	if b.entries == nil {
		b.entries = map[ids.ObjectID]*borrow{}
	}
	if e := b.entries[n.ID]; e != nil {
		e.count++
		b.mu.Unlock()
		return
	}
	e := &borrow{owner: actor.NewPID(n.Owner.Address, n.Owner.Id), count: 1, registered: make(chan struct{})}
	close(e.registered)
	b.entries[n.ID] = e
	b.nEntries.Add(1)
	b.mu.Unlock()
	c.mem.Create(n.ID)
	c.root.Send(e.owner, &pb.ResolveObject{ObjectId: n.ID[:], ReplyTo: c.ownerW})
}

func (c *Core) lostBorrow(id ids.ObjectID, why string) {
	c.mem.Set(id, objects.Value{Err: &pb.ErrorInfo{Kind: pb.ErrorInfo_OBJECT_LOST,
		Message: fmt.Sprintf("object %s is lost: %s", id, why)}})
}

// borrowed reports whether id is borrowed by this runtime.
func (c *Core) borrowed(id ids.ObjectID) bool {
	c.borrows.mu.Lock()
	defer c.borrows.mu.Unlock()
	_, ok := c.borrows.entries[id]
	return ok
}

// Borrowed returns how many objects this runtime borrows (tests and reports).
func (c *Core) Borrowed() int {
	c.borrows.mu.Lock()
	defer c.borrows.mu.Unlock()
	return len(c.borrows.entries)
}

// Lenders returns how many borrowers hold id, as its owner knows (tests).
func (c *Core) Lenders(id ids.ObjectID) int {
	c.borrows.mu.Lock()
	defer c.borrows.mu.Unlock()
	return len(c.borrows.lenders[id])
}

// unborrow drops one borrow of id; the last one tells the owner. It reports false when id
// is not borrowed (so the caller treats it as an owned object).
func (c *Core) unborrow(id ids.ObjectID) bool {
	b := &c.borrows
	if b.nEntries.Load() == 0 {
		return false
	}
	b.mu.Lock()
	e := b.entries[id]
	if e == nil {
		b.mu.Unlock()
		return false
	}
	e.count--
	last := e.count == 0
	if last {
		delete(b.entries, id)
		b.nEntries.Add(-1)
	}
	b.mu.Unlock()
	if last {
		c.mem.Delete(id)
		c.root.Send(e.owner, &pb.RemoveBorrower{ObjectId: id[:], Borrower: c.ownerW})
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
		} else if !c.moreBorrow(n.ID) {
			c.Hold(n.ID, n.Owner)
		}
	}
	c.borrows.mu.Lock()
	if c.borrows.contained == nil {
		c.borrows.contained = map[ids.ObjectID][]Nested{}
	}
	if c.borrows.contained[outer] == nil {
		c.borrows.nContained.Add(1)
	}
	c.borrows.contained[outer] = append(c.borrows.contained[outer], nested...)
	c.borrows.mu.Unlock()
}

// pinAdopted keeps refs a worker registered for this runtime while outer lives.
func (c *Core) pinAdopted(outer ids.ObjectID, nested []Nested) {
	for _, n := range nested {
		if !c.isSelf(n.Owner) {
			c.adopt(n)
		}
	}
	c.borrows.mu.Lock()
	if c.borrows.contained == nil {
		c.borrows.contained = map[ids.ObjectID][]Nested{}
	}
	if c.borrows.contained[outer] == nil {
		c.borrows.nContained.Add(1)
	}
	c.borrows.contained[outer] = append(c.borrows.contained[outer], nested...)
	c.borrows.mu.Unlock()
}

// moreBorrow adds one to an existing borrow.
func (c *Core) moreBorrow(id ids.ObjectID) bool {
	if c.borrows.nEntries.Load() == 0 {
		return false
	}
	c.borrows.mu.Lock()
	defer c.borrows.mu.Unlock()
	if e := c.borrows.entries[id]; e != nil {
		e.count++
		return true
	}
	return false
}

// unpin releases what pin (or pinAdopted) holds for outer.
func (c *Core) unpin(outer ids.ObjectID) {
	if c.borrows.nContained.Load() == 0 {
		return
	}
	c.borrows.mu.Lock()
	nested, ok := c.borrows.contained[outer]
	if ok {
		delete(c.borrows.contained, outer)
		c.borrows.nContained.Add(-1)
	}
	c.borrows.mu.Unlock()
	for _, n := range nested {
		if c.isSelf(n.Owner) || !c.unborrow(n.ID) {
			c.free(c.refs.RemoveLocal(n.ID))
		}
	}
}

// dropLender removes borrower key from id's lenders and its reference.
func (c *Core) dropLender(id ids.ObjectID, key string) {
	c.borrows.mu.Lock()
	l := c.borrows.lenders[id]
	had := l[key]
	delete(l, key)
	if len(l) == 0 {
		delete(c.borrows.lenders, id)
	}
	c.borrows.mu.Unlock()
	if had {
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
			_, _ = c.root.RequestFuture(owner, &pb.AddBorrower{ObjectId: n.ID[:], Borrower: to}, borrowRegisterTimeout).Result()
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
	key := pidKey(borrower)
	c.borrows.mu.Lock()
	if c.borrows.lenders == nil {
		c.borrows.lenders = map[ids.ObjectID]map[string]bool{}
	}
	l := c.borrows.lenders[id]
	if l == nil {
		l = map[string]bool{}
		c.borrows.lenders[id] = l
	}
	first := !l[key]
	l[key] = true
	c.borrows.mu.Unlock()
	if first {
		c.refs.AddLocal(id)
	}
	return true
}

// BorrowersGone drops every borrow held by runtimes at address (their process died).
func (c *Core) BorrowersGone(address string) {
	var drop []struct {
		id  ids.ObjectID
		key string
	}
	c.borrows.mu.Lock()
	for id, l := range c.borrows.lenders {
		for key := range l {
			if len(key) > len(address) && key[:len(address)+1] == address+"/" {
				drop = append(drop, struct {
					id  ids.ObjectID
					key string
				}{id, key})
			}
		}
	}
	c.borrows.mu.Unlock()
	for _, d := range drop {
		c.dropLender(d.id, d.key)
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
			c.root.Send(to, &pb.ObjectResolved{ObjectId: m.ObjectId, Data: v.Data, InStore: v.InStore,
				NodeId: string(v.Node), Size: v.Size, Error: v.Err})
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
