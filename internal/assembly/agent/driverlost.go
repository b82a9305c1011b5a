package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/pb"
)

// Lost drivers (head only).
//
// A driver's liveness is its lease: its node record (nodes/) and its job's alive key
// (jobalive/) live on it, so a driver that stops renewing it (SIGSTOP, a hang, a cut
// network) simply left the tables once the lease lapsed, and its job stayed RUNNING
// without a word until the head failed it (reregisterGrace + confirmGrace later while its
// address still accepted connections). Ray shows a dead node or driver instead. So the
// head, which watches jobalive/ anyway, writes driverlost/<job> (DriverLost, JSON, no
// lease) when the alive key of a RUNNING job goes: the state API (package clusterstate:
// `rayctl status`, `rayctl list jobs|nodes`) shows the driver UNREACHABLE, with when its
// lease lapsed and about when it last renewed it. If the driver comes back (SIGCONT, the
// network heals: it registers again and writes the key within a second or two) before its
// job was failed, the record is deleted and the driver is ALIVE again; its job, worker
// processes, actors and objects were kept all along. If not, failOrphan fails the job and
// the record says DEAD, when and why (its address refused connections: the process
// exited; or it stayed silent though its address still accepted connections: "job driver
// lost"). A driver that comes back after that finds its job ended (its worker processes
// were stopped and its actors ended): its runtime fails (internal/assembly/node,
// driverback.go), and its record stays DEAD (its job is final).
//
// Bounded: one record per job whose driver was lost; dead ones are kept lostDriverKeep
// and at most lostDriverMax of them (the newest), pruned every lostDriverPrune, which also
// deletes the records of unreachable drivers that are back or whose job ended otherwise
// (a head that restarted meanwhile did not see it happen). Cost: one GCS write when a
// driver's key goes, one when it comes back or dies; nothing while drivers live.

const (
	lostDriverKeep  = time.Hour
	lostDriverMax   = 100
	lostDriverPrune = time.Minute
)

