package cli

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	ucli "github.com/urfave/cli/v2"

	"github.com/ray-go/ray/internal/assembly/clusterview"
	"github.com/ray-go/ray/internal/assembly/taskstate"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/pb"
)

func memoryCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "memory",
		Usage: "show the object stores: per node (worker processes and drivers), bytes in memory and spilled, objects, the largest objects and their owners",
		Description: "The figures come from the reports the nodes (worker processes, local nodes, and drivers " +
			"joined to the cluster: ROLE driver, with their job) refresh every second while they change; the " +
			"totals include the drivers' stores (the objects a driver Put and its tasks' results live there). " +
			"ray.Memory gives the same from a program. Objects small enough to travel inline (up to 100 KiB) " +
			"live with their owners and are not counted. A process of a running job whose registration lapsed " +
			"(killed with its machine, stopped, hung, starved or cut off) has no figures to read: rayctl names it in a warning, " +
			"with what it is and why as far as the cluster knows (\"missing\" and \"missing_why\" in -o json).",
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
			rep, err := readMemory(c.Context, store)
			if err != nil {
				return exitf(ExitError, "read the object stores' reports from %s: %v", strings.Join(addr, ","), err)
			}
			warnMissingStores(c.App.ErrWriter, rep)
			if asJSON {
				return printJSON(c, rep)
			}
			printMemory(c, rep)
			return nil
		},
	}
}

// MemoryReport is what `rayctl memory -o json` prints.
type MemoryReport struct {
	Nodes []NodeMemory `json:"nodes"`
	// Totals over the nodes, drivers included; Budget counts each machine's budget once,
	// which the worker processes there share (each shows it as its own budget).
	Budget      int64 `json:"budget"`
	MemoryBytes int64 `json:"memory_bytes"`
	Spilled     int64 `json:"spilled_bytes"`
	Objects     int64 `json:"objects"`
	// Missing are the processes of running jobs whose registration lapsed (killed with
	// their machine, stopped, hung, starved or cut off): their stores are not in Nodes nor in
	// the totals. MissingWhy says for each what it is and why, as far as the GCS tells
	// (taskstate.WhyMissing: its machine's agent is dead, or its registration lapsed).
	Missing    []string          `json:"missing,omitempty"`
	MissingWhy map[string]string `json:"missing_why,omitempty"`
}

// NodeMemory is one node's object store.
type NodeMemory struct {
	Node  string `json:"node"`
	Agent string `json:"agent"`
	Job   string `json:"job"`
	// Role is the node's: "worker" (a worker process an agent started for Job), "driver"
	// (Job's driver, joined with an address or run by rayctl job submit) or "local".
	Role        string         `json:"role"`
	Budget      int64          `json:"budget"`
	MemoryBytes int64          `json:"memory_bytes"`
	Spilled     int64          `json:"spilled_bytes"`
	Objects     int64          `json:"objects"`
	SpillErrors int64          `json:"spill_errors"`
	InFlight    int64          `json:"in_flight_bytes"` // objects being pulled into the node now
	Largest     []StoredObject `json:"largest"`
}

// StoredObject is one of a store's largest objects.
type StoredObject struct {
	ID      string `json:"id"`
	Size    int64  `json:"size"`
	Owner   string `json:"owner"`
	Spilled bool   `json:"spilled"`
}

