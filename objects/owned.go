package objects

import (
	"sync"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/mapx"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/internal/base/slab"
)

// table is what a MemoryStore and a RefTable keep per object, in one entry per object:
// a process that owns objects (NewOwned) keeps the future and the reference counts of
// each in the same entry, behind the same lock, so that the steps of one task (submit,
// complete, get, release) find one map entry, mostly in cache, instead of one in each of
// two maps. A store or a reference table made on its own (NewMemoryStore, NewRefTable)
// has a table of its own.
//
// The table is partitioned by object ID (ids.ObjectID.Hash) into shards, each a map of
// pointers behind its own mutex; an entry lives while either part holds it.
type table struct {
	shards []tshard
	mask   uint32
	// owned: a MemoryStore and a RefTable share it (NewOwned), so the reference table's
	// steps that touch the store's part too (CreateLocalIn, CreateSubmittedIn,
	// RemoveLocalFreeIn) may be used.
	owned bool
}

type tshard struct {
	mu   sync.Mutex
	m    map[ids.ObjectID]*Entry
	peak mapx.Peak // of m: see drop
	// nmem and nrefs count the entries held by each part; ntasks those holding a lineage
	// record.
	nmem, nrefs, ntasks int
	nextID              uint64 // OnReadyCancel's subscription IDs
	// entries are carved from here for objects whose creator has none to give (Puts,
	// borrowed and recreated objects): one allocation per 16 (a long-lived object keeps
	// 15 neighbours' 2.7 KiB with it).
	entries slab.Slab[Entry]
	_       cacheLinePad
}

// Entry is one object's state in its owner's table: its future (the memory store's part)
// and its reference counts (the reference table's). A caller that allocates something per
// object anyway (the owner's bookkeeping of the task that returns it) embeds a zero Entry
// there and passes it to MemoryStore.CreateIn, so that the object costs no allocation of
// its own; otherwise the table makes one.
type Entry struct {
	mem  bool // the memory store holds the object (Create or Set, until Remove or Delete)
	refs bool // the reference table counts it (until its counts settle to nothing)
	sl   slot
	rc   refCount
}

func newTable(n int) *table {
	t := &table{shards: make([]tshard, n), mask: uint32(n - 1)}
	for i := range t.shards {
		t.shards[i].m = make(map[ids.ObjectID]*Entry, 64)
		t.shards[i].entries.N = 16
	}
	return t
}

// NewOwned returns a memory store and a reference table that keep their state for an
// object in one entry (see table): what an owner of objects uses.
func NewOwned() (*MemoryStore, *RefTable) {
	t := newTable(defaultShards())
	t.owned = true
	return &MemoryStore{t: t}, &RefTable{t: t}
}

func (t *table) shard(id ids.ObjectID) *tshard { return &t.shards[id.Hash()&t.mask] }

// entry returns id's entry, making it (from fresh, if not nil) when there is none; the
// shard's lock held.
func (sh *tshard) entry(id ids.ObjectID, fresh *Entry) *Entry {
	if e := sh.m[id]; e != nil {
		return e
	}
	e := fresh
	if e == nil {
		e = sh.entries.New()
	}
	sh.m[id] = e
	sh.peak.Grew(len(sh.m))
	return e
}

// find returns id's entry: hint, a caller's pointer to it (MemoryStore.CreateIn), while
// hint is in the table (an entry is in its shard's map exactly while a part holds it, and
// then it is the only entry of its ID), else what the map has (nil: none). The shard's
// lock held.
func (sh *tshard) find(id ids.ObjectID, hint *Entry) *Entry {
	if hint != nil && (hint.mem || hint.refs) {
		return hint
	}
	return sh.m[id]
}

// drop forgets e (id's entry) once neither part holds it; the shard's lock held.
func (sh *tshard) drop(id ids.ObjectID, e *Entry) {
	if e.mem || e.refs {
		return
	}
	delete(sh.m, id)
	sh.m = mapx.Shrink(&sh.peak, sh.m) // Go maps never give their memory back
}

// The steps below are a MemoryStore's and a RefTable's steps on one object taken under one
// lock of its shard: the entry is found once and the lock taken once, where the two steps
// apart took it twice (and looked the entry up twice when the caller had no hint). An
// owner takes each once per task or actor call. They need NewOwned's table (both parts in
// one entry), and panic on a RefTable of its own.

// CreateLocalIn is MemoryStore.CreateIn of id (fresh becomes its entry if it has none)
// and AddLocal of id in one step: an owner's pending result of a call it submits, and the
// caller's reference to it.
func (t *RefTable) CreateLocalIn(id ids.ObjectID, fresh *Entry) {
	t.mustOwn()
	sh := t.shard(id)
	sh.mu.Lock()
	c := &sh.countIn(id, sh.hold(id, fresh)).rc
	c.local++
	c.freed = false
	sh.mu.Unlock()
}

// CreateSubmittedIn is MemoryStore.CreateIn of task's first return ReturnID(task, 1)
// (fresh becomes its entry if it has none) and SubmittedIn with that entry, in one step of
// the return's shard (the arguments' lineage holds are counted first, each under its own
// shard's lock, as SubmittedIn does).
func (t *RefTable) CreateSubmittedIn(task ids.TaskID, args []ids.ObjectID, spec *pb.TaskSpec, fresh *Entry) {
	t.mustOwn()
	t.addTask(task, args, spec, true, fresh, true)
}

// RemoveLocalFreeIn is RemoveLocalIn of id and, when that release frees id's value (r's
// values then include id), MemoryStore.RemoveFreedIn of id, in one step of id's shard: v
// and ready are what the store held (as RemoveFreedIn returns them) and removed says the
// store's part is gone. The caller then frees r's values as after RemoveLocalIn, except
// that id is removed from the store already. e is a hint, as RemoveLocalIn's.
func (t *RefTable) RemoveLocalFreeIn(id ids.ObjectID, e *Entry) (r Released, v Value, ready, removed bool) {
	t.mustOwn()
	var work argHolds
	var gone slot
	sh := t.shard(id)
	sh.mu.Lock()
	if c := sh.counted(id, e); c != nil && c.rc.local > 0 {
		c.rc.local--
		sh.settle(id, c, &r, &work)
		// r was empty: a value in it now is id's, freed by this release. settle may have
		// cleared the counts (and the refs part) already; the store's part is still c's.
		if r.nv == 1 && r.v[0] == id && c.mem {
			v, ready, removed = c.sl.v, c.sl.ready, true
			gone = sh.forget(id, c)
		}
	}
	sh.mu.Unlock()
	wakeGone(gone)
	t.giveBack(work, &r)
	return r, v, ready, removed
}

func (t *RefTable) mustOwn() {
	if !t.t.owned {
		panic("objects: a RefTable made on its own has no memory store part (use NewOwned)")
	}
}
