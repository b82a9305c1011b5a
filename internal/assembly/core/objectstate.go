package core

import (
	"context"
	"sort"
	"strings"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/objects"
)

// Objects in the state API (`rayctl list objects`, `summary objects`): the objects this
// process owns, read from its table (objects.MemoryStore.Scan) when someone asks, with how
// many other processes borrow each, and a row for each object it borrows (reference type
// RefBorrowed, objects.Borrows.ScanBorrowed); nothing is recorded for it.

// The states of an object as the state API shows them.
const (
	ObjectPending = "PENDING" // its task has not returned it yet
	ObjectReady   = "READY"   // its value is inline with the owner or in a node's store
	ObjectFailed  = "FAILED"  // its task failed: the value is the error
	ObjectFreed   = "FREED"   // its value was freed; its lineage is kept (it could be recreated)
	// ObjectAtOwner: a borrowed object this process has not read: its owner knows its state
	// (the owner's row of the same object says it).
	ObjectAtOwner = "AT_OWNER"
	// ObjectLost: its value was in the store of a node this process knows is dead (its
	// Location); a Get recreates it from its lineage when it can, or fails with
	// ErrObjectLost saying why.
	ObjectLost = "LOST"
)

// The reference types of an object (Ray's names where Ray has one).
const (
	// RefLocal: handles in the owner's process, or unfinished tasks that take it.
	RefLocal = "LOCAL_REFERENCE"
	// RefLineage: no handle, only lineage records of tasks that took it (kept so that
	// those tasks' results can be recreated).
	RefLineage = "LINEAGE_REFERENCE"
	// RefNone: nothing counts it any more; it is about to be freed.
	RefNone = "UNREFERENCED"
	// RefActorHandle: the handle object of a non-detached actor (lifetime.go), held while
	// any handle to the actor lives.
	RefActorHandle = "ACTOR_HANDLE"
	// RefBorrowed: a process that does not own the object holds refs to it (it got them
	// inside a value or as a task's argument); its row is that process's (Holder), and the
	// owner counts it among the object's borrowers.
	RefBorrowed = "BORROWED"
)

// Where an object lives, besides a node's ID.
const (
	LocationInline = "INLINE" // with its owner (small values, errors)
)

// ObjectQuery selects objects. Empty fields match everything.
type ObjectQuery struct {
	State   string `json:"state,omitempty"`
	RefType string `json:"reference_type,omitempty"`
	// ObjectID is the hex object ID, or a prefix of it.
	ObjectID string `json:"object_id,omitempty"`
	// Limit is how many objects to return, by ID (0: all).
	Limit int `json:"limit,omitempty"`
	// Summary asks for counts by state and reference type (of every match).
	Summary bool `json:"summary,omitempty"`
}

// ObjectInfo is one object as the state API shows it.
type ObjectInfo struct {
	ObjectID string `json:"object_id"`
	Size     int64  `json:"size"` // bytes of its encoded value (0 while pending)
	State    string `json:"state"`
	RefType  string `json:"reference_type"`
	// Location is the node whose store holds it, or LocationInline ("" while pending).
	Location string `json:"location,omitempty"`
	Owner    string `json:"owner_node"` // the node of the process that owns it
	Job      string `json:"job_id"`
	Local    int32  `json:"local_refs"`
	Lineage  int32  `json:"lineage_refs"`
	// Task is the task that returns or put it.
	Task string `json:"task_id"`
	// Borrowers (an owner's row) is how many other processes borrow it.
	Borrowers int32 `json:"borrowers,omitempty"`
	// Holder and OwnerAddress are set on a borrower's row (RefBorrowed): the node of the
	// borrowing process and the owner's address (Owner is then empty: a borrower knows
	// its owner by address).
	Holder       string `json:"holder_node,omitempty"`
	OwnerAddress string `json:"owner_address,omitempty"`
	// CallSite is where the owner created it ("file:line" of the user's call of ray.Put or
	// a Remote), when the owner records call sites (RAY_record_ref_creation_sites=1,
	// Config.CallSites; off by default: "").
	CallSite string `json:"call_site,omitempty"`
}

// ObjectCount is how many matching objects have one state and reference type.
type ObjectCount struct {
	State   string `json:"state"`
	RefType string `json:"reference_type"`
	Count   int    `json:"count"`
	Bytes   int64  `json:"bytes"`
}

// ObjectReport is an object query's answer.
type ObjectReport struct {
	Objects []ObjectInfo  `json:"objects"`
	Total   int           `json:"total"` // matches, whatever Limit
	Summary []ObjectCount `json:"summary,omitempty"`
}