// DriverLost is the value of driverlost/<job>: the head's record of a job's driver whose
// lease lapsed.
type DriverLost struct {
	Job     string `json:"job"`
	Node    string `json:"node"` // the driver's node ID (JobInfo.driver_node)
	Host    string `json:"host"`
	Pid     int32  `json:"pid"`
	Address string `json:"address"`
	// LapsedUnixMs is when the head saw the driver's alive key go: its lease lapsed, so its
	// last heartbeat (lease renewal) was about a lease TTL before (LastHeartbeatUnixMs).
	LapsedUnixMs int64 `json:"lapsed_unix_ms"`
	// DeadUnixMs is when the head took the driver for dead and ended its job (0: not yet,
	// the driver is unreachable); Reason is the job's message then.
	DeadUnixMs int64  `json:"dead_unix_ms,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// LastHeartbeatUnixMs is about when the driver last renewed its lease: a lease TTL (the
// default, AliveTTL; a driver's node.Config.LeaseTTL may differ) before it lapsed.
func (d *DriverLost) LastHeartbeatUnixMs() int64 { return d.LapsedUnixMs - AliveTTL.Milliseconds() }

// DecodeDriverLost decodes the record of driverlost/<job>.
func DecodeDriverLost(job string, b []byte) (*DriverLost, error) {
	d := &DriverLost{}
	if err := json.Unmarshal(b, d); err != nil {
		return nil, fmt.Errorf("agent: driverlost/%s: %w", job, err)
	}
	if d.Job != job || d.LapsedUnixMs <= 0 {
		return nil, fmt.Errorf("agent: driverlost/%s: names job %q, lapsed at %d", job, d.Job, d.LapsedUnixMs)
	}
	return d, nil
}

// driverLostMessage is the message of a job failed because its driver stayed silent for
// d after its lease lapsed while its address still accepted connections.
func driverLostMessage(d time.Duration) string {
	return fmt.Sprintf("job driver lost: no heartbeat since its lease lapsed %v ago, though its address still accepted connections "+
		"(stopped, hung or cut off); its worker processes were stopped and its actors ended", d.Round(time.Second))
}

// putLost writes job's record (head): the driver of RUNNING job (record info) whose alive
// key went at lapsed; dead, when not zero, is when its job was failed, with reason. It
// reports whether the record was written.
func (m *workerManager) putLost(ctx context.Context, job string, info *pb.JobInfo, lapsed, dead time.Time, reason string) bool {
	d := DriverLost{Job: job, Node: info.GetDriverNode(), Host: info.GetDriverHost(), Pid: info.GetDriverPid(),
		Address: info.GetDriverAddress(), LapsedUnixMs: lapsed.UnixMilli(), Reason: reason}
	if !dead.IsZero() {
		d.DeadUnixMs = dead.UnixMilli()
	}
	b, _ := json.Marshal(d)
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if _, err := m.a.store.Put(cctx, gcs.DriverLostKey(job), b, 0); err != nil {
		m.a.log.Warn("agent: record a lost driver", "job", job, "err", err)
		return false
	}
	if dead.IsZero() {
		m.a.log.Warn("agent: a job's driver is unreachable: its lease lapsed (no heartbeat); its job is kept while it may come back",
			"job", job, "driver", fmt.Sprintf("%s:%d", d.Host, d.Pid), "node", d.Node)
	}
	return true
}

// trackLost keeps job's record up to date (head, from reconcile): written when the alive
// key of its RUNNING job went at gone (wasAlive); deleted when the key is back; marked
// dead when the job ended otherwise while the driver was unreachable (a submission's
// driver killed meanwhile: its submission settled the job).
func (m *workerManager) trackLost(ctx context.Context, job string, rec jobRec, gone time.Time, wasAlive bool) {
	dead, recorded := m.lost[job]
	running := rec.info.GetState() == pb.JobInfo_RUNNING
	switch {
	case recorded && !dead && m.alive[job]:
		cctx, cancel := context.WithTimeout(ctx, opTimeout)
		_, err := m.a.store.Delete(cctx, gcs.DriverLostKey(job))
		cancel()
		if err == nil {
			delete(m.lost, job)
			m.a.log.Info("agent: a job's driver that was unreachable is back", "job", job)
		}
	case recorded && !dead && !running:
		end := time.UnixMilli(rec.info.GetEndUnixMs())
		if rec.info.GetEndUnixMs() == 0 {
			end = time.Now()
		}
		if m.putLost(ctx, job, rec.info, time.UnixMilli(m.lostAt[job]), end, rec.info.GetMessage()) {
			m.lost[job] = true
		}
	case !recorded && wasAlive && !m.alive[job] && running:
		if m.putLost(ctx, job, rec.info, gone, time.Time{}, "") {
			m.lost[job] = false
			m.lostAt[job] = gone.UnixMilli()
		}
	}
}

// pruneLost deletes (head) the records of drivers dead for longer than lostDriverKeep, of
// all but the newest lostDriverMax dead ones, and of unreachable drivers that this head
// does not track whose job is not RUNNING or whose alive key is back.
func (m *workerManager) pruneLost(ctx context.Context, now time.Time) {
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	kvs, _, err := m.a.store.List(cctx, gcs.DriverLostPrefix)
	if err != nil {
		return
	}
	type deadRec struct {
		key string
		at  int64
	}
	var dead []deadRec
	var drop []string
	for _, kv := range kvs {
		job, _ := gcs.TrimKey(gcs.DriverLostPrefix, kv.Key)
		d, err := DecodeDriverLost(job, kv.Value)
		switch {
		case err != nil:
			drop = append(drop, kv.Key)
		case d.DeadUnixMs > 0:
			if now.Sub(time.UnixMilli(d.DeadUnixMs)) > lostDriverKeep {
				drop = append(drop, kv.Key)
			} else {
				dead = append(dead, deadRec{kv.Key, d.DeadUnixMs})
			}
		default:
			rec, ok := m.jobs[job]
			if _, tracked := m.lost[job]; !tracked && (!ok || rec.info.GetState() != pb.JobInfo_RUNNING || m.alive[job]) {
				drop = append(drop, kv.Key)
			}
		}
	}
	if len(dead) > lostDriverMax {
		sort.Slice(dead, func(i, j int) bool { return dead[i].at > dead[j].at })
		for _, d := range dead[lostDriverMax:] {
			drop = append(drop, d.key)
		}
	}
	for _, key := range drop {
		if _, err := m.a.store.Delete(cctx, key); err != nil && !errors.Is(err, context.Canceled) {
			m.a.log.Debug("agent: prune a lost driver's record", "key", key, "err", err)
			return
		}
	}
}
