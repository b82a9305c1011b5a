package cli

import (
	"context"
	"fmt"
	"sort"

	"github.com/ray-go/ray/internal/assembly/agent"
	"github.com/ray-go/ray/internal/assembly/clusterstate"
	"github.com/ray-go/ray/internal/assembly/clusterview"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/pb"
)

// Two kinds of node ID: `list nodes` shows the machines (agents, the head among them) and
// the drivers; the tasks, actors and objects name the per-job worker process that ran or
// holds them (a node of the job: ray.NodeID, NodeAffinity, ray.Nodes), which an agent
// starts on its machine for each job. `get node` and the node_id filter of `list nodes`
// take a worker process's ID too: its machine, with the worker process under
// worker_process.

// workerProc is a worker process of the node table (or a local node: no agent).
type workerProc struct {
	agent string // its agent's ID ("" for a local node)
	rec   record // its own fields
}

// readWorkerProcesses reads the node table's worker processes (drivers left out: `list
// nodes` has them), by node ID, with their object stores' bytes in memory.
func readWorkerProcesses(ctx context.Context, s gcs.Store) (map[string]workerProc, error) {
	nodes, err := list(ctx, s, gcs.NodesPrefix)
	if err != nil {
		return nil, err
	}
	loads, err := list(ctx, s, gcs.LoadPrefix)
	if err != nil {
		return nil, err
	}
	used := map[string]int64{}
	for _, kv := range loads {
		id, _ := gcs.TrimKey(gcs.LoadPrefix, kv.Key)
		if l, err := clusterview.DecodeLoad(id, kv.Value); err == nil {
			used[id] = l.GetStoreInMemory()
		}
	}
	out := map[string]workerProc{}
	for _, kv := range nodes {
		id, _ := gcs.TrimKey(gcs.NodesPrefix, kv.Key)
		n, err := clusterview.DecodeNode(id, kv.Value)
		if err != nil || n.GetRole() == "driver" {
			continue
		}
		out[id] = workerProc{agent: n.GetAgentId(), rec: record{{"node_id", id}, {"role", n.GetRole()}, {"job_id", n.GetJobId()},
			{"agent_id", n.GetAgentId()}, {"host", n.GetHostname()}, {"pid", n.GetPid()}, {"address", n.GetAddress()},
			{"started", fmtTime(n.GetStartedUnixMs())}, {"resources_total", agent.ResourcesFromPB(n.GetTotal())},
			{"object_store_budget", n.GetObjectStoreBytes()}, {"object_store_used", used[id]}}}
	}
	return out, nil
}

// exitedWorkerProcesses returns the worker processes the agents' jobworkers/ records
// (`list workers`) name that are no longer in the node table (exited: an ended job's,
// one a restart replaced), by node ID, with what those records know: `get node` of the
// node a finished job's task ran on answers with its machine and the process EXITED,
// as `list workers` lists it, instead of "no node". Those of registered (the node
// table's) are left out.
func exitedWorkerProcesses(ctx context.Context, s gcs.Store, registered map[string]workerProc) (map[string]workerProc, error) {
	ws, _, err := readWorkerRecs(ctx, s)
	if err != nil {
		return nil, err
	}
	out := map[string]workerProc{}
	add := func(w *pb.JobWorker) {
		id := w.GetNodeId()
		_, registered := registered[id]
		_, seen := out[id]
		if registered || seen || id == "" {
			return
		}
		// EXITED, as a rule; a record whose agent is down may still say RUNNING (list
		// workers says so too).
		state := w.GetState().String()
		exited := ""
		if ms := w.GetExitUnixMs(); ms > 0 {
			exited = fmtTime(ms)
		}
		out[id] = workerProc{agent: w.GetAgentId(), rec: record{{"node_id", id}, {"role", "worker"}, {"state", state},
			{"job_id", w.GetJobId()}, {"agent_id", w.GetAgentId()}, {"pid", w.GetPid()}, {"exit", w.GetExit()},
			{"exited", exited}, {"message", w.GetMessage()}, {"log_path", w.GetLogPath()}}}
	}
	for _, w := range ws {
		add(w)
		for _, e := range w.GetExited() {
			add(e)
		}
	}
	return out, nil
}

// withWorker is the record `get node` prints for worker process w: its machine's record
// (recs, `list nodes`'s, by node ID) with w's fields under worker_process; w alone when
// its machine has no record (a local node).
func withWorker(recs map[string]record, w workerProc) record {
	m, ok := recs[w.agent]
	if !ok || w.agent == "" {
		return w.rec
	}
	out := append(record(nil), m...)
	return append(out, field{"worker_process", []record{w.rec}})
}

