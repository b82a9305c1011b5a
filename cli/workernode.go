package cli

import (
	"context"

	"github.com/ray-go/ray/internal/assembly/agent"
	"github.com/ray-go/ray/internal/assembly/clusterview"
	"github.com/ray-go/ray/internal/base/gcs"
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
