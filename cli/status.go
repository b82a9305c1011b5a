package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/ray-go/ray/internal/assembly/agent"
	"github.com/ray-go/ray/internal/assembly/clusterview"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/pb"
)

func statusCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "status",
		Usage: "show the cluster's nodes, jobs and resources",
		Flags: append([]ucli.Flag{addressFlag(), namespaceFlag(), sessionDirFlag(), outputFlag()}, credentialFlags()...),
		Action: func(c *ucli.Context) error {
			asJSON, err := outputFormat(c)
			if err != nil {
				return err
			}
			store, addr, err := connect(c)
			if err != nil {
				return err
			}
			defer store.Close()
			st, err := readStatus(c.Context, store)
			if err != nil {
				return exitf(ExitError, "read the cluster state from %s: %v", strings.Join(addr, ","), err)
			}
			st.Address = strings.Join(addr, ",")
			if asJSON {
				return printJSON(c, st)
			}
			printStatus(c, st)
			return nil
		},
	}
}

// Status is what `rayctl status -o json` prints.
type Status struct {
	Address string        `json:"address"`
	Nodes   []NodeStatus  `json:"nodes"`
	Jobs    []JobStatus   `json:"jobs"`
	Cluster ClusterStatus `json:"cluster"`
}

// NodeStatus is one node agent (one machine).
type NodeStatus struct {
	AgentID           string             `json:"agent_id"`
	Host              string             `json:"host"`
	Alive             bool               `json:"alive"`
	Head              bool               `json:"head"`
	Pid               int32              `json:"pid"`
	Started           string             `json:"started"`
	Total             map[string]float64 `json:"resources_total"`
	InUse             map[string]float64 `json:"resources_in_use"`
	ObjectStoreBudget int64              `json:"object_store_budget"`
	ObjectStoreUsed   int64              `json:"object_store_used"`
	Workers           int                `json:"workers"` // worker processes (nodes) registered
}

// JobStatus is one job.
type JobStatus struct {
	JobID        string `json:"job_id"`
	State        string `json:"state"`
	SubmissionID string `json:"submission_id,omitempty"`
	Start        string `json:"start"`
	End          string `json:"end,omitempty"`
	Driver       string `json:"driver"` // host:pid
	Entrypoint   string `json:"entrypoint,omitempty"`
	Message      string `json:"message,omitempty"`
}

// ClusterStatus sums the alive nodes.
type ClusterStatus struct {
	AliveNodes        int                `json:"alive_nodes"`
	DeadNodes         int                `json:"dead_nodes"`
	Total             map[string]float64 `json:"resources_total"`
	InUse             map[string]float64 `json:"resources_in_use"`
	ObjectStoreBudget int64              `json:"object_store_budget"`
	ObjectStoreUsed   int64              `json:"object_store_used"`
	RunningJobs       int                `json:"running_jobs"`
}

func list(ctx context.Context, s gcs.Store, prefix string) ([]gcs.KV, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	kvs, _, err := s.List(cctx, prefix)
	return kvs, err
}

func fmtTime(ms int64) string {
	if ms == 0 {
		return ""
	}
	return time.UnixMilli(ms).Format("2006-01-02 15:04:05")
}

