package ray

import (
	"context"
	"errors"
	"strings"

	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/assembly/taskstate"
)

// The state API for objects (Ray's ray.util.state.list_objects and summarize_objects):
// every process answers, from its table of the objects it owns and those it borrows, a
// query put in the GCS; these functions ask every process of the job and merge. `rayctl
// list objects` and `rayctl summary objects` print the same.

// The states of an object (ObjectState.State).
const (
	ObjectPending = core.ObjectPending // its task has not returned it yet
	ObjectReady   = core.ObjectReady   // its value is with its owner (inline) or in a node's store
	ObjectFailed  = core.ObjectFailed  // its task failed: its value is the error
	ObjectFreed   = core.ObjectFreed   // its value was freed; the lineage that can recreate it is kept
	// ObjectAtOwner: a borrowed object (BorrowedReference) the borrowing process has not
	// read; its owner's row says its state.
	ObjectAtOwner = core.ObjectAtOwner
	// ObjectLost: its value was in the store of a node that is dead (Location); a Get
	// recreates it from its lineage when it can, or fails with ErrObjectLost saying why.
	ObjectLost = core.ObjectLost
)

// The reference types of an object (ObjectState.RefType).
const (
	// LocalReference: handles in the owner's process, or unfinished tasks that take it.
	LocalReference = core.RefLocal
	// LineageReference: only lineage records of tasks that took it.
	LineageReference = core.RefLineage
	// Unreferenced: nothing counts it any more; it is about to be freed.
	Unreferenced = core.RefNone
	// ActorHandleReference: the small object by which the owner of a non-detached actor
	// counts the handles to it (see ActorHandle); the actor ends when it is freed.
	ActorHandleReference = core.RefActorHandle
	// BorrowedReference: a process that does not own the object holds refs to it (from a
	// value, a task's argument or an actor's state); the row is that process's (HolderNode),
	// and the owner's row counts it in Borrowers.
	BorrowedReference = core.RefBorrowed
)

// ObjectState is one object as its owner knows it.
type ObjectState struct {
	ObjectID  string
	Size      int64  // bytes of its encoded value (0 while pending)
	State     string // one of the Object* state constants
	RefType   string // LocalReference, LineageReference, Unreferenced, ActorHandleReference or BorrowedReference
	Location  string // the node whose store holds it, "INLINE" (with its owner), or "" while pending
	OwnerNode string // the process (node ID) that owns it
	Job       string
	TaskID    string // the task that returns it (or put it)
	// Borrowers (an owner's row) is how many other processes hold refs to it.
	Borrowers int
	// HolderNode and OwnerAddress are a borrower's row's (BorrowedReference): the node of
	// the process that borrows it and its owner's address (OwnerNode is then "").
	HolderNode   string
	OwnerAddress string
	// CallSite is where its owner created it ("file:line" of the Put or Remote), when the
	// owner's process runs with RAY_record_ref_creation_sites=1 (Ray's switch; off by
	// default: "").
	CallSite string
}

// ObjectFilter selects objects: empty fields match everything.
type ObjectFilter struct {
	// Job is the job whose objects to list ("": the caller's own job; AllJobs: every job).
	Job      string
	AllJobs  bool
	State    string // one of the Object* state constants
	RefType  string
	ObjectID string // an object ID (ObjectRef.ID) or a prefix of it
	// Limit is how many to return, by ID (0: all).
	Limit int
}

// ObjectCount is how many objects, of how many bytes, have one state and reference type.
type ObjectCount struct {
	State   string
	RefType string
	Count   int
	Bytes   int64
}

// ListObjects returns the objects that match f, by ID, and how many matched in all (which
// may exceed f.Limit). When some processes of the job did not answer in time, it returns
// what the others answered with a *PartialStateError naming them.
func ListObjects(ctx context.Context, f ObjectFilter) ([]ObjectState, int, error) {
	res, err := gatherObjects(ctx, f, core.ObjectQuery{State: f.State, RefType: f.RefType, ObjectID: strings.ToLower(f.ObjectID), Limit: f.Limit})
	if res == nil {
		return nil, 0, err
	}
	out := make([]ObjectState, len(res.Objects))
	for i, o := range res.Objects {
		out[i] = ObjectState{ObjectID: o.ObjectID, Size: o.Size, State: o.State, RefType: o.RefType, Location: o.Location,
			OwnerNode: o.Owner, Job: o.Job, TaskID: o.Task, Borrowers: int(o.Borrowers), HolderNode: o.Holder, OwnerAddress: o.OwnerAddress, CallSite: o.CallSite}
	}
	return out, res.Total, err
}

// SummarizeObjects counts the job's objects by state and reference type, with their bytes
// (f's Job, AllJobs and filters apply; Limit does not). Counts without some processes'
// come with a *PartialStateError, as ListObjects.
func SummarizeObjects(ctx context.Context, f ObjectFilter) ([]ObjectCount, error) {
	res, err := gatherObjects(ctx, f, core.ObjectQuery{State: f.State, RefType: f.RefType, ObjectID: strings.ToLower(f.ObjectID), Limit: 1, Summary: true})
	if res == nil {
		return nil, err
	}
	out := make([]ObjectCount, len(res.Summary))
	for i, c := range res.Summary {
		out[i] = ObjectCount{State: c.State, RefType: c.RefType, Count: c.Count, Bytes: c.Bytes}
	}
	return out, err
}

func gatherObjects(ctx context.Context, f ObjectFilter, q core.ObjectQuery) (*core.ObjectReport, error) {
	n := nodeOf(ctx)
	if n == nil {
		return nil, errors.New("ray: the state API needs the context ray.Init returned")
	}
	job := f.Job
	if job == "" && !f.AllJobs {
		job = string(n.Core.Job())
	}
	res, err := taskstate.GatherObjects(ctx, n.GCS(), job, q, taskstate.Options{Local: n.Core, LocalNode: n.ID, Dead: n.KnownExited})
	if err != nil {
		return nil, rayErrorf("ray: %w", err)
	}
	return &res.ObjectReport, partialError(res.Missing, res.Processes)
}
