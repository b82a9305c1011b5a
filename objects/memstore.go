package objects

import (
	"context"
	"sync"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// Value is the state of a ready object as its owner knows it: either the encoded bytes
// inline, or where they live (InStore, Node), or the error that the producing task gave.
type Value struct {
	Data    []byte
	InStore bool
	Node    ids.NodeID
	Size    int64
	Err     *pb.ErrorInfo
	Meta    []byte // attached by the producing task (ray.SetResultMetadata)
}

// slot is an object's entry, held by value in its shard's map: creating an object costs
// no allocation of its own. It must stay within the map's inline element size (128 bytes;
// larger elements are allocated one by one), so the subscribers, which few objects have,
// are kept apart.
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
// on different objects do not contend. The zero value is not usable; call NewMemoryStore.
type MemoryStore struct {
	shards []memShard
	mask   uint32
}

type memShard struct {
	mu     sync.Mutex
	m      map[ids.ObjectID]slot
	peak   int // the most entries m held since it was made: see forget
	nextID uint64
	_      cacheLinePad
}

// NewMemoryStore returns an empty store with Shards(GOMAXPROCS) shards.
func NewMemoryStore() *MemoryStore { return newMemoryStore(defaultShards()) }

func newMemoryStore(n int) *MemoryStore {
	s := &MemoryStore{shards: make([]memShard, n), mask: uint32(n - 1)}
	for i := range s.shards {
		s.shards[i].m = make(map[ids.ObjectID]slot, 64)
	}
	return s
}

func (s *MemoryStore) shard(id ids.ObjectID) *memShard { return &s.shards[id.Hash()&s.mask] }

// put stores sl as id's entry (the shard's lock held).
func (sh *memShard) put(id ids.ObjectID, sl slot) {
	sh.m[id] = sl
	sh.peak = max(sh.peak, len(sh.m))
}

// shrinkBelow: a map that held more than this many entries and now holds under an eighth
// of its peak is made anew. Go maps never give back their buckets, and a slot is a hundred
// bytes: a burst of a million pending objects would otherwise keep its map's memory for
// good. Copying the few live entries is paid for by the many deletions before it.
const shrinkBelow = 8192

// forget deletes id's entry (the shard's lock held).
func (sh *memShard) forget(id ids.ObjectID) {
	delete(sh.m, id)
	if sh.peak > shrinkBelow && len(sh.m) < sh.peak/8 {
		m := make(map[ids.ObjectID]slot, max(64, 2*len(sh.m)))
		for k, v := range sh.m {
			m[k] = v
		}
		sh.m, sh.peak = m, len(m)
	}
}

// Create registers a pending object. Creating an object that exists is a no-op.
func (s *MemoryStore) Create(id ids.ObjectID) {
	sh := s.shard(id)
	sh.mu.Lock()
	if _, ok := sh.m[id]; !ok {
		sh.put(id, slot{})
	}
	sh.mu.Unlock()
}

// Set makes an object ready (creating it if needed) and runs its subscribers. Setting an
// object that is already ready keeps the first value: handlers are idempotent (a result
// delivered twice, or a retry racing a late reply, changes nothing). It reports whether
// this call made the object ready.
func (s *MemoryStore) Set(id ids.ObjectID, v Value) bool {
	made, _ := s.set(id, v, true)
	return made
}

// SetIfPresent is Set for an object that exists (pending or ready): it reports whether id
// was known, and does nothing if not. An owner completing a task uses it: the pending
// entry made at submission is gone only if every reference to the result was dropped.
func (s *MemoryStore) SetIfPresent(id ids.ObjectID, v Value) (known bool) {
	_, known = s.set(id, v, false)
	return known
}

func (s *MemoryStore) set(id ids.ObjectID, v Value, create bool) (made, known bool) {
	sh := s.shard(id)
	sh.mu.Lock()
	sl, ok := sh.m[id]
	if !ok && !create {
		sh.mu.Unlock()
		return false, false
	}
	if sl.ready {
		sh.mu.Unlock()
		return false, true
	}
	w, done := sl.w, sl.done
	sh.put(id, slot{ready: true, v: v})
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

// Reset makes a ready object pending again, for an object being recreated (lineage
// reconstruction): later Gets wait for the new value. It reports whether id was ready.
func (s *MemoryStore) Reset(id ids.ObjectID) bool {
	sh := s.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sl, ok := sh.m[id]
	if !ok || !sl.ready {
		return false
	}
	sh.put(id, slot{})
	return true
}

// Get returns the object's value if it is ready. known is false for an object this store
// has never seen (or has freed).
func (s *MemoryStore) Get(id ids.ObjectID) (v Value, ready, known bool) {
	sh := s.shard(id)
	sh.mu.Lock()
	sl, known := sh.m[id]
	sh.mu.Unlock()
	return sl.v, sl.ready, known
}

// Ready returns a channel closed when the object is ready, or nil if the object is unknown.
func (s *MemoryStore) Ready(id ids.ObjectID) <-chan struct{} {
	sh := s.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sl, ok := sh.m[id]
	switch {
	case !ok:
		return nil
	case sl.ready:
		return closedChan
	case sl.done == nil:
		sl.done = make(chan struct{})
		sh.m[id] = sl
	}
	return sl.done
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

// subscribe adds sb to the pending object sl of id (the shard's lock held).
func (sh *memShard) subscribe(id ids.ObjectID, sl slot, sb sub) {
	if sl.w == nil {
		sl.w = &waiters{}
		sh.m[id] = sl
	}
	sl.w.subs = append(sl.w.subs, sb)
}

// OnReady calls f with the value once the object is ready: at once (on the caller's
// goroutine) if it already is, else on the goroutine that calls Set. f must not block.
// It reports false, without calling f, for an unknown object.
func (s *MemoryStore) OnReady(id ids.ObjectID, f func(Value)) bool {
	sh := s.shard(id)
	sh.mu.Lock()
	sl, ok := sh.m[id]
	if !ok {
		sh.mu.Unlock()
		return false
	}
	if !sl.ready {
		sh.subscribe(id, sl, sub{f: f})
		sh.mu.Unlock()
		return true
	}
	sh.mu.Unlock()
	f(sl.v)
	return true
}

// OnReadyCancel is OnReady with a way to take the subscription back before the object is
// ready (a Wait that returns must not leave its callbacks behind: a caller polling Wait
// with a timeout on a long task would pile them up). cancel is a no-op once f ran.
func (s *MemoryStore) OnReadyCancel(id ids.ObjectID, f func(Value)) (cancel func(), ok bool) {
	sh := s.shard(id)
	sh.mu.Lock()
	sl, ok := sh.m[id]
	if !ok {
		sh.mu.Unlock()
		return func() {}, false
	}
	if sl.ready {
		sh.mu.Unlock()
		f(sl.v)
		return func() {}, true
	}
	sh.nextID++
	sid := sh.nextID
	sh.subscribe(id, sl, sub{id: sid, f: f})
	sh.mu.Unlock()
	return func() {
		sh.mu.Lock()
		defer sh.mu.Unlock()
		// The subscription IDs are the shard's: one is found only where it was added, and
		// not once the object is ready (Set takes every subscription) or gone.
		sl, ok := sh.m[id]
		if !ok || sl.w == nil {
			return
		}
		for i, sb := range sl.w.subs {
			if sb.id == sid {
				sl.w.subs = append(sl.w.subs[:i], sl.w.subs[i+1:]...)
				return
			}
		}
	}, true
}

// subscribers is how many callbacks wait on an object (tests).
func (s *MemoryStore) subscribers(id ids.ObjectID) int {
	sh := s.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sl, ok := sh.m[id]; ok && sl.w != nil {
		return len(sl.w.subs)
	}
	return 0
}

// Delete forgets an object. Waiters of a pending object stay blocked until their ctx ends.
func (s *MemoryStore) Delete(id ids.ObjectID) {
	sh := s.shard(id)
	sh.mu.Lock()
	sh.forget(id)
	sh.mu.Unlock()
}

// Remove forgets an object and returns what Get would have (one lock for both).
func (s *MemoryStore) Remove(id ids.ObjectID) (v Value, ready, known bool) {
	sh := s.shard(id)
	sh.mu.Lock()
	sl, known := sh.m[id]
	if known {
		sh.forget(id)
	}
	sh.mu.Unlock()
	return sl.v, sl.ready, known
}

// Len is the number of objects held (pending or ready).
func (s *MemoryStore) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}
