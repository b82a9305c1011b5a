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
// A task's lineage record (its arguments) lives in the entry of its return object
// ReturnID(task, 1), every task having one return: submitting a task and dropping its
// result touch one map entry, not one per object plus one per task.
//
// The table is a leaf structure: methods take a mutex, do no I/O and return what to free.
type RefTable struct {
	mu     sync.Mutex
	objs   map[ids.ObjectID]refCount // values, not pointers: no allocation per object
	ntasks int                       // entries holding a lineage record
}

type refCount struct {
	local, lineage int32
	freed          bool // value already reported free
	task           bool // holds the lineage record of the task that returns this object
	args           []ids.ObjectID
}

// Released says what became unneeded after a change: values whose bytes (memory store
// entry, store shard copy, object table record) may be freed, and lineage records that may
// be deleted. The first two of each are held inline, so the common release (one object
// and its task's record) allocates nothing.
type Released struct {
	nv, nl int
	v      [2]ids.ObjectID
	l      [2]ids.TaskID
	moreV  []ids.ObjectID
	moreL  []ids.TaskID
}

// Empty reports whether nothing was released.
func (r *Released) Empty() bool { return r.nv == 0 && r.nl == 0 }

// AddValue adds a value that may be freed.
func (r *Released) AddValue(id ids.ObjectID) {
	if r.nv < len(r.v) {
		r.v[r.nv] = id
	} else {
		r.moreV = append(r.moreV, id)
	}
	r.nv++
}

func (r *Released) addLineage(t ids.TaskID) {
	if r.nl < len(r.l) {
		r.l[r.nl] = t
	} else {
		r.moreL = append(r.moreL, t)
	}
	r.nl++
}

// Values returns the values that may be freed, in the order they were released.
func (r *Released) Values() []ids.ObjectID {
	if r.moreV == nil {
		return r.v[:min(r.nv, len(r.v))]
	}
	return append(append([]ids.ObjectID(nil), r.v[:]...), r.moreV...)
}

// Lineage returns the lineage records that may be deleted, in the order they were released.
func (r *Released) Lineage() []ids.TaskID {
	if r.moreL == nil {
		return r.l[:min(r.nl, len(r.l))]
	}
	return append(append([]ids.TaskID(nil), r.l[:]...), r.moreL...)
}

// NewRefTable returns an empty table.
func NewRefTable() *RefTable {
	return &RefTable{objs: make(map[ids.ObjectID]refCount, 1024)}
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

// Completed is a task's finish: it drops the task's local reference to each of args and
// reports whether ret, the task's return, has no local reference left (every handle to it
// was dropped while the task ran).
func (t *RefTable) Completed(ret ids.ObjectID, args []ids.ObjectID) (unreferenced bool, r Released) {
	t.mu.Lock()
	for _, id := range args {
		t.removeLocal(id, &r)
	}
	unreferenced = t.objs[ret].local == 0
	t.mu.Unlock()
	return unreferenced, r
}

func (t *RefTable) removeLocal(id ids.ObjectID, r *Released) {
	c, ok := t.objs[id]
	if !ok || c.local == 0 {
		return // releasing twice is harmless (explicit Release then a GC cleanup)
	}
	c.local--
	t.settle(id, c, r)
}

// AddTask records the lineage of task, whose return is ReturnID(task, 1): the objects it
// takes as arguments (each counted once per occurrence).
func (t *RefTable) AddTask(task ids.TaskID, args []ids.ObjectID) {
	ret := ids.ReturnID(task, 1)
	t.mu.Lock()
	c := t.objs[ret]
	if !c.task {
		t.ntasks++
	}
	c.task, c.args = true, args
	t.objs[ret] = c
	for _, a := range args {
		c := t.objs[a]
		c.lineage++
		t.objs[a] = c
	}
	t.mu.Unlock()
}

// Submitted is a task's submission: AddLocal of its return ReturnID(task, 1) (the
// caller's reference) and AddTask, under one lock.
func (t *RefTable) Submitted(task ids.TaskID, args []ids.ObjectID) {
	ret := ids.ReturnID(task, 1)
	t.mu.Lock()
	c := t.objs[ret]
	if !c.task {
		t.ntasks++
	}
	c.local++
	c.freed = false
	c.task, c.args = true, args
	t.objs[ret] = c
	for _, a := range args {
		c := t.objs[a]
		c.lineage++
		t.objs[a] = c
	}
	t.mu.Unlock()
}

// HasLineage reports whether task's lineage record is still held.
func (t *RefTable) HasLineage(task ids.TaskID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.objs[ids.ReturnID(task, 1)].task
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
	return len(t.objs), t.ntasks
}

// settle stores c as id's counts and frees what they allow; called with the lock held.
// An object nothing references any more is forgotten, and with it the lineage record of
// its task, which gives back that record's hold on the task's arguments.
func (t *RefTable) settle(id ids.ObjectID, c refCount, r *Released) {
	if c.local > 0 {
		t.objs[id] = c
		return
	}
	if !c.freed {
		c.freed = true
		r.AddValue(id)
	}
	if c.lineage > 0 {
		t.objs[id] = c
		return
	}
	delete(t.objs, id)
	if !c.task {
		return
	}
	t.ntasks--
	r.addLineage(id.Task())
	for _, a := range c.args {
		ac, ok := t.objs[a]
		if !ok {
			continue
		}
		ac.lineage--
		if ac.lineage == 0 && ac.local == 0 {
			t.settle(a, ac, r)
		} else {
			t.objs[a] = ac
		}
	}
}
