package node

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/pb"
)

// A driver that comes back after its job was ended.
//
// A driver whose lease lapsed (it was stopped, hung or cut off for longer than its TTL)
// registers again when it runs (keepLease). If the head took it for dead meanwhile (its
// address accepted connections, but it stayed silent for the head's grace: package
// internal/assembly/agent, "job driver lost"), its job is FAILED for good: the agents
// stopped its worker processes, its actors ended, and nothing starts them again. As Ray's
// driver ends when the GCS marked it dead, the runtime then fails (core.Core.Lose): every
// pending and later call fails with core.ErrClusterLost saying so, and the job's record is
// left as the head wrote it (endJob does not turn it into SUCCEEDED).

// endedJob reads the driver's job record and returns it when the job has ended (by someone
// else: the head), nil when it runs or cannot be read.
func (n *Node) endedJob(ctx context.Context) *pb.JobInfo {
	kv, found, err := n.store.Get(ctx, gcs.JobKey(string(n.cfg.Job)))
	if err != nil || !found {
		return nil
	}
	info := &pb.JobInfo{}
	if proto.Unmarshal(kv.Value, info) != nil {
		return nil
	}
	switch info.GetState() {
	case pb.JobInfo_SUCCEEDED, pb.JobInfo_FAILED, pb.JobInfo_STOPPED:
		return info
	}
	return nil
}

// loseIfJobEnded fails the runtime of a driver that registered again after its lease
// lapsed when its job was ended meanwhile (see above).
func (n *Node) loseIfJobEnded(ctx context.Context) {
	if n.cfg.Role != RoleDriver || !n.jobAlive.Load() {
		return
	}
	info := n.endedJob(ctx)
	if info == nil {
		return
	}
	n.jobAlive.Store(false) // its key is not written again
	_, _ = n.store.Delete(ctx, gcs.JobAliveKey(string(n.cfg.Job)))
	err := fmt.Errorf("%w: this driver's job %s was ended while the driver was unreachable (its lease lapsed): %s, %q; rerun the program",
		core.ErrClusterLost, n.cfg.Job, info.GetState(), info.GetMessage())
	n.cfg.Logger.Error("ray: this driver's job was ended while it was unreachable", "job", n.cfg.Job, "state", info.GetState(), "message", info.GetMessage())
	if c := n.core.Load(); c != nil {
		c.Lose(err)
	}
}
