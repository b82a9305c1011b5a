package objects

import (
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
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
// A task's lineage record (its arguments) lives in the entry of its first return object
// ReturnID(task, 1): submitting a task and dropping its result touch one map entry, not one
// per object plus one per task. A task of several returns (AddReturns) has its other
// returns hold the first one's entry as a lineage reference, so the record lives while any
// of them does.
//
// The table is a leaf structure: methods take mutexes, do no I/O and return what to free.
// It is partitioned by object ID into shards (ids.ObjectID.Hash), each a map behind its own
// mutex; a method locks one shard at a time. Dropping a lineage record gives back its
// holds on the task's arguments, which live in other shards: those decrements are done
// after the record's shard is unlocked, one argument at a time, so no two shard locks are
// ever held together. Counts only ever meet zero once per hold, so the goroutine whose
// decrement takes an object's last count is the one that settles it, wherever that
// decrement comes from. A record's holds on its arguments are taken before the record is
// visible, so they are never given back before they were taken.
//
// An owner's table shares its entries with its memory store (NewOwned).
type RefTable struct {
	t *table
}

// refCount is the reference table's part of an object's Entry.
type refCount struct {
	local, lineage int32
	freed          bool // value already reported free
	task           bool // holds the lineage record of the task that returns this object
	recorded       bool // the record was written to the GCS (Record)
	keep           bool // the value is kept while lineage holds it, too (KeepForLineage)
	sibling        bool // a return after the first of its task: holds the first's entry (AddReturns)
	args           []ids.ObjectID
	spec           *pb.TaskSpec // the record: the task's spec (reconstruction runs it again)
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
	// recorded lists the records of l (and moreL) that were written to the GCS (Record):
	// the ones to delete there.
	recorded []ids.TaskID
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

// Recorded returns the lineage records released that Record had written to the GCS: the
// ones to delete there (a record released before it was written never reaches it).
func (r *Released) Recorded() []ids.TaskID { return r.recorded }

// Lineage returns the lineage records that may be deleted, in the order they were released.
func (r *Released) Lineage() []ids.TaskID {
	if r.moreL == nil {
		return r.l[:min(r.nl, len(r.l))]
	}
	return append(append([]ids.TaskID(nil), r.l[:]...), r.moreL...)
}

// NewRefTable returns an empty table with Shards(GOMAXPROCS) shards.
func NewRefTable() *RefTable { return newRefTable(defaultShards()) }

func newRefTable(n int) *RefTable { return &RefTable{t: newTable(n)} }

func (t *RefTable) shard(id ids.ObjectID) *tshard { return t.t.shard(id) }

// counted returns id's entry (see find for hint) if the table counts it (the shard's lock
// held).
func (sh *tshard) counted(id ids.ObjectID, hint *Entry) *Entry {
	if e := sh.find(id, hint); e != nil && e.refs {
		return e
	}
	return nil
}

// count returns id's entry, counted from now on if it was not (the shard's lock held).
func (sh *tshard) count(id ids.ObjectID) *Entry { return sh.countIn(id, nil) }

// countIn is count with a hint (see find).
func (sh *tshard) countIn(id ids.ObjectID, hint *Entry) *Entry {
	e := sh.find(id, hint)
	if e == nil {
		e = sh.entry(id, nil)
	}
	if !e.refs {
		e.refs = true
		e.rc = refCount{}
		sh.nrefs++
	}
	return e
}

// argHolds are the arguments whose lineage holds a dropped record gives back, in order.
type argHolds []ids.ObjectID

// AddLocal counts one more local reference to id.
func (t *RefTable) AddLocal(id ids.ObjectID) {
	sh := t.shard(id)
	sh.mu.Lock()
	c := &sh.count(id).rc
	c.local++
	c.freed = false
	sh.mu.Unlock()
}

// KeepForLineage makes the table keep id's value while lineage records hold it, not only
// while references do: for an object that cannot be recreated but that a task's lineage
// needs (the runtime's stored copy of a task's by-value argument), whose value an ordinary
// object would drop once the task has finished with it. id must be counted (AddLocal).
func (t *RefTable) KeepForLineage(id ids.ObjectID) {
	sh := t.shard(id)
	sh.mu.Lock()
	if e := sh.counted(id, nil); e != nil {
		e.rc.keep = true
	}
	sh.mu.Unlock()
}

// RemoveLocal drops one local reference to id.
func (t *RefTable) RemoveLocal(id ids.ObjectID) Released { return t.RemoveLocalIn(id, nil) }

// RemoveLocalIn is RemoveLocal for a caller that holds a pointer to id's entry (see
// MemoryStore.GetIn).
func (t *RefTable) RemoveLocalIn(id ids.ObjectID, e *Entry) Released {
	var r Released
	var work argHolds
	t.removeLocal(id, e, &r, &work)
	t.giveBack(work, &r)
	return r
}

// RemoveLocalAll drops one local reference to each of ids.
func (t *RefTable) RemoveLocalAll(list []ids.ObjectID) Released {
	var r Released
	var work argHolds
	for _, id := range list {
		t.removeLocal(id, nil, &r, &work)
	}
	t.giveBack(work, &r)
	return r
}

// Completed is a task's finish: it drops the task's local reference to each of args and
// reports whether ret, the task's return, has no local reference left (every handle to it
// was dropped while the task ran); then the caller frees ret's value.
func (t *RefTable) Completed(ret ids.ObjectID, args []ids.ObjectID) (unreferenced bool, r Released) {
	var work argHolds
	for _, id := range args {
		t.removeLocal(id, nil, &r, &work)
	}
	t.giveBack(work, &r)
	sh := t.shard(ret)
	sh.mu.Lock()
	e := sh.counted(ret, nil)
	unreferenced = e == nil || e.rc.local == 0
	if e != nil && unreferenced {
		e.rc.freed = true // the caller frees the value (MemoryStore.RemoveFreedIn)
	}
	sh.mu.Unlock()
	return unreferenced, r
}

func (t *RefTable) removeLocal(id ids.ObjectID, hint *Entry, r *Released, work *argHolds) {
	sh := t.shard(id)
	sh.mu.Lock()
	if e := sh.counted(id, hint); e != nil && e.rc.local > 0 { // releasing twice is harmless (explicit Release then a GC cleanup)
		e.rc.local--
		sh.settle(id, e, r, work)
	}
	sh.mu.Unlock()
}

// giveBack drops the lineage holds of the records settle released, and of the records
// that releases in turn, one argument (and shard lock) at a time.
func (t *RefTable) giveBack(work argHolds, r *Released) {
	for i := 0; i < len(work); i++ {
		a := work[i]
		sh := t.shard(a)
		sh.mu.Lock()
		if e := sh.counted(a, nil); e != nil {
			e.rc.lineage--
			if e.rc.lineage == 0 && e.rc.local == 0 {
				sh.settle(a, e, r, &work)
			}
		}
		sh.mu.Unlock()
	}
}

// AddTask records the lineage of task, whose return is ReturnID(task, 1): the objects it
// takes as arguments (each counted once per occurrence) and its spec, which Spec returns
// while the record lives.
func (t *RefTable) AddTask(task ids.TaskID, args []ids.ObjectID, spec *pb.TaskSpec) {
	t.addTask(task, args, spec, false, nil, false)
}

// Submitted is a task's submission: AddLocal of its return ReturnID(task, 1) (the
// caller's reference) and AddTask.
func (t *RefTable) Submitted(task ids.TaskID, args []ids.ObjectID, spec *pb.TaskSpec) {
	t.addTask(task, args, spec, true, nil, false)
}

// SubmittedIn is Submitted for the caller that passed e to MemoryStore.CreateIn for the
// task's first return: its entry is found without looking it up.
func (t *RefTable) SubmittedIn(task ids.TaskID, args []ids.ObjectID, spec *pb.TaskSpec, e *Entry) {
	t.addTask(task, args, spec, true, e, false)
}

// addTask is AddTask, Submitted (local) and, with create, CreateSubmittedIn (hint is then
// the fresh entry for the return's store part).
func (t *RefTable) addTask(task ids.TaskID, args []ids.ObjectID, spec *pb.TaskSpec, local bool, hint *Entry, create bool) {
	for _, a := range args { // before the record exists: see the type's doc
		sh := t.shard(a)
		sh.mu.Lock()
		sh.count(a).rc.lineage++
		sh.mu.Unlock()
	}
	ret := ids.ReturnID(task, 1)
	sh := t.shard(ret)
	sh.mu.Lock()
	if create {
		hint = sh.hold(ret, hint)
	}
	c := &sh.countIn(ret, hint).rc
	if !c.task {
		sh.ntasks++
	}
	if local {
		c.local++
		c.freed = false
	}
	c.task, c.args, c.spec = true, args, spec
	sh.mu.Unlock()
}

// AddReturns counts the caller's reference to returns 2 to n of task, a task of several
// returns whose first Submitted counted. Each holds the first return's entry by a lineage
// reference (given back when the return is forgotten), so that the task's record, kept
// there, lives while any of its returns might have to be recreated.
func (t *RefTable) AddReturns(task ids.TaskID, n int) {
	for i := 2; i <= n; i++ {
		t.AddReturn(task, i)
	}
}

// AddReturn is AddReturns for return index (at least 2) alone: a streaming generator's
// item, counted as it arrives.
func (t *RefTable) AddReturn(task ids.TaskID, index int) {
	first := ids.ReturnID(task, 1)
	sh := t.shard(first)
	sh.mu.Lock()
	sh.count(first).rc.lineage++
	sh.mu.Unlock()
	id := ids.ReturnID(task, uint32(index))
	sh = t.shard(id)
	sh.mu.Lock()
	c := &sh.count(id).rc
	c.local++
	c.freed = false
	c.sibling = true
	sh.mu.Unlock()
}

// Record writes task's lineage record with write (which gets the spec) if the record
// still lives and was not written yet, and marks it written: a record released later is
// reported in Released.Recorded, one released before never is. write runs under the
// record's shard lock, which orders it against the release: it must not call the table.
// It reports whether write ran.
func (t *RefTable) Record(task ids.TaskID, write func(*pb.TaskSpec)) bool {
	return t.RecordIn(ids.ReturnID(task, 1), nil, write)
}

// RecordIn is Record of the task that returns ret, for a caller that passed e to
// MemoryStore.CreateIn for ret: while e is ret's entry the record is found without
// looking it up.
func (t *RefTable) RecordIn(ret ids.ObjectID, e *Entry, write func(*pb.TaskSpec)) bool {
	sh := t.shard(ret)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e = sh.counted(ret, e)
	if e == nil || !e.rc.task || e.rc.recorded || e.rc.spec == nil {
		return false
	}
	write(e.rc.spec)
	e.rc.recorded = true
	return true
}

// Spec returns the spec of task's lineage record (nil when the record is gone).
func (t *RefTable) Spec(task ids.TaskID) *pb.TaskSpec {
	ret := ids.ReturnID(task, 1)
	sh := t.shard(ret)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e := sh.counted(ret, nil); e != nil {
		return e.rc.spec
	}
	return nil
}

// Args returns the objects task's lineage record holds (AddTask's args; nil when the record
// is gone). The slice is the record's: do not modify it.
func (t *RefTable) Args(task ids.TaskID) []ids.ObjectID {
	ret := ids.ReturnID(task, 1)
	sh := t.shard(ret)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e := sh.counted(ret, nil); e != nil {
		return e.rc.args
	}
	return nil
}

// HasLineage reports whether task's lineage record is still held.
func (t *RefTable) HasLineage(task ids.TaskID) bool {
	ret := ids.ReturnID(task, 1)
	sh := t.shard(ret)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.counted(ret, nil)
	return e != nil && e.rc.task
}

// Counts returns id's local and lineage counts (for tests and memory reports).
func (t *RefTable) Counts(id ids.ObjectID) (local, lineage int32, known bool) {
	sh := t.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.counted(id, nil)
	if e == nil {
		return 0, 0, false
	}
	return e.rc.local, e.rc.lineage, true
}

// Len returns how many objects and lineage records the table tracks.
func (t *RefTable) Len() (objects, lineage int) {
	for i := range t.t.shards {
		sh := &t.t.shards[i]
		sh.mu.Lock()
		objects += sh.nrefs
		lineage += sh.ntasks
		sh.mu.Unlock()
	}
	return objects, lineage
}

// settle frees what e's counts (id's entry) allow; called with the shard's lock held. An
// object nothing references any more is forgotten, and with it the lineage record of its
// task, whose holds on the task's arguments go to work (see giveBack).
func (sh *tshard) settle(id ids.ObjectID, e *Entry, r *Released, work *argHolds) {
	c := &e.rc
	if c.local > 0 || c.keep && c.lineage > 0 {
		return
	}
	if !c.freed {
		c.freed = true
		r.AddValue(id)
	}
	if c.lineage > 0 {
		return
	}
	task, recorded, args, sibling := c.task, c.recorded, c.args, c.sibling
	e.refs = false
	e.rc = refCount{}
	sh.nrefs--
	sh.drop(id, e)
	if sibling {
		*work = append(*work, ids.ReturnID(id.Task(), 1)) // its hold on the first return
	}
	if !task {
		return
	}
	sh.ntasks--
	r.addLineage(id.Task())
	if recorded {
		r.recorded = append(r.recorded, id.Task())
	}
	*work = append(*work, args...)
}
