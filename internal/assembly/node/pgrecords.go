package node

import (
	"context"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/pb"
)

// pgRecords writes the placement groups' records of this node's runtime to the GCS
// (gcs.PlacementGroupKey, under the node's lease, so they go with the process), for the
// state API. Put never blocks: the latest record of each group waits in a map and one
// goroutine writes what is there, so a burst of groups costs one write per group at
// most, and a REMOVED record is written like the others (Ray lists removed groups).
type pgRecords struct {
	n       *Node
	mu      sync.Mutex
	pending map[string]*pb.PlacementGroupInfo
	running bool
}

func (r *pgRecords) put(info *pb.PlacementGroupInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending == nil {
		r.pending = map[string]*pb.PlacementGroupInfo{}
	}
	r.pending[info.Id] = info
	if !r.running {
		r.running = true
		go r.write()
	}
}

func (r *pgRecords) write() {
	for {
		r.mu.Lock()
		batch := r.pending
		r.pending = nil
		if len(batch) == 0 {
			r.running = false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		for id, info := range batch {
			b, err := proto.Marshal(info)
			if err != nil {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err = r.n.store.Put(ctx, gcs.PlacementGroupKey(id), b, r.n.leaseID())
			cancel()
			if err != nil {
				r.n.cfg.Logger.Debug("node: writing a placement group's record failed (the state API misses it)", "group", id, "err", err)
			}
		}
	}
}
