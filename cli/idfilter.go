package cli

import (
	"context"
	"sort"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/ray-go/ray/internal/assembly/clusterstate"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/ids"
)

// ID-valued fields of `rayctl list` filters: a value may be an ID or at least 6 of its
// first characters (clusterstate.MinPrefix), as `rayctl get` and --job take them. Each
// value becomes the one whole ID it starts, before any record is read; a prefix of several
// IDs is refused naming them, and one of none is refused saying where the IDs are (a
// whole ID of something gone, a dead node's say, is kept as given). A prefix used to
// match nothing, silently, and exit 0.

// idSet is the kind of ID a field holds.
type idSet string

const (
	jobIDs    idSet = "job"
	nodeIDs   idSet = "node"
	actorIDs  idSet = "actor"
	groupIDs  idSet = "placement group"
	taskIDs   idSet = "task"
	objectIDs idSet = "object"
)

// wholeID is how many hex characters a whole ID of a set has that the GCS may no longer
// know (ids.NewNodeID, a placement group's, ids.ActorIDLen).
var wholeID = map[idSet]int{nodeIDs: 16, groupIDs: 16, actorIDs: 2 * ids.ActorIDLen}

// idFields are the ID-valued fields of each kind of `list`.
var idFields = map[string]map[string]idSet{
	"nodes":            {"node_id": nodeIDs, "job_id": jobIDs},
	"jobs":             {"job_id": jobIDs},
	"actors":           {"actor_id": actorIDs, "node": nodeIDs, "agent_id": nodeIDs, "job_id": jobIDs},
	"placement-groups": {"placement_group_id": groupIDs, "job_id": jobIDs},
	"workers":          {"worker_id": nodeIDs, "job_id": jobIDs, "agent_id": nodeIDs},
	"tasks":            {"task_id": taskIDs, "job_id": jobIDs, "node": nodeIDs, "owner_node": nodeIDs},
	"objects": {"object_id": objectIDs, "task_id": taskIDs, "job_id": jobIDs, "location": nodeIDs,
		"owner_node": nodeIDs, "holder_node": nodeIDs},
}

// listOf is the `list` that shows the IDs of a set.
var listOf = map[idSet]string{jobIDs: "jobs", nodeIDs: "nodes", actorIDs: "actors", groupIDs: "placement-groups",
	taskIDs: "tasks", objectIDs: "objects"}

// isHex reports whether s could be (the start of) an ID: lower- or upper-case hex.
func isHex(s string) bool {
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f' || 'A' <= r && r <= 'F') {
			return false
		}
	}
	return s != ""
}

// resolveIDFilters makes each filter of a `list` of kind on a job, node, actor or
// placement group ID the whole ID its value names (MatchID over the IDs the GCS knows).
// Task and object IDs are not in the GCS: their processes match prefixes, and
// checkMatchedIDs checks what they answered.
func resolveIDFilters(c *ucli.Context, kind string, filters []filter) ([]filter, error) {
	fields := idFields[kind]
	need := map[idSet]bool{}
	for _, f := range filters {
		set, ok := fields[f.key]
		if !ok || !isHex(f.value) {
			continue
		}
		if set == taskIDs || set == objectIDs {
			if len(f.value) < clusterstate.MinPrefix {
				return nil, exitf(ExitError, "filter %s: give at least %d characters of the %s ID", f, clusterstate.MinPrefix, set)
			}
			continue
		}
		need[set] = true
	}
	if len(need) == 0 {
		return filters, nil
	}
	store, addr, err := connect(c)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	known := map[idSet][]string{}
	for set := range need {
		if known[set], err = readIDs(c.Context, store, set); err != nil {
			return nil, exitf(ExitError, "read the %s IDs from %s: %v", set, strings.Join(addr, ","), err)
		}
	}
	out, err := matchIDFilters(kind, filters, known)
	if err != nil || kind != "nodes" || !need[nodeIDs] {
		return out, err
	}
	// A worker process's ID names its machine's row (workernode.go).
	workers, err := readWorkerProcesses(c.Context, store)
	if err != nil {
		return nil, exitf(ExitError, "read the nodes from %s: %v", strings.Join(addr, ","), err)
	}
	return workersToMachines(out, workers), nil
}

// workersToMachines makes a node_id filter of `list nodes` on a worker process one on its
// machine (its agent).
func workersToMachines(filters []filter, workers map[string]workerProc) []filter {
	for i, f := range filters {
		if w, ok := workers[f.value]; ok && f.key == "node_id" && w.agent != "" {
			filters[i].value = w.agent
		}
	}
	return filters
}

