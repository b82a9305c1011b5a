package clusterstate

import (
	"context"
	"encoding/hex"
	"fmt"
	"sort"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/assembly/agent"
	"github.com/ray-go/ray/internal/assembly/clusterview"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/pb"
)

// listTimeout bounds each List of a prefix.
const listTimeout = 10 * time.Second

// Status is the cluster's nodes and jobs (what `rayctl status -o json` prints).
type Status struct {
	Address string       `json:"address"`
	Nodes   []NodeStatus `json:"nodes"`
	Jobs    []JobStatus  `json:"jobs"`
	// Drivers are the drivers joined to the cluster (ray.Init with an address, rayctl job
	// submit): those alive, and those whose lease lapsed (UNREACHABLE, then DEAD for a
	// while: see DriverStatus).
	Drivers []DriverStatus `json:"drivers"`
	Cluster ClusterStatus  `json:"cluster"`
	// Dashboard is the URL of the alive head's web dashboard ("" when none serves one).
	Dashboard string `json:"dashboard,omitempty"`
	// Demands is the work that waits for resources (Ray's "Demands").
	Demands Demands `json:"demands"`
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
	// MetricsAddress is the host:port of the agent's GET /metrics ("": it serves none).
	MetricsAddress string `json:"metrics_address,omitempty"`
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
	// Namespace is the job's namespace of named actors (ray.WithNamespace, or the
	// anonymous one its driver made; "" for a job recorded without one).
	Namespace string `json:"namespace,omitempty"`
	// DriverState is the state of the job's driver (DriverStatus.State) while the job runs
	// or when its driver was lost; "" for an ended job whose driver ended with it.
	DriverState string `json:"driver_state,omitempty"`
	// DriverLastHeartbeat is about when a driver that is UNREACHABLE or DEAD last renewed
	// its lease, and DriverSilentSeconds how long ago that was (UNREACHABLE only).
	DriverLastHeartbeat string `json:"driver_last_heartbeat,omitempty"`
	DriverSilentSeconds int64  `json:"driver_silent_seconds,omitempty"`

	driverNode, driverHost string // the job record's, for readDrivers
	driverPid              int32
}

// The states of a driver (DriverStatus.State).
const (
	DriverAlive = "ALIVE"
	// DriverUnreachable: its lease lapsed (no heartbeat: stopped, hung, cut off, or
	// exited and not yet taken for dead); its job runs on while it may come back.
	DriverUnreachable = "UNREACHABLE"
	// DriverDead: the head took it for dead and ended its job (agent.DriverLost).
	DriverDead = "DEAD"
)

// DriverStatus is one driver joined to the cluster. An alive driver has a node record; one
// whose lease lapsed has the head's driverlost/ record (agent.DriverLost), kept while it
// is unreachable and for a bounded time (an hour, at most 100) once it is dead.
type DriverStatus struct {
	NodeID  string `json:"node_id"`
	JobID   string `json:"job_id"`
	Host    string `json:"host"`
	Pid     int32  `json:"pid"`
	State   string `json:"state"` // DriverAlive, DriverUnreachable or DriverDead
	Started string `json:"started,omitempty"`
	// LastHeartbeat is about when it last renewed its lease (a lease TTL before the head
	// saw it lapse), SilentSeconds how long ago (UNREACHABLE only), Died when the head
	// took it for dead and Reason why (DEAD only).
	LastHeartbeat     string `json:"last_heartbeat,omitempty"`
	SilentSeconds     int64  `json:"silent_seconds,omitempty"`
	Died              string `json:"died,omitempty"`
	Reason            string `json:"reason,omitempty"`
	ObjectStoreBudget int64  `json:"object_store_budget"`
	ObjectStoreUsed   int64  `json:"object_store_used"` // its own store (driverload/)
}

// ClusterStatus sums the alive nodes.
type ClusterStatus struct {
	AliveNodes int                `json:"alive_nodes"`
	DeadNodes  int                `json:"dead_nodes"`
	Total      map[string]float64 `json:"resources_total"`
	InUse      map[string]float64 `json:"resources_in_use"`
	// ObjectStoreBudget is the alive agents' object store budgets and the alive drivers'
	// (a driver joined to the cluster has a store of its own). ObjectStoreUsed is the
	// bytes in memory of every store that reports: the worker processes' (whatever
	// agent runs them, if any) and the drivers' (driverload/), as `rayctl memory` and
	// ray.Memory total them.
	ObjectStoreBudget int64 `json:"object_store_budget"`
	ObjectStoreUsed   int64 `json:"object_store_used"`
	RunningJobs       int   `json:"running_jobs"`
	// UnreachableDrivers and DeadDrivers count Status.Drivers in those states.
	UnreachableDrivers int `json:"unreachable_drivers"`
	DeadDrivers        int `json:"dead_drivers"`
}

