package node

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/ray-go/ray/internal/assembly/clusterview"
	"github.com/ray-go/ray/internal/assembly/membership"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// exitWait bounds how long the failure of the tasks of a process that went waits for its
// agent's record of how it exited (the agent reaps its worker processes every 200 ms):
// the tasks' errors then say "exit status 3" instead of guessing. A process whose agent
// is not running (its machine died) is not waited for.
const exitWait = time.Second

// exitedKeep is how long a process seen exited is remembered (KnownExited): its node
// record lapses with its lease long before.
const exitedKeep = 10 * time.Minute

// markExited records that the membership saw node's process exit (its address refused
// connections, or it went for good).
func (n *Node) markExited(node string, exited bool) {
	n.exitedMu.Lock()
	defer n.exitedMu.Unlock()
	if !exited {
		delete(n.exited, node)
		return
	}
	now := time.Now()
	if n.exited == nil {
		n.exited = map[string]time.Time{}
	}
	for id, t := range n.exited {
		if now.Sub(t) > exitedKeep {
			delete(n.exited, id)
		}
	}
	n.exited[node] = now
}

// KnownExited reports whether this process's membership saw node's process exit (its
// address refused connections after it became unreachable, or it left the cluster for
// good): the state API does not wait for its answer (taskstate.Options.Dead).
func (n *Node) KnownExited(node string) bool {
	n.exitedMu.Lock()
	defer n.exitedMu.Unlock()
	_, ok := n.exited[node]
	return ok
}

// goneWhy says what happened to node, which the membership reported unreachable or gone,
// for the errors of the tasks that ran there: for a job's worker process (its node record
// says so), that the worker process died, how it exited when its agent recorded that
// within exitWait, and where its output is. "" for other nodes (core's own wording).
func (n *Node) goneWhy(node ids.NodeID) string {
	ctx, cancel := context.WithTimeout(context.Background(), exitWait+2*time.Second)
	defer cancel()
	kv, found, err := n.store.Get(ctx, gcs.NodeKey(string(node)))
	if err != nil || !found {
		return ""
	}
	info, err := clusterview.DecodeNode(string(node), kv.Value)
	if err != nil || info.Role != RoleWorker || info.AgentId == "" || info.JobId == "" {
		return ""
	}
	where := fmt.Sprintf("node %s, pid %d", node, info.Pid)
	if info.Hostname != "" {
		where += " on " + info.Hostname
	}
	logs := "; its output: rayctl logs worker " + string(node)
	exit, path := n.workerExit(ctx, info)
	if path != "" {
		// The agent appends every worker process of the job there to one file; the
		// cluster forgets this process's node within seconds (its lease lapses).
		logs = fmt.Sprintf("; its output: %s on %s (rayctl logs worker %s while the cluster still lists that process)",
			path, cmp.Or(info.Hostname, "its machine"), node)
	}
	if exit != "" {
		return fmt.Sprintf("the worker process that ran it (%s) exited (%s) while the task ran there "+
			"(that process of the job only: its machine's agent runs on and starts another)%s", where, exit, logs)
	}
	return fmt.Sprintf("the worker process that ran it (%s) died or became unreachable while the task ran there "+
		"(it exited or crashed, or its machine or network failed)%s", where, logs)
}

// workerExit waits up to exitWait for the agent's record of the exit of the worker
// process info: how it ended ("exit status 3", "killed by signal killed"; "" unknown), and
// the log file of the job's worker processes on that machine ("" unknown).
func (n *Node) workerExit(ctx context.Context, info *pb.NodeInfo) (exit, logPath string) {
	if _, alive, err := n.store.Get(ctx, gcs.AgentAliveKey(info.AgentId)); err != nil || !alive {
		return "", "" // no agent to record it
	}
	key := gcs.JobWorkerKey(info.JobId, info.AgentId)
	deadline := time.Now().Add(exitWait)
	for {
		if kv, found, err := n.store.Get(ctx, key); err == nil && found {
			w, err := pb.DecodeJobWorker(info.JobId, info.AgentId, kv.Value)
			if err == nil {
				logPath = w.GetLogPath()
				if w.GetState() == pb.JobWorker_EXITED && w.GetExit() != "" &&
					(w.GetNodeId() == info.NodeId || (w.GetPid() != 0 && w.GetPid() == info.Pid)) {
					return w.GetExit(), logPath
				}
			}
		}
		if time.Now().After(deadline) {
			return "", logPath
		}
		select {
		case <-ctx.Done():
			return "", logPath
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// memberGoneWhy says why a node the membership reported unreachable or gone died (what
// ray.Nodes says of it).
func memberGoneWhy(t membership.MemberEventType) string {
	if t == membership.MemberUnreachable {
		return "the cluster's membership found it unreachable: its process exited or crashed, or its machine or network failed"
	}
	return "it left the cluster: its process stopped, or its lease lapsed and it did not register again"
}
