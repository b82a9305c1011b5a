package node

import (
	"context"
	"errors"
	"time"

	"github.com/ray-go/ray/internal/base/gcs"
)

// The node's registration lease carries its node record, its load report, its runtime's
// placement groups' records and, for a driver, the job's alive key (jobalive/<job>). A GCS outage longer than the lease's TTL
// (a quorum lost for a while) loses it: etcd expires it once the GCS answers again, and
// everything on it is deleted, so the head would take the job's driver for dead and the
// other nodes this node. keepLease therefore renews the lease for as long as the node runs
// and, when it is lost, takes a new one and writes again what lived on the old (the load
// reporter writes on the current one by itself). The head waits a grace before it fails a
// job whose alive key went (agent.reregisterGrace), which this beats by seconds.

// leaseID is the node's current registration lease (0 outside cluster mode).
func (n *Node) leaseID() gcs.LeaseID { return gcs.LeaseID(n.lease.Load()) }

// keepLease watches lost, the current lease's keep-alive, until ctx ends.
func (n *Node) keepLease(ctx context.Context, lost <-chan struct{}) {
	defer close(n.keepDone)
	for {
		select {
		case <-ctx.Done():
			return
		case <-lost:
		}
		var warned time.Time
		for attempt := 0; ; attempt++ {
			if ctx.Err() != nil {
				return
			}
			l, err := n.renewLease(ctx)
			if err == nil {
				lost = l
				break
			}
			if time.Since(warned) >= 30*time.Second {
				warned = time.Now()
				n.cfg.Logger.Warn("node: the registration lease is lost and the GCS does not answer; registering again when it does", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(min(time.Duration(attempt+1)*200*time.Millisecond, time.Second)):
			}
		}
	}
}

// renewLease keeps the current lease alive if etcd still has it, or else takes a new one
// and writes the node record and the job's alive key on it.
func (n *Node) renewLease(ctx context.Context) (<-chan struct{}, error) {
	if lost, err := n.store.KeepAlive(ctx, n.leaseID()); err == nil {
		return lost, nil // the outage was shorter than etcd's view of the TTL
	} else if !errors.Is(err, gcs.ErrLeaseNotFound) {
		return nil, err
	}
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	lease, err := n.store.Grant(gctx, n.cfg.LeaseTTL)
	if err != nil {
		return nil, err
	}
	lost, err := n.store.KeepAlive(ctx, lease)
	if err != nil {
		return nil, err
	}
	n.lease.Store(int64(lease))
	if b := n.record.Load(); b != nil {
		if _, err := n.store.Put(gctx, gcs.NodeKey(string(n.ID)), *b, lease); err != nil {
			return nil, err
		}
	}
	if n.jobAlive.Load() {
		if _, err := n.store.Put(gctx, gcs.JobAliveKey(string(n.cfg.Job)), []byte(n.ID), lease); err != nil {
			return nil, err
		}
	}
	n.pgRecords.rewrite() // the placement groups' records lived on the old lease too
	n.cfg.Logger.Warn("node: the registration lease had expired (the GCS was unreachable for longer than its TTL); registered again", "ttl", n.cfg.LeaseTTL)
	return lost, nil
}

// stopKeeping stops keepLease and waits for it (before the lease is revoked on Stop).
func (n *Node) stopKeeping() {
	if n.keepStop != nil {
		n.keepStop()
		<-n.keepDone
		n.keepStop = nil
	}
}