// List lists prefix, bounded by 10 s.
func List(ctx context.Context, s gcs.Store, prefix string) ([]gcs.KV, error) {
	cctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	kvs, _, err := s.List(cctx, prefix)
	return kvs, err
}

// FormatTime prints unix milliseconds as local time ("" for 0).
func FormatTime(ms int64) string {
	if ms == 0 {
		return ""
	}
	return time.UnixMilli(ms).Format("2006-01-02 15:04:05")
}

// Read reads the nodes (alive first, heads first, then by start) and jobs (newest first)
// and sums the alive nodes. Address is left empty: the caller knows it.
func Read(ctx context.Context, s gcs.Store) (*Status, error) {
	tables := map[string][]gcs.KV{}
	for _, p := range []string{gcs.AgentsPrefix, gcs.AgentAlivePrefix, gcs.NodesPrefix, gcs.LoadPrefix, gcs.JobsPrefix,
		gcs.JobAlivePrefix, gcs.DriverLostPrefix, gcs.DriverLoadPrefix, gcs.PlacementGroupsPrefix} {
		kvs, err := List(ctx, s, p)
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
		if l.GetMachineLedger() {
			// It shares its machine's ledger with the machine's other worker processes:
			// its available counts the machine's free resources too; what it holds is
			// its own.
			for name, q := range agent.ResourcesFromPB(l.GetInUse()) {
				u[name] += q
			}
		} else {
			avail := agent.ResourcesFromPB(l.GetAvailable())
			for name, total := range agent.ResourcesFromPB(n.GetTotal()) {
				if d := total - avail[name]; d > 0 {
					u[name] += d
				}
			}
		}
		storeUsed[n.GetAgentId()] += l.GetStoreInMemory()
	}
	st := &Status{Nodes: []NodeStatus{}, Jobs: []JobStatus{}, Drivers: []DriverStatus{}}
	st.Cluster.Total, st.Cluster.InUse = map[string]float64{}, map[string]float64{}
	for _, kv := range tables[gcs.AgentsPrefix] {
		id, _ := gcs.TrimKey(gcs.AgentsPrefix, kv.Key)
		a, err := agent.DecodeAgentInfo(id, kv.Value)
		if err != nil {
			continue
		}
		ns := NodeStatus{
			AgentID: id, Host: a.GetHostname(), Alive: alive[id], Head: a.GetHead(), Pid: a.GetPid(),
			Started: FormatTime(a.GetStartedUnixMs()), Total: agent.ResourcesFromPB(a.GetTotal()),
			InUse: map[string]float64{}, ObjectStoreBudget: a.GetObjectStoreBytes(), Workers: workers[id],
			MetricsAddress: a.GetMetricsAddress(),
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
			if ns.Head && a.GetDashboardAddress() != "" {
				scheme := "http://"
				if a.GetDashboardTls() {
					scheme = "https://"
				}
				st.Dashboard = scheme + a.GetDashboardAddress() + "/"
			}
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
			Start: FormatTime(j.GetStartUnixMs()), End: FormatTime(j.GetEndUnixMs()),
			Driver: fmt.Sprintf("%s:%d", j.GetDriverHost(), j.GetDriverPid()), Entrypoint: j.GetEntrypoint(),
			Message: j.GetMessage(), Namespace: j.GetRayNamespace(),
			driverNode: j.GetDriverNode(), driverHost: j.GetDriverHost(), driverPid: j.GetDriverPid(),
		}
		if j.GetState() == pb.JobInfo_RUNNING {
			st.Cluster.RunningJobs++
		}
		st.Jobs = append(st.Jobs, js)
	}
	sort.SliceStable(st.Jobs, func(i, j int) bool { return st.Jobs[i].Start > st.Jobs[j].Start })
	readDrivers(st, tables, time.Now())
	// Every store that reports, as rayctl memory totals them: the worker processes' (an
	// agent's row counts those of its own), and the drivers'.
	for _, l := range loads {
		st.Cluster.ObjectStoreUsed += l.GetStoreInMemory()
	}
	for _, kv := range tables[gcs.DriverLoadPrefix] {
		id, _ := gcs.TrimKey(gcs.DriverLoadPrefix, kv.Key)
		if l, err := clusterview.DecodeLoad(id, kv.Value); err == nil {
			st.Cluster.ObjectStoreUsed += l.GetStoreInMemory()
		}
	}
	for _, d := range st.Drivers {
		if d.State == DriverAlive {
			st.Cluster.ObjectStoreBudget += d.ObjectStoreBudget
		}
	}
	st.Demands = readDemands(tables, loads, time.Now())
	return st, nil
}