// readWorkers is `list workers` (Ray's `ray list workers`): every job's worker processes
// the agents started (the jobworkers/ records: STARTING, RUNNING, UNSUPPORTED or EXITED,
// with how it exited), with their fields from the node table while they are registered,
// and the drivers (ALIVE, UNREACHABLE or DEAD, as `list nodes` shows them). A worker
// process's worker_id is its node ID (the node the tasks, actors and objects name); one
// not registered yet has none.
func readWorkers(ctx context.Context, s gcs.Store) ([]record, error) {
	ws, _, err := readWorkerRecs(ctx, s)
	if err != nil {
		return nil, err
	}
	procs, err := readWorkerProcesses(ctx, s)
	if err != nil {
		return nil, err
	}
	st, err := readStatus(ctx, s)
	if err != nil {
		return nil, err
	}
	agents := map[string]clusterstate.NodeStatus{}
	for _, n := range st.Nodes {
		agents[n.AgentID] = n
	}
	var out []record
	seen := map[string]bool{}
	for _, w := range ws {
		var host, address, started string
		// The process's own record is gone once it exited; its host is its agent's.
		host = agents[w.GetAgentId()].Host
		if p, ok := procs[w.GetNodeId()]; ok && w.GetNodeId() != "" {
			seen[w.GetNodeId()] = true
			h, _ := p.rec.get("host")
			a, _ := p.rec.get("address")
			s, _ := p.rec.get("started")
			host, address, started = fmt.Sprint(h), fmt.Sprint(a), fmt.Sprint(s)
		}
		exited := ""
		if ms := w.GetExitUnixMs(); ms > 0 {
			exited = fmtTime(ms)
		}
		state, msg := w.GetState().String(), w.GetMessage()
		if a, known := agents[w.GetAgentId()]; known && !a.Alive && msg == "" &&
			(w.GetState() == pb.JobWorker_RUNNING || w.GetState() == pb.JobWorker_STARTING) {
			// Nothing records the end of a process whose agent is down; the agent does
			// when it is started again.
			msg = "its agent is not alive: the state is the last it recorded"
		}
		out = append(out, record{{"worker_id", w.GetNodeId()}, {"worker_type", "WORKER"}, {"state", state},
			{"is_alive", state == pb.JobWorker_RUNNING.String() && seen[w.GetNodeId()]}, {"job_id", w.GetJobId()},
			{"agent_id", w.GetAgentId()}, {"host", host}, {"pid", w.GetPid()}, {"address", address}, {"started", started},
			{"exit", w.GetExit()}, {"exited", exited}, {"message", msg}, {"log_path", w.GetLogPath()}})
		// The agent's earlier processes of the job there that exited (a restart replaced
		// their record), as Ray lists dead workers.
		for _, e := range w.GetExited() {
			exited := ""
			if ms := e.GetExitUnixMs(); ms > 0 {
				exited = fmtTime(ms)
			}
			out = append(out, record{{"worker_id", e.GetNodeId()}, {"worker_type", "WORKER"}, {"state", pb.JobWorker_EXITED.String()},
				{"is_alive", false}, {"job_id", e.GetJobId()}, {"agent_id", e.GetAgentId()}, {"host", agents[e.GetAgentId()].Host}, {"pid", e.GetPid()},
				{"address", ""}, {"started", ""}, {"exit", e.GetExit()}, {"exited", exited}, {"message", e.GetMessage()}, {"log_path", e.GetLogPath()}})
		}
	}
	// A worker process registered without an agent's record (a local node's, say).
	ids := make([]string, 0, len(procs))
	for id := range procs {
		if !seen[id] {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		p := procs[id]
		get := func(k string) any { v, _ := p.rec.get(k); return v }
		out = append(out, record{{"worker_id", id}, {"worker_type", "WORKER"}, {"state", pb.JobWorker_RUNNING.String()},
			{"is_alive", true}, {"job_id", get("job_id")}, {"agent_id", get("agent_id")}, {"host", get("host")}, {"pid", get("pid")},
			{"address", get("address")}, {"started", get("started")}, {"exit", ""}, {"exited", ""}, {"message", ""}, {"log_path", ""}})
	}
	for _, d := range st.Drivers {
		out = append(out, record{{"worker_id", d.NodeID}, {"worker_type", "DRIVER"}, {"state", d.State},
			{"is_alive", d.State == clusterstate.DriverAlive}, {"job_id", d.JobID}, {"agent_id", ""}, {"host", d.Host}, {"pid", d.Pid},
			{"address", ""}, {"started", d.Started}, {"exit", d.Reason}, {"exited", d.Died}, {"message", ""}, {"log_path", ""}})
	}
	return out, nil
}
