package taskstate

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/pb"
)

// WhyMissing says, for each process (node ID) in nodes that did not answer a query or
// whose figures are missing, what the GCS tells of it: what it is (a job's driver, or a
// job's worker process on a machine) and why it may not answer: its machine's agent is
// dead (the worker process went with its machine: `rayctl list nodes` shows it DEAD), its
// registration lapsed (killed, stopped, hung or cut off; a driver shows UNREACHABLE), or
// it is registered and did not answer in time. A table that cannot be read says less.
func WhyMissing(ctx context.Context, store gcs.Store, nodes []string) map[string]string {
	out := make(map[string]string, len(nodes))
	if len(nodes) == 0 {
		return out
	}
	list := func(prefix string) []gcs.KV {
		kvs, _, err := store.List(ctx, prefix)
		if err != nil {
			return nil
		}
		return kvs
	}
	registered := map[string]bool{}
	for _, kv := range list(gcs.NodesPrefix) {
		id, _ := gcs.TrimKey(gcs.NodesPrefix, kv.Key)
		registered[id] = true
	}
	agentAlive := map[string]bool{}
	for _, kv := range list(gcs.AgentAlivePrefix) {
		id, _ := gcs.TrimKey(gcs.AgentAlivePrefix, kv.Key)
		agentAlive[id] = true
	}
	want := map[string]bool{}
	for _, n := range nodes {
		want[n] = true
	}
	type proc struct{ job, agent string }
	drivers, workers := map[string]string{}, map[string]proc{}
	for _, kv := range list(gcs.JobsPrefix) {
		info := &pb.JobInfo{}
		if proto.Unmarshal(kv.Value, info) == nil && want[info.GetDriverNode()] {
			drivers[info.GetDriverNode()] = info.GetJobId()
		}
	}
	for _, kv := range list(gcs.JobWorkersPrefix) {
		rest, _ := gcs.TrimKey(gcs.JobWorkersPrefix, kv.Key)
		j, agent, ok := strings.Cut(rest, "/")
		if !ok {
			continue
		}
		if w, err := pb.DecodeJobWorker(j, agent, kv.Value); err == nil && want[w.GetNodeId()] {
			workers[w.GetNodeId()] = proc{j, agent}
		}
	}
	for _, n := range nodes {
		var what string
		if w, ok := workers[n]; ok {
			what = fmt.Sprintf("worker process of job %s on machine %s", w.job, w.agent)
			if !agentAlive[w.agent] {
				out[n] = what + ", whose agent is dead: gone with its machine (rayctl list nodes shows it DEAD)"
				continue
			}
		} else if j, ok := drivers[n]; ok {
			what = "driver of job " + j
		}
		switch {
		case registered[n] && what != "":
			out[n] = what + ": registered, did not answer in time (busy, starved or cut off)"
		case registered[n]:
			out[n] = "registered, did not answer in time (busy, starved or cut off)"
		case drivers[n] != "":
			out[n] = what + ": its registration lapsed (killed, stopped, hung or cut off; rayctl list nodes shows it UNREACHABLE, then DEAD)"
		case what != "":
			out[n] = what + ": its registration lapsed (killed, stopped, hung or cut off)"
		default:
			out[n] = "not registered: gone (killed, stopped, hung or cut off)"
		}
	}
	return out
}

// MissingList is nodes with why each is missing (WhyMissing), sorted, for a warning:
// "ID (why); ID (why)".
func MissingList(nodes []string, why map[string]string) string {
	sorted := append([]string(nil), nodes...)
	sort.Strings(sorted)
	parts := make([]string, len(sorted))
	for i, n := range sorted {
		parts[i] = n
		if w := why[n]; w != "" {
			parts[i] += " (" + w + ")"
		}
	}
	return strings.Join(parts, "; ")
}
