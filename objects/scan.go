package objects

import (
	"github.com/ray-go/ray/internal/base/ids"
)

// Info is what an owner's table says of one object (the state API's `rayctl list
// objects`): a copy, taken under its shard's lock.
type Info struct {
	ID ids.ObjectID
	// Held: the memory store holds the object (its future, pending or ready); false when
	// only the reference table keeps it (its value was freed, its lineage is kept).
	Held  bool
	Ready bool
	// Value is the object's value when Ready: inline bytes (Data), or where it is stored
	// (InStore, Node), or the producing task's error (Err). Data is not copied: read only
	// its length.
	Value Value
	// Local and Lineage are the reference counts (see RefTable): handles in this process
	// plus unfinished tasks that take it, and lineage records of tasks that take it.
	Local, Lineage int32
}

// Scan calls f with every object of the table, a shard at a time (each under its lock,
// so f must not call back into the table), until f returns false.
func (s *MemoryStore) Scan(f func(*Info) bool) {
	var info Info
	for i := range s.t.shards {
		sh := &s.t.shards[i]
		sh.mu.Lock()
		for id, e := range sh.m {
			info = Info{ID: id, Held: e.mem, Ready: e.mem && e.sl.ready, Local: e.rc.local, Lineage: e.rc.lineage}
			if info.Ready {
				info.Value = e.sl.v
			}
			if !f(&info) {
				sh.mu.Unlock()
				return
			}
		}
		sh.mu.Unlock()
	}
}
