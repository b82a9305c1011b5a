package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ray-go/ray/internal/assembly/core"

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
	// A driver whose job the head ended meanwhile fails its runtime (driverback.go).
	n.loseIfJobEnded(gctx)
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

// DefaultGCSTimeout is how long a driver waits for a GCS that stopped answering, beyond
// its lease's TTL, before it takes the cluster for lost (Config.GCSTimeout): Ray's
// gcs_rpc_server_reconnect_timeout_s (60 s). A head restarted on its session dir, or an
// external etcd that regains its quorum, within that is an outage the driver rides out.
const DefaultGCSTimeout = 60 * time.Second

// GCSTimeoutEnv is the environment variable the root package reads Config.GCSTimeout from
// (a Go duration; 0 or a negative duration: never give up).
const GCSTimeoutEnv = "RAY_GCS_RECONNECT_TIMEOUT"

// ParseGCSTimeout parses a GCSTimeoutEnv value: "" is the default; 0 or a negative
// duration waits for ever (-1 in Config.GCSTimeout); anything that is not a duration is an
// error (and the default).
func ParseGCSTimeout(s string) (time.Duration, error) {
	if s == "" {
		return DefaultGCSTimeout, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return DefaultGCSTimeout, fmt.Errorf("ray: ignoring %s=%q (want a duration such as 60s; 0 never gives up); using %v", GCSTimeoutEnv, s, DefaultGCSTimeout)
	}
	if d <= 0 {
		return -1, nil
	}
	return d, nil
}

// gcsLost is the membership's word that the GCS has not answered for unanswered (a
// driver's node: Config.GCSTimeout after its lease lapsed). The decision is this one:
// the runtime is lost for good, its pending and later calls fail, and the program learns
// it from the errors (its Shutdown then does not wait on the GCS).
func (n *Node) gcsLost(unanswered time.Duration) {
	err := fmt.Errorf("%w: its GCS at %s has not answered for %v (the head is down or unreachable); "+
		"this driver's pending and later calls fail: start the head again (rayctl start --head on its session dir) and rerun the program "+
		"(%s sets how long a driver waits for the GCS, now %v after its %v lease lapsed)",
		core.ErrClusterLost, n.cfg.GCSAddress, unanswered.Round(time.Second), GCSTimeoutEnv, cmp.Or(n.cfg.GCSTimeout, DefaultGCSTimeout), n.cfg.LeaseTTL)
	n.lostGCS.Store(&err)
	if n.loseCtx != nil {
		n.loseCtx(err)
	}
	n.cfg.Logger.Error("ray: lost the cluster", "gcs", n.cfg.GCSAddress, "unanswered", unanswered.Round(time.Second))
	if c := n.core.Load(); c != nil {
		c.Lose(err)
	}
}
