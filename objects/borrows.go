package objects

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// Nested is an object ref found inside an encoded value: its ID and owner.
type Nested struct {
	ID    ids.ObjectID
	Owner *pb.PID
}

// Borrows are a runtime's tables of the borrowing protocol (Ray's ownership protocol; the
// messages are the runtime's, internal/assembly/core borrow.go):
//
//   - borrowed: objects another runtime owns that this one holds refs to, each with its
//     owner, how many of this runtime's holds it has, and when the owner acknowledged the
//     borrower (Borrow.Registered);
//   - lenders: for objects this runtime owns, which other runtimes borrow them (keyed
//     "address/id" of the borrower's owner actor);
//   - pins: refs nested in a value (a Put object, a task's return value, a task's
//     arguments), held while the outer object lives or the task runs.
//
// A leaf structure partitioned by object ID (4 shards per core), each shard behind its own
// mutex; methods lock one shard at a time, do no I/O and return what the caller must send
// or free. A runtime that borrows and pins nothing (the common case) pays one atomic load
// per call (Empty checks) instead of a lock.
type Borrows struct {
	shards           []borrowShard
	mask             uint32
	nBorrowed, nPins atomic.Int64
	nLent            atomic.Int64 // objects with lenders
}

type borrowShard struct {
	mu       sync.Mutex
	borrowed map[ids.ObjectID]*Borrow
	lenders  map[ids.ObjectID]map[string]bool
	pins     map[ids.ObjectID][]Nested
	_        cacheLinePad
}

// Borrow is this runtime's borrow of one object.
type Borrow struct {
	Owner *pb.PID
	count int
	// Registered is closed once the owner acknowledged this borrower (or failed to).
	Registered chan struct{}
}

// NewBorrows returns empty tables with Shards(GOMAXPROCS) shards.
func NewBorrows() *Borrows { return newBorrows(defaultShards()) }

func newBorrows(n int) *Borrows {
	b := &Borrows{shards: make([]borrowShard, n), mask: uint32(n - 1)}
	for i := range b.shards {
		b.shards[i].borrowed = map[ids.ObjectID]*Borrow{}
		b.shards[i].lenders = map[ids.ObjectID]map[string]bool{}
		b.shards[i].pins = map[ids.ObjectID][]Nested{}
	}
	return b
}

func (b *Borrows) shard(id ids.ObjectID) *borrowShard { return &b.shards[id.Hash()&b.mask] }

// Take counts one more hold of borrowed object id. first reports a new borrow (count 1,
// Registered open: the caller registers with owner and closes it); otherwise the caller
// waits on Registered.
func (b *Borrows) Take(id ids.ObjectID, owner *pb.PID) (e *Borrow, first bool) {
	return b.take(id, owner, false)
}

// Adopt counts one more hold of borrowed object id that the owner already knows of (a
// borrower registered on this runtime's behalf): first reports a new borrow.
func (b *Borrows) Adopt(id ids.ObjectID, owner *pb.PID) (first bool) {
	_, first = b.take(id, owner, true)
	return first
}

func (b *Borrows) take(id ids.ObjectID, owner *pb.PID, registered bool) (*Borrow, bool) {
	sh := b.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e := sh.borrowed[id]; e != nil {
		e.count++
		return e, false
	}
	e := &Borrow{Owner: owner, count: 1, Registered: make(chan struct{})}
	if registered {
		close(e.Registered)
	}
	sh.borrowed[id] = e
	b.nBorrowed.Add(1)
	return e, true
}

// More counts one more hold of id if it is borrowed; it reports whether it is.
func (b *Borrows) More(id ids.ObjectID) bool {
	if b.nBorrowed.Load() == 0 {
		return false
	}
	sh := b.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e := sh.borrowed[id]; e != nil {
		e.count++
		return true
	}
	return false
}

// Drop gives back one hold of id. borrowed is false when id is not borrowed (the caller
// owns it); last reports the borrow's end (the caller tells the owner, e.Owner).
func (b *Borrows) Drop(id ids.ObjectID) (e *Borrow, last, borrowed bool) {
	if b.nBorrowed.Load() == 0 {
		return nil, false, false
	}
	sh := b.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e = sh.borrowed[id]
	if e == nil {
		return nil, false, false
	}
	e.count--
	if e.count == 0 {
		delete(sh.borrowed, id)
		b.nBorrowed.Add(-1)
		return e, true, true
	}
	return e, false, true
}

