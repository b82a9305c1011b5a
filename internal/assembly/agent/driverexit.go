package agent

import (
	"context"
	"encoding/json"
	"errors"
	"syscall"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/assembly/taskstate"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/netx"
	"github.com/ray-go/ray/internal/base/pb"
)

// A submission's driver is a child of the head agent: the agent knows at once when it has
// exited (a driver's death is sure as soon as its process exits), while the cluster
// otherwise learns it only when the driver's lease lapses, seconds later. Until then its
// node record said ALIVE (`rayctl list nodes|workers`), and every state query (`rayctl
// list tasks|objects`, logs) asked it and waited its whole wait for an answer that could
// not come, then reported it missing. And a submitted driver that was killed dropped out of
// the lists once its lease lapsed, since its job had ended already (settleJob), where a
// driver run directly is listed DEAD (driverlost.go).

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

// driverExited records (head, once the driver process p of submission id was reaped and
// its job settled) that the driver is gone, when it left its node record behind (it did
// not call ray.Shutdown: killed, stopped, os.Exit): driverlost/<job> DEAD with reason (as
// the head records a directly run driver it took for dead), and the driver's lease revoked,
// which takes its node record and its job's alive key with it, as the lease's lapse would
// have seconds later. A node record whose process may still live (another host's, or a
// process that left p's process group and still runs) is left alone.
func (s *submissionRunner) driverExited(ctx context.Context, id string, p *proc, reason string) {
	a := s.a
	n, info, lease, err := driverOf(ctx, a.store, id)
	if err != nil || n == nil || !exitedChild(n, p, a.hostname) {
		return
	}
	now := time.Now().UnixMilli()
	d := DriverLost{Job: n.GetJobId(), Node: n.GetNodeId(), Host: n.GetHostname(), Pid: n.GetPid(), Address: info.GetDriverAddress(),
		LapsedUnixMs: now, DeadUnixMs: now, Reason: reason}
	b, _ := json.Marshal(d)
	if _, err := a.store.Put(ctx, gcs.DriverLostKey(d.Job), b, 0); err != nil {
		a.log.Warn("agent: record that a submission's driver exited", "submission", id, "err", err)
	}
	if lease != 0 {
		err := a.store.Revoke(ctx, lease)
		if err == nil || errors.Is(err, gcs.ErrLeaseNotFound) {
			return
		}
		a.log.Debug("agent: revoke an exited driver's lease; deleting its records instead", "submission", id, "err", err)
	}
	for _, key := range []string{gcs.NodeKey(d.Node), gcs.JobAliveKey(d.Job)} {
		if _, err := a.store.Delete(ctx, key); err != nil {
			a.log.Warn("agent: delete an exited driver's record", "submission", id, "key", key, "err", err)
		}
	}
}

// exitedChild reports whether driver node n is the process p (reaped) or one of the
// processes p started (in its process group, which was killed when p was reaped): on this
// host, and its pid is p's, or names a process that is gone or still in p's group.
func exitedChild(n *pb.NodeInfo, p *proc, hostname string) bool {
	if p == nil || n.GetPid() <= 0 || n.GetHostname() != hostname {
		return false
	}
	if m := netx.MachineID(); m != "" && n.GetMachineId() != "" && n.GetMachineId() != m {
		return false
	}
	pid := int(n.GetPid())
	if pid == p.pid {
		return true
	}
	pgid, err := syscall.Getpgid(pid)
	return errors.Is(err, syscall.ESRCH) || (err == nil && pgid == p.pid)
}
