package objects

import (
	"context"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// Value is the state of a ready object as its owner knows it: either the encoded bytes
// inline, or where they live (InStore, Node), or the error that the producing task gave.
type Value struct {
	Data    []byte
	InStore bool
	// Gone: the object was removed while pending (its last reference released): no value
	// will come. Only what a subscriber of the pending object is called with says so. (Next
	// to InStore: in its padding.)
	Gone bool
	Node ids.NodeID
	Size int64
	Err  *pb.ErrorInfo
	Meta []byte // attached by the producing task (ray.SetResultMetadata)
}

// slot is the memory store's part of an object's Entry. The subscribers, which few
// objects have, are kept apart, so that the entry stays small.
type slot struct {
	ready bool
	v     Value
	done  chan struct{} // closed when ready; created on first wait (Ready)
	w     *waiters      // nil until someone subscribes to a pending object
}

// waiters are the callbacks waiting for a pending object.
type waiters struct {
	subs []sub
}

type sub struct {
	id uint64 // 0: not cancellable
	f  func(Value)
}

// closedChan is what Ready returns for an object that is ready already.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// MemoryStore holds the futures of the objects this process owns. It is partitioned by
// object ID (ids.ObjectID.Hash) into shards, each a map behind its own mutex: every
// operation touches one object and locks only that object's shard, so goroutines working
// on different objects do not contend. An owner's store shares its entries with its
// reference table (NewOwned). The zero value is not usable; call NewMemoryStore or
// NewOwned.
type MemoryStore struct {
	t *table
}

// NewMemoryStore returns an empty store with Shards(GOMAXPROCS) shards.
func NewMemoryStore() *MemoryStore { return newMemoryStore(defaultShards()) }

func newMemoryStore(n int) *MemoryStore { return &MemoryStore{t: newTable(n)} }

// held returns id's entry (see find for hint) if the store holds it (the shard's lock
// held).
func (sh *tshard) held(id ids.ObjectID, hint *Entry) *Entry {
	if e := sh.find(id, hint); e != nil && e.mem {
		return e
	}
	return nil
}

// hold makes the store hold id's entry, pending, if it does not yet (the shard's lock
// held).
func (sh *tshard) hold(id ids.ObjectID, fresh *Entry) *Entry {
	e := sh.entry(id, fresh)
	if !e.mem {
		e.mem = true
		e.sl = slot{}
		sh.nmem++
	}
	return e
}

// forget drops the store's part of e, id's entry (the shard's lock held). A pending
// object's waiters are returned, for the caller to wake once the lock is released
// (wakeGone): they waited for ever (a Get or Wait whose ref another goroutine released).
func (sh *tshard) forget(id ids.ObjectID, e *Entry) (gone slot) {
	if !e.sl.ready {
		gone = e.sl
	}
	e.mem = false
	e.sl = slot{}
	sh.nmem--
	sh.drop(id, e)
	return gone
}

// wakeGone wakes the waiters of a pending object forget removed: a Get's channel closes
// (it then finds the object unknown) and each subscriber gets a Value that is Gone.
func wakeGone(gone slot) {
	if gone.done != nil {
		close(gone.done)
	}
	if gone.w != nil {
		for _, sb := range gone.w.subs {
			sb.f(Value{Gone: true})
		}
	}
}

// Create registers a pending object. Creating an object that exists is a no-op.
func (s *MemoryStore) Create(id ids.ObjectID) { s.CreateIn(id, nil) }

// CreateIn is Create that, when the object has no entry yet, makes fresh (a zero Entry
// the caller embedded in something it allocated anyway) its entry. fresh must not be
// passed again, here or to another store.
func (s *MemoryStore) CreateIn(id ids.ObjectID, fresh *Entry) {
	sh := s.t.shard(id)
	sh.mu.Lock()
	sh.hold(id, fresh)
	sh.mu.Unlock()
}

// Set makes an object ready (creating it if needed) and runs its subscribers. Setting an
// object that is already ready keeps the first value: handlers are idempotent (a result
// delivered twice, or a retry racing a late reply, changes nothing). It reports whether
// this call made the object ready.
func (s *MemoryStore) Set(id ids.ObjectID, v Value) bool {
	made, _ := s.set(id, nil, v, true)
	return made
}

// SetIfPresent is Set for an object that exists (pending or ready): it reports whether id
// was known, and does nothing if not. An owner completing a task uses it: the pending
// entry made at submission is gone only if every reference to the result was dropped.
func (s *MemoryStore) SetIfPresent(id ids.ObjectID, v Value) (known bool) {
	_, known = s.set(id, nil, v, false)
	return known
}

// SetIfPresentIn is SetIfPresent for the caller that passed e to CreateIn for id.
func (s *MemoryStore) SetIfPresentIn(id ids.ObjectID, e *Entry, v Value) (known bool) {
	_, known = s.set(id, e, v, false)
	return known
}

func (s *MemoryStore) set(id ids.ObjectID, hint *Entry, v Value, create bool) (made, known bool) {
	sh := s.t.shard(id)
	sh.mu.Lock()
	e := sh.held(id, hint)
	if e == nil {
		if !create {
			sh.mu.Unlock()
			return false, false
		}
		e = sh.hold(id, nil)
	}
	if e.sl.ready {
		sh.mu.Unlock()
		return false, true
	}
	w, done := e.sl.w, e.sl.done
	e.sl = slot{ready: true, v: v}
	sh.mu.Unlock()
	if done != nil {
		close(done) // outside the lock: waking the waiters is the scheduler's work
	}
	if w == nil {
		return true, true
	}
	for _, sb := range w.subs {
		f := sb.f
		f(v)
	}
	return true, true
}

// Replace swaps the value of a ready object for v: an owner that moved an in-memory value
// into a store records where it went. Readers that look later get v; those that read the
// old value keep it. It reports whether id was ready; nothing changes otherwise.
func (s *MemoryStore) Replace(id ids.ObjectID, v Value) bool {
	sh := s.t.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.held(id, nil)
	if e == nil || !e.sl.ready {
		return false
	}
	e.sl.v = v
	return true
}

// Reset makes a ready object pending again, for an object being recreated (lineage
// reconstruction): later Gets wait for the new value. It reports whether id was ready.
func (s *MemoryStore) Reset(id ids.ObjectID) bool {
	sh := s.t.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.held(id, nil)
	if e == nil || !e.sl.ready {
		return false
	}
	e.sl = slot{}
	return true
}

// Get returns the object's value if it is ready. known is false for an object this store
// has never seen (or has freed).
func (s *MemoryStore) Get(id ids.ObjectID) (v Value, ready, known bool) { return s.GetIn(id, nil) }

// GetIn is Get for a caller that holds a pointer to id's entry (see CreateIn); e nil: Get.
func (s *MemoryStore) GetIn(id ids.ObjectID, e *Entry) (v Value, ready, known bool) {
	sh := s.t.shard(id)
	sh.mu.Lock()
	e = sh.held(id, e)
	if e == nil {
		sh.mu.Unlock()
		return Value{}, false, false
	}
	v, ready = e.sl.v, e.sl.ready
	sh.mu.Unlock()
	return v, ready, true
}

// Ready returns a channel closed when the object is ready, or nil if the object is unknown.
func (s *MemoryStore) Ready(id ids.ObjectID) <-chan struct{} { return s.ReadyIn(id, nil) }

// ReadyIn is Ready for a caller that holds a pointer to id's entry (see GetIn).
func (s *MemoryStore) ReadyIn(id ids.ObjectID, e *Entry) <-chan struct{} {
	sh := s.t.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e = sh.held(id, e)
	switch {
	case e == nil:
		return nil
	case e.sl.ready:
		return closedChan
	case e.sl.done == nil:
		e.sl.done = make(chan struct{})
	}
	return e.sl.done
}

// Wait blocks until the object is ready or ctx is done.
func (s *MemoryStore) Wait(ctx context.Context, id ids.ObjectID) (Value, bool, error) {
	ch := s.Ready(id)
	if ch == nil {
		return Value{}, false, nil
	}
	select {
	case <-ch:
	case <-ctx.Done():
		return Value{}, true, ctx.Err()
	}
	v, _, known := s.Get(id)
	return v, known, nil
}

// subscribe adds sb to e, a pending object (the shard's lock held).
func (e *Entry) subscribe(sb sub) {
	if e.sl.w == nil {
		e.sl.w = &waiters{}
	}
	e.sl.w.subs = append(e.sl.w.subs, sb)
}

// OnReady calls f with the value once the object is ready: at once (on the caller's
// goroutine) if it already is, else on the goroutine that calls Set. f must not block.
// It reports false, without calling f, for an unknown object.
func (s *MemoryStore) OnReady(id ids.ObjectID, f func(Value)) bool {
	sh := s.t.shard(id)
	sh.mu.Lock()
	e := sh.held(id, nil)
	if e == nil {
		sh.mu.Unlock()
		return false
	}
	if !e.sl.ready {
		e.subscribe(sub{f: f})
		sh.mu.Unlock()
		return true
	}
	v := e.sl.v
	sh.mu.Unlock()
	f(v)
	return true
}

// OnReadyCancel is OnReady with a way to take the subscription back before the object is
// ready (a Wait that returns must not leave its callbacks behind: a caller polling Wait
// with a timeout on a long task would pile them up). cancel is a no-op once f ran.
func (s *MemoryStore) OnReadyCancel(id ids.ObjectID, f func(Value)) (cancel func(), ok bool) {
	sh := s.t.shard(id)
	sh.mu.Lock()
	e := sh.held(id, nil)
	if e == nil {
		sh.mu.Unlock()
		return func() {}, false
	}
	if e.sl.ready {
		v := e.sl.v
		sh.mu.Unlock()
		f(v)
		return func() {}, true
	}
	sh.nextID++
	sid := sh.nextID
	e.subscribe(sub{id: sid, f: f})
	sh.mu.Unlock()
	return func() {
		sh.mu.Lock()
		defer sh.mu.Unlock()
		// The subscription IDs are the shard's: one is found only where it was added, and
		// not once the object is ready (Set takes every subscription) or gone.
		e := sh.held(id, nil)
		if e == nil || e.sl.w == nil {
			return
		}
		for i, sb := range e.sl.w.subs {
			if sb.id == sid {
				e.sl.w.subs = append(e.sl.w.subs[:i], e.sl.w.subs[i+1:]...)
				return
			}
		}
	}, true
}

// subscribers is how many callbacks wait on an object (tests).
func (s *MemoryStore) subscribers(id ids.ObjectID) int {
	sh := s.t.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e := sh.held(id, nil); e != nil && e.sl.w != nil {
		return len(e.sl.w.subs)
	}
	return 0
}

// Delete forgets an object. Waiters of a pending object are woken (wakeGone).
func (s *MemoryStore) Delete(id ids.ObjectID) { s.Remove(id) }

// Remove forgets an object and returns what Get would have (one lock for both).
func (s *MemoryStore) Remove(id ids.ObjectID) (v Value, ready, known bool) {
	return s.RemoveIn(id, nil)
}

// RemoveIn is Remove for a caller that holds a pointer to id's entry (see GetIn).
func (s *MemoryStore) RemoveIn(id ids.ObjectID, e *Entry) (v Value, ready, known bool) {
	sh := s.t.shard(id)
	sh.mu.Lock()
	e = sh.held(id, e)
	if e == nil {
		sh.mu.Unlock()
		return Value{}, false, false
	}
	v, ready = e.sl.v, e.sl.ready
	gone := sh.forget(id, e)
	sh.mu.Unlock()
	wakeGone(gone)
	return v, ready, true
}

// RemoveFreedIn is RemoveIn for carrying out a free the reference table decided
// (Released.Values), except for an object whose references were taken again since the
// free was decided: that one keeps its value (kept; nothing is removed). An owner takes
// a reference to an object whose counts reached zero when a lineage rerun holds an
// argument again (RefTable.AddLocal in the core's restart); the free decided before must
// not take that value away from under the rerun, which found it ready. Only a store made
// by NewOwned knows of references; any other removes as RemoveIn does.
func (s *MemoryStore) RemoveFreedIn(id ids.ObjectID, e *Entry) (v Value, ready, kept bool) {
	sh := s.t.shard(id)
	sh.mu.Lock()
	if c := sh.counted(id, e); c != nil && !c.rc.freed {
		sh.mu.Unlock()
		return Value{}, false, true
	}
	if e = sh.held(id, e); e == nil {
		sh.mu.Unlock()
		return Value{}, false, false
	}
	v, ready = e.sl.v, e.sl.ready
	gone := sh.forget(id, e)
	sh.mu.Unlock()
	wakeGone(gone)
	return v, ready, false
}

// Len is the number of objects held (pending or ready).
func (s *MemoryStore) Len() int {
	n := 0
	for i := range s.t.shards {
		sh := &s.t.shards[i]
		sh.mu.Lock()
		n += sh.nmem
		sh.mu.Unlock()
	}
	return n
}
