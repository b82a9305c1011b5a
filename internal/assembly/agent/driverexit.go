package agent

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/assembly/taskstate"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/pb"
)

// driverOf returns the node record of the driver that submission id registered (its job's
// driver_node) and its job's ID; nil when it registered none or its record is gone (it
// left the cluster: ray.Shutdown).
func driverOf(ctx context.Context, store gcs.Store, id string) (*pb.NodeInfo, *pb.JobInfo, gcs.LeaseID, error) {
	job, err := submissionJob(ctx, store, id)
	if err != nil || job == "" {
		return nil, nil, 0, err
	}
	kv, found, err := store.Get(ctx, gcs.JobKey(job))
	if err != nil || !found {
		return nil, nil, 0, err
	}
	info, err := DecodeJob(job, kv.Value)
	if err != nil || info.GetDriverNode() == "" {
		return nil, nil, 0, err
	}
	kv, found, err = store.Get(ctx, gcs.NodeKey(info.GetDriverNode()))
	if err != nil || !found {
		return nil, nil, 0, err
	}
	n := &pb.NodeInfo{}
	if err := proto.Unmarshal(kv.Value, n); err != nil {
		return nil, nil, 0, err
	}
	if n.GetNodeId() != info.GetDriverNode() || n.GetRole() != "driver" || n.GetJobId() != job {
		return nil, nil, 0, nil
	}
	return n, info, kv.Lease, nil
}

// archiveDriver asks the driver of submission id, about to be sent SIGTERM by `rayctl job
// stop`, to archive its task records first (taskstate.AskArchive, bounded by
// archiveBeforeStop): a Go driver dies of SIGTERM unless it handles it, and its records
// lived only in its memory, so a stopped job listed no task. The driver is not changed
// otherwise: a program that handles SIGTERM itself (and calls ray.Shutdown, which archives
// again) sees the same signal at the same point.
func (s *submissionRunner) archiveDriver(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(ctx, archiveBeforeStop+opTimeout)
	defer cancel()
	n, _, _, err := driverOf(ctx, s.a.store, id)
	if err != nil || n == nil {
		return
	}
	if err := taskstate.AskArchive(ctx, s.a.store, n.GetJobId(), n.GetNodeId(), archiveBeforeStop); err != nil {
		s.a.log.Info("agent: the driver of a submission being stopped did not archive its task records; `rayctl list tasks` will not show them once it has exited",
			"submission", id, "err", err)
	}
}

// archiveBeforeStop bounds archiveDriver.
const archiveBeforeStop = 3 * time.Second
