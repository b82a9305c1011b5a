package objects

import (
	"sync"

	"github.com/ray-go/ray/internal/ids"
)

// RefTable counts, for the objects a process owns, who still needs them, and says when
// an object's value and a task's lineage record can be dropped (Ray's reference counting,
// owner side).
//
// Two counts per object:
//   - local: live ObjectRef handles in this process plus submitted tasks that take the
//     object as an argument and have not finished. While it is non-zero the value is kept.
//   - lineage: live lineage records of tasks that take the object as an argument. While
//     it is non-zero (or local is) the object might have to be recreated, so the lineage
//     record of the task that produced it is kept.
//
// A task's lineage record is dropped when every return of the task has both counts at
// zero; dropping it decrements the lineage count of each of its arguments, which may drop
// their producers' records in turn.
//
// The table is a leaf structure: methods take a mutex, do no I/O and return what to free.
type RefTable struct {
	mu    sync.Mutex
	objs  map[ids.ObjectID]refCount // values, not pointers: no allocation per object
	tasks map[ids.TaskID]lineageRec
}

type refCount struct {
	local, lineage int32
	freed          bool // value already reported free
}

// lineageRec is a task's lineage: its returns (ret when it has one, as most tasks do, so
// that recording it allocates no slice) and its arguments.
type lineageRec struct {
	ret  ids.ObjectID
	more []ids.ObjectID // all returns, when there are several (nil: ret alone)
	args []ids.ObjectID
}

// Released says what became unneeded after a change.
type Released struct {
	// Values whose bytes (memory store entry, store shard copy, object table record)
	// may be freed.
	Values []ids.ObjectID
	// Lineage records that may be deleted.
	Lineage []ids.TaskID
}

// Empty reports whether nothing was released.
func (r Released) Empty() bool { return len(r.Values) == 0 && len(r.Lineage) == 0 }

// NewRefTable returns an empty table.
func NewRefTable() *RefTable {
	return &RefTable{objs: make(map[ids.ObjectID]refCount, 1024), tasks: make(map[ids.TaskID]lineageRec, 1024)}
}

// AddLocal counts one more local reference to id.
func (t *RefTable) AddLocal(id ids.ObjectID) {
	t.mu.Lock()
	c := t.objs[id]
	c.local++
	c.freed = false
	t.objs[id] = c
	t.mu.Unlock()
}

// RemoveLocal drops one local reference to id.
func (t *RefTable) RemoveLocal(id ids.ObjectID) Released {
	var r Released
	t.mu.Lock()
	t.removeLocal(id, &r)
	t.mu.Unlock()
	return r
}

// RemoveLocalAll drops one local reference to each of ids.
func (t *RefTable) RemoveLocalAll(list []ids.ObjectID) Released {
	var r Released
	t.mu.Lock()
	for _, id := range list {
		t.removeLocal(id, &r)
	}
	t.mu.Unlock()
	return r
}

func (t *RefTable) removeLocal(id ids.ObjectID, r *Released) {
	c, ok := t.objs[id]
	if !ok || c.local == 0 {
		return // releasing twice is harmless (explicit Release then a GC cleanup)
	}
	c.local--
	t.settle(id, c, r)
}

// AddTask records a task's lineage: its return objects and the objects it takes as
// arguments (each counted once per occurrence).
func (t *RefTable) AddTask(task ids.TaskID, returns, args []ids.ObjectID) {
	rec := lineageRec{args: args}
	if len(returns) == 1 {
		rec.ret = returns[0]
	} else {
		rec.more = append([]ids.ObjectID{}, returns...)
	}
	t.mu.Lock()
	t.tasks[task] = rec
	for _, a := range args {
		c := t.objs[a]
		c.lineage++
		t.objs[a] = c
	}
	for _, o := range returns {
		if _, ok := t.objs[o]; !ok {
			t.objs[o] = refCount{}
		}
	}
	t.mu.Unlock()
}

// HasLineage reports whether task's lineage record is still held.
func (t *RefTable) HasLineage(task ids.TaskID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.tasks[task]
	return ok
}

// Counts returns id's local and lineage counts (for tests and memory reports).
func (t *RefTable) Counts(id ids.ObjectID) (local, lineage int32, known bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.objs[id]
	if !ok {
		return 0, 0, false
	}
	return c.local, c.lineage, true
}

// Len returns how many objects and lineage records the table tracks.
func (t *RefTable) Len() (objects, lineage int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.objs), len(t.tasks)
}

// settle stores c as id's counts and frees what they allow; called with the lock held.
func (t *RefTable) settle(id ids.ObjectID, c refCount, r *Released) {
	if c.local > 0 {
		t.objs[id] = c
		return
	}
	if !c.freed {
		c.freed = true
		r.Values = append(r.Values, id)
	}
	if c.lineage > 0 {
		t.objs[id] = c
		return
	}
	delete(t.objs, id)
	t.maybeDropTask(id.Task(), r)
}

// eachReturn calls f for each return of rec until f reports false; it reports whether every
// call reported true.
func (rec *lineageRec) eachReturn(f func(ids.ObjectID) bool) bool {
	if rec.more == nil {
		return f(rec.ret)
	}
	for _, o := range rec.more {
		if !f(o) {
			return false
		}
	}
	return true
}

func (t *RefTable) maybeDropTask(task ids.TaskID, r *Released) {
	rec, ok := t.tasks[task]
	if !ok {
		return
	}
	unused := rec.eachReturn(func(o ids.ObjectID) bool {
		c, ok := t.objs[o]
		return !ok || c.local == 0 && c.lineage == 0
	})
	if !unused {
		return
	}
	delete(t.tasks, task)
	r.Lineage = append(r.Lineage, task)
	rec.eachReturn(func(o ids.ObjectID) bool {
		delete(t.objs, o)
		return true
	})
	for _, a := range rec.args {
		c, ok := t.objs[a]
		if !ok {
			continue
		}
		c.lineage--
		if c.lineage == 0 && c.local == 0 {
			t.settle(a, c, r)
		} else {
			t.objs[a] = c
		}
	}
}