func readStatus(ctx context.Context, s gcs.Store) (*Status, error) {
	tables := map[string][]gcs.KV{}
	for _, p := range []string{gcs.AgentsPrefix, gcs.AgentAlivePrefix, gcs.NodesPrefix, gcs.LoadPrefix, gcs.JobsPrefix} {
		kvs, err := list(ctx, s, p)
		if err != nil {
			return nil, err
		}
		tables[p] = kvs
	}
	alive := map[string]bool{}
	for _, kv := range tables[gcs.AgentAlivePrefix] {
		id, _ := gcs.TrimKey(gcs.AgentAlivePrefix, kv.Key)
		alive[id] = true
	}
	loads := map[string]*pb.NodeLoad{}
	for _, kv := range tables[gcs.LoadPrefix] {
		id, _ := gcs.TrimKey(gcs.LoadPrefix, kv.Key)
		if l, err := clusterview.DecodeLoad(id, kv.Value); err == nil {
			loads[id] = l
		}
	}
	// In use on an agent: total minus available of each node (worker process) it runs.
	used := map[string]map[string]float64{}
	storeUsed := map[string]int64{}
	workers := map[string]int{}
	for _, kv := range tables[gcs.NodesPrefix] {
		id, _ := gcs.TrimKey(gcs.NodesPrefix, kv.Key)
		n, err := clusterview.DecodeNode(id, kv.Value)
		if err != nil || n.GetAgentId() == "" {
			continue
		}
		workers[n.GetAgentId()]++
		l := loads[id]
		if l == nil {
			continue
		}
		u := used[n.GetAgentId()]
		if u == nil {
			u = map[string]float64{}
			used[n.GetAgentId()] = u
		}
		avail := agent.ResourcesFromPB(l.GetAvailable())
		for name, total := range agent.ResourcesFromPB(n.GetTotal()) {
			if d := total - avail[name]; d > 0 {
				u[name] += d
			}
		}
		storeUsed[n.GetAgentId()] += l.GetStoreInMemory()
	}
	st := &Status{Nodes: []NodeStatus{}, Jobs: []JobStatus{}}
	st.Cluster.Total, st.Cluster.InUse = map[string]float64{}, map[string]float64{}
	for _, kv := range tables[gcs.AgentsPrefix] {
		id, _ := gcs.TrimKey(gcs.AgentsPrefix, kv.Key)
		a, err := agent.DecodeAgentInfo(id, kv.Value)
		if err != nil {
			continue
		}
		ns := NodeStatus{
			AgentID: id, Host: a.GetHostname(), Alive: alive[id], Head: a.GetHead(), Pid: a.GetPid(),
			Started: fmtTime(a.GetStartedUnixMs()), Total: agent.ResourcesFromPB(a.GetTotal()),
			InUse: map[string]float64{}, ObjectStoreBudget: a.GetObjectStoreBytes(), Workers: workers[id],
		}
		if ns.Alive {
			for name := range ns.Total {
				ns.InUse[name] = round4(used[id][name])
			}
			ns.ObjectStoreUsed = storeUsed[id]
			st.Cluster.AliveNodes++
			for name, v := range ns.Total {
				st.Cluster.Total[name] = round4(st.Cluster.Total[name] + v)
				st.Cluster.InUse[name] = round4(st.Cluster.InUse[name] + ns.InUse[name])
			}
			st.Cluster.ObjectStoreBudget += ns.ObjectStoreBudget
			st.Cluster.ObjectStoreUsed += ns.ObjectStoreUsed
		} else {
			st.Cluster.DeadNodes++
		}
		st.Nodes = append(st.Nodes, ns)
	}
	// Alive first, heads first, then by start.
	sort.SliceStable(st.Nodes, func(i, j int) bool {
		a, b := st.Nodes[i], st.Nodes[j]
		if a.Alive != b.Alive {
			return a.Alive
		}
		if a.Head != b.Head {
			return a.Head
		}
		return a.Started < b.Started
	})
	for _, kv := range tables[gcs.JobsPrefix] {
		id, _ := gcs.TrimKey(gcs.JobsPrefix, kv.Key)
		j, err := agent.DecodeJob(id, kv.Value)
		if err != nil {
			continue
		}
		js := JobStatus{
			JobID: id, State: j.GetState().String(), SubmissionID: j.GetSubmissionId(),
			Start: fmtTime(j.GetStartUnixMs()), End: fmtTime(j.GetEndUnixMs()),
			Driver: fmt.Sprintf("%s:%d", j.GetDriverHost(), j.GetDriverPid()), Entrypoint: j.GetEntrypoint(),
			Message: j.GetMessage(),
		}
		if j.GetState() == pb.JobInfo_RUNNING {
			st.Cluster.RunningJobs++
		}
		st.Jobs = append(st.Jobs, js)
	}
	sort.SliceStable(st.Jobs, func(i, j int) bool { return st.Jobs[i].Start > st.Jobs[j].Start })
	return st, nil
}

func round4(v float64) float64 {
	return float64(int64(v*10000+0.5)) / 10000
}

func printJSON(c *ucli.Context, v any) error {
	enc := json.NewEncoder(c.App.Writer)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// fmtResources prints "CPU 1/2, accel 0/1" (in use/total), names sorted, CPU and GPU first.
func fmtResources(total, inUse map[string]float64) string {
	names := make([]string, 0, len(total))
	for n := range total {
		names = append(names, n)
	}
	rank := func(n string) int {
		switch n {
		case "CPU":
			return 0
		case "GPU":
			return 1
		}
		return 2
	}
	sort.Slice(names, func(i, j int) bool {
		if rank(names[i]) != rank(names[j]) {
			return rank(names[i]) < rank(names[j])
		}
		return names[i] < names[j]
	})
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %g/%g", n, inUse[n], total[n]))
	}
	return strings.Join(parts, ", ")
}

func fmtBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func printStatus(c *ucli.Context, st *Status) {
	w := c.App.Writer
	fmt.Fprintf(w, "Cluster at %s: %d node(s) alive, %d dead; %d job(s) running\n", st.Address,
		st.Cluster.AliveNodes, st.Cluster.DeadNodes, st.Cluster.RunningJobs)
	fmt.Fprintf(w, "Resources in use/total: %s\n", fmtResources(st.Cluster.Total, st.Cluster.InUse))
	fmt.Fprintf(w, "Object store used/budget: %s / %s\n\n", fmtBytes(st.Cluster.ObjectStoreUsed), fmtBytes(st.Cluster.ObjectStoreBudget))

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tHOST\tSTATE\tROLE\tRESOURCES (in use/total)\tOBJECT STORE\tWORKERS\tSTARTED")
	for _, n := range st.Nodes {
		state, role := "alive", "agent"
		if !n.Alive {
			state = "dead"
		}
		if n.Head {
			role = "head"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s / %s\t%d\t%s\n", n.AgentID, n.Host, state, role,
			fmtResources(n.Total, n.InUse), fmtBytes(n.ObjectStoreUsed), fmtBytes(n.ObjectStoreBudget), n.Workers, n.Started)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	if len(st.Jobs) == 0 {
		fmt.Fprintln(w, "No jobs.")
		return
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tSTATE\tSUBMISSION\tSTART\tEND\tDRIVER\tMESSAGE")
	for _, j := range st.Jobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.JobID, j.State, dash(j.SubmissionID), j.Start, dash(j.End), j.Driver, j.Message)
	}
	_ = tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
