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
// state API and for the other processes (the actor managers end the actors of a group
// whose record is gone). Put never blocks: the latest record of each group waits in a map
// and one goroutine writes what is there, so a burst of groups costs one write per group
// at most, and a REMOVED record is written like the others (Ray lists removed groups).
// The latest record of each group not removed is kept (live), and written again when the
// node takes a new lease after losing its own (rewrite: a GCS outage longer than the
// lease deleted them).
type pgRecords struct {
	n       *Node
	mu      sync.Mutex
	pending map[string]*pb.PlacementGroupInfo
	live    map[string]*pb.PlacementGroupInfo
	running bool
}

func (r *pgRecords) put(info *pb.PlacementGroupInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.live == nil {
		r.live = map[string]*pb.PlacementGroupInfo{}
	}
	if info.State == "REMOVED" {
		delete(r.live, info.Id)
	} else {
		r.live[info.Id] = info
	}
	r.queue(info)
}

// queue has info written. Called with r.mu held.
func (r *pgRecords) queue(info *pb.PlacementGroupInfo) {
	if r.pending == nil {
		r.pending = map[string]*pb.PlacementGroupInfo{}
	}
	r.pending[info.Id] = info
	if !r.running {
		r.running = true
		go r.write()
	}
}

// rewrite writes again the records of the groups not removed (on the new lease).
func (r *pgRecords) rewrite() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, info := range r.live {
		if _, queued := r.pending[info.Id]; !queued {
			r.queue(info)
		}
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
		var failed []*pb.PlacementGroupInfo
		for id, info := range batch {
			b, err := proto.Marshal(info)
			if err != nil {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err = r.n.store.Put(ctx, gcs.PlacementGroupKey(id), b, r.n.leaseID())
			cancel()
			if err != nil {
				r.n.cfg.Logger.Debug("node: writing a placement group's record failed; trying again", "group", id, "err", err)
				failed = append(failed, info)
			}
		}
		if len(failed) > 0 {
			// Written again (unless a newer record came meanwhile) while the node runs: a
			// group whose record stays missing is taken for one whose creator ended.
			time.Sleep(pgWriteRetry)
			r.n.mu.Lock()
			stopped := r.n.stopped
			r.n.mu.Unlock()
			if stopped {
				r.mu.Lock()
				r.running = false
				r.mu.Unlock()
				return
			}
			r.mu.Lock()
			for _, info := range failed {
				if _, newer := r.pending[info.Id]; !newer && (info.State == "REMOVED" || r.live[info.Id] == info) {
					if r.pending == nil {
						r.pending = map[string]*pb.PlacementGroupInfo{}
					}
					r.pending[info.Id] = info
				}
			}
			r.mu.Unlock()
		}
	}
}

// pgWriteRetry is how long a record whose write failed waits to be written again.
const pgWriteRetry = 500 * time.Millisecond

// pgCache reads other processes' placement-group records (core.Config.GroupRecord) for
// this node's runtime: tasks and actors this process places in a group it did not create.
// A read never blocks the caller: a record not known yet, or older than pgRefresh, is
// read by a goroutine (one per group at a time), which tells the runtime
// (Core.ClusterChanged) when it brings a change, so that tasks parked on the group are
// placed again.
type pgCache struct {
	n  *Node
	mu sync.Mutex
	m  map[string]*pgEntry
}

type pgEntry struct {
	info     *pb.PlacementGroupInfo
	rev      int64
	at       time.Time
	fetching bool
	read     bool // read at least once
}

// pgRefresh is how old a group's record may be before it is read again (a group that is
// re-placed after a node's death or removed reaches other processes within it).
const pgRefresh = 500 * time.Millisecond

// pgCacheMax bounds the groups remembered; beyond it the cache starts afresh.
const pgCacheMax = 10000

func (p *pgCache) get(id string) (*pb.PlacementGroupInfo, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil || len(p.m) > pgCacheMax {
		p.m = map[string]*pgEntry{}
	}
	e := p.m[id]
	if e == nil {
		e = &pgEntry{}
		p.m[id] = e
	}
	if !e.fetching && time.Since(e.at) >= pgRefresh {
		e.fetching = true
		go p.fetch(id, e)
	}
	return e.info, e.info == nil && !e.read
}

func (p *pgCache) fetch(id string, e *pgEntry) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	kv, found, err := p.n.store.Get(ctx, gcs.PlacementGroupKey(id))
	cancel()
	var info *pb.PlacementGroupInfo
	rev := int64(0)
	if err == nil && found {
		info = &pb.PlacementGroupInfo{}
		if proto.Unmarshal(kv.Value, info) != nil || info.Id != id {
			info = nil
		} else {
			rev = kv.ModRev
		}
	}
	p.mu.Lock()
	changed := !e.read || rev != e.rev
	if err == nil {
		e.info, e.rev, e.read = info, rev, true
	}
	e.at, e.fetching = time.Now(), false
	p.mu.Unlock()
	if changed {
		if c := p.n.core.Load(); c != nil {
			c.ClusterChanged()
		}
	}
}

// actorsInGroup is core.ActorConfig.InGroup: the live actors in a placement group, every
// process's, as the node's actor manager has seen them.
func (n *Node) actorsInGroup(group string) []*pb.ActorInfo {
	if n.actors == nil {
		return nil // the manager starts after the runtime
	}
	return n.actors.InGroup(group)
}