// readDrivers fills in st.Drivers, the driver states of st.Jobs and the cluster's counts
// of unreachable and dead drivers, from the node table (alive drivers), their object store
// reports, the head's driverlost/ records and, for a RUNNING job of which neither says
// anything, the absence of its jobalive/ key (UNREACHABLE, time unknown: the head has not
// recorded it yet).
func readDrivers(st *Status, tables map[string][]gcs.KV, now time.Time) {
	used := map[string]int64{}
	for _, kv := range tables[gcs.DriverLoadPrefix] {
		id, _ := gcs.TrimKey(gcs.DriverLoadPrefix, kv.Key)
		if l, err := clusterview.DecodeLoad(id, kv.Value); err == nil {
			used[id] = l.GetStoreInMemory()
		}
	}
	byJob := map[string]*DriverStatus{}
	var drivers []DriverStatus
	aliveNode := map[string]bool{}
	for _, kv := range tables[gcs.NodesPrefix] {
		id, _ := gcs.TrimKey(gcs.NodesPrefix, kv.Key)
		n, err := clusterview.DecodeNode(id, kv.Value)
		if err != nil || n.GetRole() != driverRole {
			continue
		}
		aliveNode[id] = true
		drivers = append(drivers, DriverStatus{NodeID: id, JobID: n.GetJobId(), Host: n.GetHostname(), Pid: n.GetPid(), State: DriverAlive,
			Started: FormatTime(n.GetStartedUnixMs()), ObjectStoreBudget: n.GetObjectStoreBytes(), ObjectStoreUsed: used[id]})
	}
	jobStart := map[string]string{}
	for _, j := range st.Jobs {
		jobStart[j.JobID] = j.Start
	}
	lost := map[string]bool{}
	for _, kv := range tables[gcs.DriverLostPrefix] {
		job, _ := gcs.TrimKey(gcs.DriverLostPrefix, kv.Key)
		d, err := agent.DecodeDriverLost(job, kv.Value)
		if err != nil || aliveNode[d.Node] {
			// Back: its node record says so (before the head deletes the record of an
			// unreachable driver; a dead one's job stays ended).
			continue
		}
		lost[job] = true
		ds := DriverStatus{NodeID: d.Node, JobID: job, Host: d.Host, Pid: d.Pid, State: DriverUnreachable,
			Started: jobStart[job], LastHeartbeat: FormatTime(d.LastHeartbeatUnixMs())}
		if d.DeadUnixMs > 0 {
			ds.State, ds.Died, ds.Reason = DriverDead, FormatTime(d.DeadUnixMs), d.Reason
		} else {
			ds.SilentSeconds = int64(now.Sub(time.UnixMilli(d.LastHeartbeatUnixMs())) / time.Second)
		}
		drivers = append(drivers, ds)
	}
	alive := map[string]bool{}
	for _, kv := range tables[gcs.JobAlivePrefix] {
		id, _ := gcs.TrimKey(gcs.JobAlivePrefix, kv.Key)
		alive[id] = true
	}
	for _, j := range st.Jobs {
		if j.State == pb.JobInfo_RUNNING.String() && !alive[j.JobID] && !lost[j.JobID] && !aliveNode[j.driverNode] && j.driverNode != "" {
			drivers = append(drivers, DriverStatus{NodeID: j.driverNode, JobID: j.JobID, Host: j.driverHost, Pid: j.driverPid,
				State: DriverUnreachable, Started: j.Start})
		}
	}
	for i := range drivers {
		d := &drivers[i]
		if prev := byJob[d.JobID]; prev == nil || prev.State != DriverAlive {
			byJob[d.JobID] = d
		}
		switch d.State {
		case DriverUnreachable:
			st.Cluster.UnreachableDrivers++
		case DriverDead:
			st.Cluster.DeadDrivers++
		}
	}
	for i := range st.Jobs {
		j := &st.Jobs[i]
		d := byJob[j.JobID]
		if d == nil || d.State == DriverAlive && j.State != pb.JobInfo_RUNNING.String() {
			continue
		}
		j.DriverState, j.DriverLastHeartbeat, j.DriverSilentSeconds = d.State, d.LastHeartbeat, d.SilentSeconds
		if d.State == DriverUnreachable && j.Message == "" {
			j.Message = "driver unreachable: its lease lapsed (no heartbeat"
			if d.LastHeartbeat != "" {
				j.Message += fmt.Sprintf(" for %ds, since about %s", d.SilentSeconds, d.LastHeartbeat)
			}
			j.Message += "): stopped, hung or cut off; the job fails if it does not come back"
		}
	}
	// Alive first, then unreachable, then dead; each by start, then node.
	rank := map[string]int{DriverAlive: 0, DriverUnreachable: 1, DriverDead: 2}
	sort.SliceStable(drivers, func(a, b int) bool {
		x, y := drivers[a], drivers[b]
		if rank[x.State] != rank[y.State] {
			return rank[x.State] < rank[y.State]
		}
		if x.Started != y.Started {
			return x.Started < y.Started
		}
		return x.NodeID < y.NodeID
	})
	st.Drivers = append(st.Drivers, drivers...)
}

