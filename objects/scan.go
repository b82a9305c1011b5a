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

// Scan calls f with every object of the table until f returns false. It copies a shard's
// entries under the shard's lock and calls f after unlocking it, so that a scan holds each
// lock only for the copy (f may call back into the table; what changed since the copy is
// not seen).
func (s *MemoryStore) Scan(f func(*Info) bool) {
	var buf []Info
	for i := range s.t.shards {
		sh := &s.t.shards[i]
		sh.mu.Lock()
		buf = buf[:0]
		for id, e := range sh.m {
			in := Info{ID: id, Held: e.mem, Ready: e.mem && e.sl.ready, Local: e.rc.local, Lineage: e.rc.lineage}
			if in.Ready {
				in.Value = e.sl.v
			}
			buf = append(buf, in)
		}
		sh.mu.Unlock()
		for j := range buf {
			if !f(&buf[j]) {
				return
			}
		}
	}
}