func readMemory(ctx context.Context, store gcs.Store) (*MemoryReport, error) {
	nodes, _, err := store.List(ctx, gcs.NodesPrefix)
	if err != nil {
		return nil, err
	}
	loads, _, err := store.List(ctx, gcs.LoadPrefix)
	if err != nil {
		return nil, err
	}
	drivers, _, err := store.List(ctx, gcs.DriverLoadPrefix)
	if err != nil {
		return nil, err
	}
	info := map[string]*pb.NodeInfo{}
	for _, kv := range nodes {
		id, _ := gcs.TrimKey(gcs.NodesPrefix, kv.Key)
		if n, err := clusterview.DecodeNode(id, kv.Value); err == nil {
			info[n.NodeId] = n
		}
	}
	rep := &MemoryReport{Nodes: []NodeMemory{}}
	machines := map[string]int64{} // agent ID: its machine's budget
	for _, kv := range append(loads, drivers...) {
		id, ok := gcs.TrimKey(gcs.LoadPrefix, kv.Key)
		if !ok {
			id, _ = gcs.TrimKey(gcs.DriverLoadPrefix, kv.Key)
		}
		l, err := clusterview.DecodeLoad(id, kv.Value)
		if err != nil {
			continue
		}
		n := NodeMemory{Node: l.NodeId, Budget: l.StoreBudget, MemoryBytes: l.StoreInMemory, Spilled: l.StoreSpilled,
			Objects: l.StoreObjects, SpillErrors: l.StoreSpillErrors, InFlight: l.InFlightBytes, Largest: []StoredObject{}}
		if ni := info[l.NodeId]; ni != nil {
			n.Agent, n.Job, n.Role = ni.AgentId, ni.JobId, ni.Role
		}
		for _, o := range l.StoreLargest {
			so := StoredObject{ID: hex.EncodeToString(o.ObjectId), Size: o.Size, Spilled: o.Spilled}
			if o.Owner != nil {
				so.Owner = o.Owner.Address + "/" + o.Owner.Id
			}
			n.Largest = append(n.Largest, so)
		}
		rep.Nodes = append(rep.Nodes, n)
		if n.Agent != "" && n.Role == "worker" {
			// The worker processes of one agent share its machine's budget (their stores
			// hold grants of it): count it once.
			machines[n.Agent] = max(machines[n.Agent], n.Budget)
		} else {
			rep.Budget += n.Budget
		}
		rep.MemoryBytes += n.MemoryBytes
		rep.Spilled += n.Spilled
		rep.Objects += n.Objects
	}
	for _, b := range machines {
		rep.Budget += b
	}
	sort.Slice(rep.Nodes, func(i, j int) bool {
		a, b := rep.Nodes[i], rep.Nodes[j]
		if a.Agent != b.Agent {
			return a.Agent < b.Agent
		}
		return a.Node < b.Node
	})
	lost, err := taskstate.Unreachable(ctx, store, "", nil)
	if err != nil {
		return nil, err
	}
	for _, id := range lost {
		if !slices.ContainsFunc(rep.Nodes, func(n NodeMemory) bool { return n.Node == id }) {
			rep.Missing = append(rep.Missing, id)
		}
	}
	if len(rep.Missing) > 0 {
		rep.MissingWhy = taskstate.WhyMissing(ctx, store, rep.Missing)
	}
	return rep, nil
}

// warnMissingStores says which processes' stores rep leaves out, as `rayctl list objects`
// does for the objects of processes that did not answer.
func warnMissingStores(w io.Writer, rep *MemoryReport) {
	if len(rep.Missing) > 0 {
		fmt.Fprintf(w, "rayctl: the object stores of %d process(es) of running jobs are missing: %s\n",
			len(rep.Missing), taskstate.MissingList(rep.Missing, rep.MissingWhy))
	}
}

func printMemory(c *ucli.Context, rep *MemoryReport) {
	w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	drivers := 0
	for _, n := range rep.Nodes {
		if n.Role == "driver" {
			drivers++
		}
	}
	fmt.Fprintf(w, "Object stores: %s in memory of %s budget, %s spilled, %d objects on %d node(s), %d of them drivers\n\n",
		fmtBytes(rep.MemoryBytes), fmtBytes(rep.Budget), fmtBytes(rep.Spilled), rep.Objects, len(rep.Nodes), drivers)
	if len(rep.Nodes) == 0 {
		fmt.Fprintln(w, "No node reports an object store (no job is running).")
		w.Flush()
		return
	}
	fmt.Fprintln(w, "NODE\tROLE\tAGENT\tJOB\tIN MEMORY / BUDGET\tSPILLED\tOBJECTS\tPULLING\tSPILL ERRORS")
	for _, n := range rep.Nodes {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s / %s\t%s\t%d\t%s\t%d\n", n.Node, dash(n.Role), dash(n.Agent), dash(n.Job),
			fmtBytes(n.MemoryBytes), fmtBytes(n.Budget), fmtBytes(n.Spilled), n.Objects, fmtBytes(n.InFlight), n.SpillErrors)
	}
	fmt.Fprintln(w)
	any := false
	for _, n := range rep.Nodes {
		for _, o := range n.Largest {
			if !any {
				fmt.Fprintln(w, "LARGEST OBJECTS\tNODE\tSIZE\tSPILLED\tOWNER")
				any = true
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%t\t%s\n", o.ID, n.Node, fmtBytes(o.Size), o.Spilled, o.Owner)
		}
	}
	w.Flush()
}