// driverRole is a driver's NodeInfo.role (internal/assembly/node.RoleDriver, which ranks
// above this package).
const driverRole = "driver"

func round4(v float64) float64 {
	return float64(int64(v*10000+0.5)) / 10000
}

// Actor is one actor of the GCS actor table, with Ray's name for its state.
type Actor struct {
	ActorID   string `json:"actor_id"`
	Class     string `json:"class"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	State     string `json:"state"`
	Node      string `json:"node"`
	// AgentID is the machine of Node (the worker process of its job there), as `rayctl
	// list nodes` names it: "" once that worker process is gone, or for a local node.
	AgentID     string             `json:"agent_id"`
	JobID       string             `json:"job_id"`
	Detached    bool               `json:"detached"`
	Restarts    int32              `json:"restarts"`
	MaxRestarts int32              `json:"max_restarts"`
	ExactlyOnce bool               `json:"exactly_once"`
	Resources   map[string]float64 `json:"resources"`
	// Detail says why it died, why it restarts, and while it is not started yet why it
	// waits (the resources it asks for are in use, or no alive node has them).
	Detail string `json:"detail"`
	// StartTime is when the actor first became ALIVE, EndTime when it became DEAD ("" until
	// then), and History its lifecycle transitions, oldest first (the first and the newest
	// ones: the record keeps a bounded number), as Ray's actor events.
	StartTime string            `json:"start_time"`
	EndTime   string            `json:"end_time"`
	History   []ActorTransition `json:"history"`
}

// ActorTransition is one change of an actor's state, as the GCS record keeps it.
type ActorTransition struct {
	State       string `json:"state"`
	Time        string `json:"time"`
	UnixMs      int64  `json:"unix_ms"`
	Incarnation uint64 `json:"incarnation"`
	Node        string `json:"node"`
	Detail      string `json:"detail,omitempty"`
}

// actorHistory converts a record's history, and finds its start and end times.
func actorHistory(info *pb.ActorInfo) (hist []ActorTransition, start, end string) {
	hist = make([]ActorTransition, 0, len(info.GetHistory()))
	for _, t := range info.GetHistory() {
		ph := lifecycle.Phase(t.GetPhase())
		at := FormatTime(t.GetUnixMs())
		hist = append(hist, ActorTransition{State: ph.RayName(), Time: at, UnixMs: t.GetUnixMs(),
			Incarnation: t.GetIncarnation(), Node: t.GetNode(), Detail: t.GetDetail()})
		switch {
		case ph == lifecycle.Alive && start == "":
			start = at
		case ph == lifecycle.Dead:
			end = at
		}
	}
	return hist, start, end
}