// Get returns the borrow of id, if it is borrowed.
func (b *Borrows) Get(id ids.ObjectID) (*Borrow, bool) {
	if b.nBorrowed.Load() == 0 {
		return nil, false
	}
	sh := b.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.borrowed[id]
	return e, e != nil
}

// Borrowed is how many objects are borrowed.
func (b *Borrows) Borrowed() int { return int(b.nBorrowed.Load()) }

// BorrowInfo is one borrowed object as ScanBorrowed reports it.
type BorrowInfo struct {
	ID    ids.ObjectID
	Owner *pb.PID
	Holds int // this runtime's holds of it
}

// ScanBorrowed calls f with every borrowed object until f returns false. It copies a
// shard's borrows under its lock and calls f after unlocking it (what changed since the
// copy is not seen).
func (b *Borrows) ScanBorrowed(f func(BorrowInfo) bool) {
	if b.nBorrowed.Load() == 0 {
		return
	}
	var buf []BorrowInfo
	for i := range b.shards {
		sh := &b.shards[i]
		sh.mu.Lock()
		buf = buf[:0]
		for id, e := range sh.borrowed {
			buf = append(buf, BorrowInfo{ID: id, Owner: e.Owner, Holds: e.count})
		}
		sh.mu.Unlock()
		for _, in := range buf {
			if !f(in) {
				return
			}
		}
	}
}

// EndBorrowsFrom removes every borrow of an object owned at address (its runtime died) and
// returns each with its count of holds (the caller adopts them).
func (b *Borrows) EndBorrowsFrom(address string) map[ids.ObjectID]int {
	out := map[ids.ObjectID]int{}
	for i := range b.shards {
		sh := &b.shards[i]
		sh.mu.Lock()
		for id, e := range sh.borrowed {
			if e.Owner.GetAddress() == address {
				out[id] = e.count
				delete(sh.borrowed, id)
				b.nBorrowed.Add(-1)
			}
		}
		sh.mu.Unlock()
	}
	return out
}

// Pin keeps nested with outer (the caller took their holds); Unpin gives them back.
func (b *Borrows) Pin(outer ids.ObjectID, nested []Nested) {
	if len(nested) == 0 {
		return
	}
	sh := b.shard(outer)
	sh.mu.Lock()
	if sh.pins[outer] == nil {
		b.nPins.Add(1)
	}
	sh.pins[outer] = append(sh.pins[outer], nested...)
	sh.mu.Unlock()
}

// Unpin takes the refs pinned with outer out of the table (the caller gives their holds
// back).
func (b *Borrows) Unpin(outer ids.ObjectID) []Nested {
	if b.nPins.Load() == 0 {
		return nil
	}
	sh := b.shard(outer)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	nested, ok := sh.pins[outer]
	if ok {
		delete(sh.pins, outer)
		b.nPins.Add(-1)
	}
	return nested
}

// AddLender records borrower (key) of object id this runtime owns; first reports a new one
// (the caller counts it as a reference).
func (b *Borrows) AddLender(id ids.ObjectID, key string) (first bool) {
	sh := b.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	l := sh.lenders[id]
	if l == nil {
		l = map[string]bool{}
		sh.lenders[id] = l
		b.nLent.Add(1)
	}
	first = !l[key]
	l[key] = true
	return first
}

// DropLender removes borrower key of id; had reports it was there (the caller gives its
// reference back).
func (b *Borrows) DropLender(id ids.ObjectID, key string) (had bool) {
	sh := b.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	l := sh.lenders[id]
	had = l[key]
	delete(l, key)
	if l != nil && len(l) == 0 {
		delete(sh.lenders, id)
		b.nLent.Add(-1)
	}
	return had
}

// Lenders is how many borrowers object id has.
func (b *Borrows) Lenders(id ids.ObjectID) int {
	if b.nLent.Load() == 0 {
		return 0
	}
	sh := b.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return len(sh.lenders[id])
}

// Lender is one borrower of one object.
type Lender struct {
	ID  ids.ObjectID
	Key string
}

// LendersAt lists the borrowers whose key is at address (their process died).
func (b *Borrows) LendersAt(address string) []Lender {
	if b.nLent.Load() == 0 {
		return nil
	}
	var out []Lender
	for i := range b.shards {
		sh := &b.shards[i]
		sh.mu.Lock()
		for id, l := range sh.lenders {
			for key := range l {
				if strings.HasPrefix(key, address+"/") {
					out = append(out, Lender{ID: id, Key: key})
				}
			}
		}
		sh.mu.Unlock()
	}
	return out
}