// matchIDFilters resolves the ID filters of a list of kind among the known IDs of each
// set (those not given are left as they are).
func matchIDFilters(kind string, filters []filter, known map[idSet][]string) ([]filter, error) {
	fields := idFields[kind]
	out := make([]filter, len(filters))
	for i, f := range filters {
		out[i] = f
		set, ok := fields[f.key]
		cands, have := known[set]
		if !ok || !have || !isHex(f.value) {
			continue
		}
		m, err := clusterstate.MatchID(string(set), cands, f.value)
		switch {
		case err != nil: // a prefix of several
			return nil, exitf(ExitError, "filter %s: %v", f, err)
		case m != "":
			out[i].value = m
		case set == jobIDs:
			// The job table keeps every job: none is none.
			return nil, exitf(ExitError, "filter %s: no job %q in the cluster (`rayctl list jobs` shows its jobs)", f, f.value)
		case len(f.value) >= wholeID[set]:
			// A whole ID of something gone (a worker process that ended): its records
			// may still name it.
		default:
			return nil, exitf(ExitError, "filter %s: no %s ID starts with %q (give at least %d characters of one that `rayctl list %s` shows, or the whole ID of one that is gone)",
				f, set, f.value, clusterstate.MinPrefix, listOf[set])
		}
	}
	return out, nil
}

// readIDs reads the IDs of a set that the GCS knows.
func readIDs(ctx context.Context, s gcs.Store, set idSet) ([]string, error) {
	var ids []string
	switch set {
	case jobIDs:
		kvs, err := list(ctx, s, gcs.JobsPrefix)
		if err != nil {
			return nil, err
		}
		for _, kv := range kvs {
			if id, ok := gcs.TrimKey(gcs.JobsPrefix, kv.Key); ok {
				ids = append(ids, id)
			}
		}
	case nodeIDs:
		// Agents (alive or dead), the worker processes and drivers that run, the drivers
		// lost, and the nodes the actors and placement groups name.
		st, err := readStatus(ctx, s)
		if err != nil {
			return nil, err
		}
		for _, n := range st.Nodes {
			ids = append(ids, n.AgentID)
		}
		for _, d := range st.Drivers {
			ids = append(ids, d.NodeID)
		}
		kvs, err := list(ctx, s, gcs.NodesPrefix)
		if err != nil {
			return nil, err
		}
		for _, kv := range kvs {
			if id, ok := gcs.TrimKey(gcs.NodesPrefix, kv.Key); ok {
				ids = append(ids, id)
			}
		}
		actors, err := clusterstate.ReadActors(ctx, s)
		if err != nil {
			return nil, err
		}
		for _, a := range actors {
			ids = append(ids, a.Node)
			for _, h := range a.History {
				ids = append(ids, h.Node)
			}
		}
		groups, err := clusterstate.ReadPlacementGroups(ctx, s)
		if err != nil {
			return nil, err
		}
		for _, g := range groups {
			ids = append(ids, g.Nodes...)
		}
	case actorIDs:
		actors, err := clusterstate.ReadActors(ctx, s)
		if err != nil {
			return nil, err
		}
		for _, a := range actors {
			ids = append(ids, a.ActorID)
		}
	case groupIDs:
		groups, err := clusterstate.ReadPlacementGroups(ctx, s)
		if err != nil {
			return nil, err
		}
		for _, g := range groups {
			ids = append(ids, g.ID)
		}
	}
	out := ids[:0]
	for _, id := range ids {
		if id != "" {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return compact(out), nil
}

func compact(s []string) []string {
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// String is the filter as given: FIELD=VALUE or FIELD!=VALUE.
func (f filter) String() string {
	if f.neg {
		return f.key + "!=" + f.value
	}
	return f.key + "=" + f.value
}

// checkMatchedIDs checks what the processes answered to a task or object ID filter (a
// prefix they matched): one ID, or the error of a prefix of several or of none.
// matched are the IDs of the records they returned.
func checkMatchedIDs(set idSet, key, value string, matched []string, full int) error {
	ids := map[string]bool{}
	for _, id := range matched {
		ids[id] = true
	}
	if ids[strings.ToLower(value)] {
		return nil
	}
	switch {
	case len(ids) > 1:
		var c []string
		for id := range ids {
			c = append(c, id)
		}
		sort.Strings(c)
		return exitf(ExitError, "filter %s=%s: %v", key, value, &clusterstate.AmbiguousError{Kind: string(set), Prefix: value, Candidates: c})
	case len(ids) == 0 && len(value) < full:
		return exitf(ExitError, "filter %s=%s: no %s ID starts with %q (give at least %d characters of one that `rayctl list %s` shows)",
			key, value, set, value, clusterstate.MinPrefix, listOf[set])
	}
	return nil
}

// matchRecordIDs resolves the ID filters that rayctl applies itself to the records of
// tasks or objects (kind) that their processes returned (those they could not apply: a
// task_id of objects, a != filter), among the IDs the records have: a prefix of one of
// them is that ID, a prefix of several is refused.
func matchRecordIDs(kind string, filters []filter, recs []record) ([]filter, error) {
	fields := idFields[kind]
	out := make([]filter, len(filters))
	for i, f := range filters {
		out[i] = f
		set, ok := fields[f.key]
		if !ok || !isHex(f.value) {
			continue
		}
		var cands []string
		for _, r := range recs {
			if v, _ := r.get(f.key); scalar(v) != "" {
				cands = append(cands, scalar(v))
			}
		}
		m, err := clusterstate.MatchID(string(set), cands, f.value)
		if err != nil {
			return nil, exitf(ExitError, "filter %s: %v", f, err)
		}
		if m != "" {
			out[i].value = m
		}
	}
	return out, nil
}