// ReadActors reads the actor table, sorted by actor ID.
func ReadActors(ctx context.Context, s gcs.Store) ([]Actor, error) {
	kvs, err := List(ctx, s, gcs.ActorsPrefix)
	if err != nil {
		return nil, err
	}
	nodes, err := List(ctx, s, gcs.NodesPrefix)
	if err != nil {
		return nil, err
	}
	agentOf := agentsOf(nodes)
	out := []Actor{}
	for _, kv := range kvs {
		info := &pb.ActorInfo{}
		if err := proto.Unmarshal(kv.Value, info); err != nil {
			continue // not an actor record (or a corrupt one): nothing to show
		}
		hist, start, end := actorHistory(info)
		out = append(out, Actor{ActorID: hex.EncodeToString(info.GetActorId()), Class: info.GetClass(),
			Name: info.GetName(), Namespace: info.GetNamespace(), State: lifecycle.Phase(info.GetPhase()).RayName(),
			Node: info.GetNode(), AgentID: agentOf[info.GetNode()], JobID: info.GetJobId(), Detached: info.GetDetached(),
			Restarts: info.GetRestarts(), MaxRestarts: info.GetMaxRestarts(), ExactlyOnce: !info.GetAtMostOnce(),
			Resources: agent.ResourcesFromPB(info.GetResources()),
			Detail:    lifecycle.State{Detail: info.GetDetail(), Waiting: info.GetWaiting()}.Why(),
			StartTime: start, EndTime: end, History: hist})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ActorID < out[j].ActorID })
	return out, nil
}

// PlacementGroup is a placement group as the state API shows it.
type PlacementGroup struct {
	ID       string `json:"placement_group_id"`
	Name     string `json:"name"`
	State    string `json:"state"` // PENDING, CREATED, RESCHEDULING, REMOVED (Ray's)
	Strategy string `json:"strategy"`
	JobID    string `json:"job_id"`
	// Bundles are the bundles' resources, and Nodes each bundle's node ("" until placed).
	Bundles []map[string]float64 `json:"bundles"`
	Nodes   []string             `json:"nodes"`
	// AgentIDs are the machines of Nodes (the worker processes of the group's job there),
	// as `rayctl status` and `rayctl list nodes` name them: "" while a bundle is not placed,
	// once its worker process is gone, or for a local node.
	AgentIDs []string `json:"agent_ids"`
	Created  int64    `json:"created_unix_ms"`
	Detail   string   `json:"detail"` // why a PENDING group waits
}

// ReadPlacementGroups reads the placement groups' records (those of live processes: a
// record goes with its owner's lease), sorted by ID.
func ReadPlacementGroups(ctx context.Context, s gcs.Store) ([]PlacementGroup, error) {
	kvs, err := List(ctx, s, gcs.PlacementGroupsPrefix)
	if err != nil {
		return nil, err
	}
	nodes, err := List(ctx, s, gcs.NodesPrefix)
	if err != nil {
		return nil, err
	}
	agentOf := agentsOf(nodes)
	out := []PlacementGroup{}
	for _, kv := range kvs {
		info := &pb.PlacementGroupInfo{}
		if err := proto.Unmarshal(kv.Value, info); err != nil || info.GetId() == "" {
			continue // not a record (or a corrupt one): nothing to show
		}
		g := PlacementGroup{ID: info.GetId(), Name: info.GetName(), State: info.GetState(), Strategy: info.GetStrategy(),
			JobID: info.GetJobId(), Created: info.GetCreatedUnixMs(), Detail: info.GetDetail()}
		for _, b := range info.GetBundles() {
			g.Bundles = append(g.Bundles, agent.ResourcesFromPB(b.GetResources()))
			g.Nodes = append(g.Nodes, b.GetNodeId())
			g.AgentIDs = append(g.AgentIDs, agentOf[b.GetNodeId()])
		}
		out = append(out, g)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// agentsOf maps the node records' IDs (nodes/) to their agents ("" for a node no agent
// runs).
func agentsOf(nodes []gcs.KV) map[string]string {
	agentOf := map[string]string{}
	for _, kv := range nodes {
		id, _ := gcs.TrimKey(gcs.NodesPrefix, kv.Key)
		if n, err := clusterview.DecodeNode(id, kv.Value); err == nil {
			agentOf[id] = n.GetAgentId()
		}
	}
	return agentOf
}
