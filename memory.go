package ray

import (
	"context"

	"github.com/ray-go/ray/internal/assembly/taskstate"
	"github.com/ray-go/ray/internal/base/ids"
)

// MemoryReport is what the cluster's object stores hold (the data of `rayctl memory`).
type MemoryReport struct {
	Nodes []NodeMemory
}

// NodeMemory is one node's object store.
type NodeMemory struct {
	Node string
	// Budget is the bytes the store keeps in memory before it spills; a worker process's
	// is its machine's (rayctl start --object-store-memory), which the stores of all the
	// worker processes there share.
	Budget         int64
	Objects        int64 // objects held, in memory or spilled
	Bytes          int64 // their total size
	MemoryBytes    int64 // held in memory
	SpilledObjects int64
	SpilledBytes   int64 // uncompressed size of what is on disk
	SpillErrors    int64 // spills that failed (the objects stayed in memory)
	// InFlightBytes are objects being pulled into this process from other nodes right now
	// (reported for the caller's own node only).
	InFlightBytes int64
	Largest       []StoredObject
}

// StoredObject is one object in a store.
type StoredObject struct {
	ID      string
	Size    int64
	Owner   string // the owner's actor ID ("address/id")
	Spilled bool
}

// Memory reports the object stores' usage and their top largest objects (Ray's
// `ray memory`): this process's node and every node that runs the job's tasks. Objects
// small enough to travel inline (up to 100 KiB) live with their owner and are not counted
// here. In local mode there is one node.
//
// A process of a running job whose registration lapsed (stopped, hung, starved or cut
// off: `rayctl list nodes` shows it UNREACHABLE) cannot be asked: Memory then returns the
// others' figures with a *PartialStateError naming it (errors.Is(err, ErrPartialState)),
// as the object listing calls do.
func Memory(ctx context.Context, top int) (MemoryReport, error) {
	tc, err := taskContext(ctx)
	if err != nil {
		return MemoryReport{}, err
	}
	self := tc.Core.Node()
	nodes := []ids.NodeID{self}
	budgets := map[ids.NodeID]int64{self: tc.Core.StoreBudget()}
	for _, info := range tc.Core.NodeInfos() {
		id := ids.NodeID(info.NodeId)
		if _, dup := budgets[id]; !dup {
			nodes = append(nodes, id)
		}
		budgets[id] = info.ObjectStoreBytes
	}
	var missing []string
	if n := nodeOf(ctx); n != nil && n.GCS() != nil {
		// Best effort: when the GCS cannot be read, the stores that answer are reported.
		lost, _ := taskstate.Unreachable(ctx, n.GCS(), "", n.KnownExited)
		for _, id := range lost {
			if _, in := budgets[ids.NodeID(id)]; !in {
				missing = append(missing, id)
			}
		}
	}
	var rep MemoryReport
	for _, node := range nodes {
		st, err := tc.Core.StoreStatsOf(ctx, node, top)
		if err != nil {
			return rep, err
		}
		n := NodeMemory{Node: string(node), Budget: budgets[node], Objects: st.Objects, Bytes: st.Bytes,
			MemoryBytes: st.MemoryBytes, SpilledObjects: st.SpilledObjects, SpilledBytes: st.SpilledBytes, SpillErrors: st.SpillErrors}
		if node == self {
			n.InFlightBytes = tc.Core.InFlightBytes()
		}
		for _, o := range st.Largest {
			id, _ := ids.ObjectIDFromBytes(o.ObjectId)
			so := StoredObject{ID: id.String(), Size: o.Size, Spilled: o.Spilled}
			if o.Owner != nil {
				so.Owner = o.Owner.Address + "/" + o.Owner.Id
			}
			n.Largest = append(n.Largest, so)
		}
		rep.Nodes = append(rep.Nodes, n)
	}
	return rep, partialError(missing, len(rep.Nodes))
}