// objectInfo describes one entry of the table.
func (c *Core) objectInfo(in *objects.Info) ObjectInfo {
	o := ObjectInfo{ObjectID: in.ID.String(), Owner: string(c.cfg.Node), Job: string(c.cfg.Job), Local: in.Local, Lineage: in.Lineage,
		Task: in.ID.Task().String(), Borrowers: int32(c.borrows.Lenders(in.ID))}
	switch {
	case !in.Held:
		o.State = ObjectFreed
	case !in.Ready:
		o.State = ObjectPending
	case in.Value.Err != nil:
		o.State = ObjectFailed
	default:
		o.State = ObjectReady
	}
	_, actorHandle := in.ID.HandleOf()
	switch {
	case actorHandle && in.Local > 0:
		o.RefType = RefActorHandle
	case in.Local > 0:
		o.RefType = RefLocal
	case in.Lineage > 0:
		o.RefType = RefLineage
	default:
		o.RefType = RefNone
	}
	if in.Ready {
		c.setValue(&o, in.Value)
	}
	return o
}

// setValue fills in o's size and location from a ready value.
func (c *Core) setValue(o *ObjectInfo, v objects.Value) {
	o.Size = v.Size
	if o.Size == 0 {
		o.Size = int64(len(v.Data))
	}
	switch {
	case !v.InStore:
		o.Location = LocationInline
	case v.Node == "":
		o.Location = string(c.cfg.Node)
	default:
		o.Location = string(v.Node)
	}
	if o.State == ObjectReady && c.lostHere(v) {
		o.State = ObjectLost // the node that held it is dead: the next Get recreates it
	}
}

// borrowedInfo describes one object this process borrows.
func (c *Core) borrowedInfo(b objects.BorrowInfo) ObjectInfo {
	o := ObjectInfo{ObjectID: b.ID.String(), State: ObjectAtOwner, RefType: RefBorrowed, Job: string(c.cfg.Job),
		Local: int32(b.Holds), Task: b.ID.Task().String(), Holder: string(c.cfg.Node), OwnerAddress: b.Owner.GetAddress()}
	if v, ready, known := c.mem.Get(b.ID); known && ready {
		o.State = ObjectReady
		if v.Err != nil {
			o.State = ObjectFailed
		}
		c.setValue(&o, v)
	}
	return o
}

// ListObjects answers q from this process's table of the objects it owns and its borrows
// (rows of RefBorrowed): the first q.Limit matches by object ID, the number of matches and
// (q.Summary) the counts.
func (c *Core) ListObjects(ctx context.Context, q ObjectQuery) (ObjectReport, error) {
	var out ObjectReport
	counts := map[[2]string]*ObjectCount{}
	prefix := strings.ToLower(q.ObjectID)
	add := func(o ObjectInfo) {
		if (q.State != "" && o.State != q.State) || (q.RefType != "" && o.RefType != q.RefType) {
			return
		}
		out.Total++
		if q.Summary {
			k := [2]string{o.State, o.RefType}
			if counts[k] == nil {
				counts[k] = &ObjectCount{State: o.State, RefType: o.RefType}
			}
			counts[k].Count++
			counts[k].Bytes += o.Size
		}
		out.Objects = append(out.Objects, o)
		if q.Limit > 0 && len(out.Objects) > 4*q.Limit {
			out.Objects = LimitObjects(out.Objects, q.Limit)
		}
	}
	var err error
	c.mem.Scan(func(in *objects.Info) bool {
		if err = ctx.Err(); err != nil {
			return false
		}
		if prefix != "" && !strings.HasPrefix(in.ID.String(), prefix) {
			return true
		}
		if _, borrowed := c.borrows.Get(in.ID); borrowed {
			return true // a borrowed object's value read here: its row is the borrow's, below
		}
		o := c.objectInfo(in)
		if c.sites != nil {
			site := c.sites.get(in.ID)
			if site == "" {
				site = c.sites.get(ids.ReturnID(in.ID.Task(), 1)) // a task's other returns: its call's
			}
			o.CallSite = site
		}
		add(o)
		return true
	})
	if err == nil {
		c.borrows.ScanBorrowed(func(b objects.BorrowInfo) bool {
			if err = ctx.Err(); err != nil {
				return false
			}
			if prefix != "" && !strings.HasPrefix(b.ID.String(), prefix) {
				return true
			}
			add(c.borrowedInfo(b))
			return true
		})
	}
	if err != nil {
		return ObjectReport{}, err
	}
	out.Objects = LimitObjects(out.Objects, q.Limit)
	out.Summary = ObjectSummaryOf(counts)
	return out, nil
}

// LimitObjects sorts objects by ID and keeps the first limit (0: all).
func LimitObjects(list []ObjectInfo, limit int) []ObjectInfo {
	sort.Slice(list, func(i, j int) bool { return list[i].ObjectID < list[j].ObjectID })
	if limit > 0 && len(list) > limit {
		list = list[:limit]
	}
	return list
}

// ObjectSummaryOf turns counts by (state, reference type) into a sorted list.
func ObjectSummaryOf(counts map[[2]string]*ObjectCount) []ObjectCount {
	out := make([]ObjectCount, 0, len(counts))
	for _, c := range counts {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].State != out[j].State {
			return out[i].State < out[j].State
		}
		return out[i].RefType < out[j].RefType
	})
	return out
}
