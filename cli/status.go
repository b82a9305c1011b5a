package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/ray-go/ray/internal/assembly/clusterstate"
	"github.com/ray-go/ray/internal/base/gcs"
)

func statusCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "status",
		Usage: "show the cluster's nodes (agents, and drivers: alive, unreachable or dead), jobs, resources and demands (what waits for resources)",
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
			printStatus(c.App.Writer, st)
			return nil
		},
	}
}

// Status is what `rayctl status -o json` prints (package internal/assembly/clusterstate
// reads it, for the dashboard too).
type Status = clusterstate.Status

// list lists a prefix of the GCS, bounded by 10 s.
func list(ctx context.Context, s gcs.Store, prefix string) ([]gcs.KV, error) {
	return clusterstate.List(ctx, s, prefix)
}

func fmtTime(ms int64) string { return clusterstate.FormatTime(ms) }

func readStatus(ctx context.Context, s gcs.Store) (*Status, error) { return clusterstate.Read(ctx, s) }

func printJSON(c *ucli.Context, v any) error {
	enc := json.NewEncoder(c.App.Writer)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// fmtResources prints "CPU 1/2, accel 0/1" (in use/total), names sorted, CPU and GPU first.
func fmtResources(total, inUse map[string]float64) string {
	names := sortedResourceNames(total)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %g/%g", n, inUse[n], total[n]))
	}
	return strings.Join(parts, ", ")
}

// sortedResourceNames are res's names sorted, CPU and GPU first.
func sortedResourceNames(res map[string]float64) []string {
	names := make([]string, 0, len(res))
	for n := range res {
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
	return names
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

// printStatus prints st as rayctl status does: the cluster's figures, then tables of its
// nodes and jobs, each cell on one line (cell: a job's message may have several).
func printStatus(w io.Writer, st *Status) {
	fmt.Fprintf(w, "Cluster at %s: %d node(s) alive, %d dead; %d job(s) running", st.Address,
		st.Cluster.AliveNodes, st.Cluster.DeadNodes, st.Cluster.RunningJobs)
	if st.Cluster.UnreachableDrivers+st.Cluster.DeadDrivers > 0 {
		fmt.Fprintf(w, "; %d driver(s) unreachable, %d dead", st.Cluster.UnreachableDrivers, st.Cluster.DeadDrivers)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Resources in use/total: %s\n", fmtResources(st.Cluster.Total, st.Cluster.InUse))
	// Every store: the worker processes' and the drivers' (rayctl memory's totals).
	fmt.Fprintf(w, "Object store used/budget: %s / %s\n", fmtBytes(st.Cluster.ObjectStoreUsed), fmtBytes(st.Cluster.ObjectStoreBudget))
	if st.Dashboard != "" {
		fmt.Fprintf(w, "Dashboard: %s (it asks for the cluster's token: `rayctl token show` on the head's machine)\n", st.Dashboard)
	}
	fmt.Fprintln(w)

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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s / %s\t%d\t%s\n", cell(n.AgentID), cell(n.Host), state, role,
			cell(fmtResources(n.Total, n.InUse)), fmtBytes(n.ObjectStoreUsed), fmtBytes(n.ObjectStoreBudget), n.Workers, cell(n.Started))
	}
	for _, d := range st.Drivers {
		store := "-"
		if d.State == clusterstate.DriverAlive {
			store = fmtBytes(d.ObjectStoreUsed) + " / " + fmtBytes(d.ObjectStoreBudget)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cell(d.NodeID), cell(d.Host), driverState(d), "driver", "-", store, "-", cell(dash(d.Started)))
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	if len(st.Jobs) == 0 {
		fmt.Fprintln(w, "No jobs.")
	} else {
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "JOB\tSTATE\tSUBMISSION\tSTART\tEND\tDRIVER\tMESSAGE")
		for _, j := range st.Jobs {
			driver := j.Driver
			if j.DriverState != "" && j.DriverState != clusterstate.DriverAlive {
				driver += " (" + strings.ToLower(j.DriverState) + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cell(j.JobID), cell(j.State), cell(dash(j.SubmissionID)), cell(j.Start),
				cell(dash(j.End)), cell(driver), cell(j.Message))
		}
		_ = tw.Flush()
	}
	fmt.Fprintln(w)
	printDemands(w, st.Demands)
}

// printDemands prints the Demands section of rayctl status (Ray's): a line per shape of
// tasks and actors that wait for resources, and a line per placement group not placed,
// each on one line.
//
//	Demands:
//	  {CPU: 1}: 10 pending task(s) (at 3f2a..., 9c1e...)
//	  {CPU: 1} * 2 (PACK): placement group 0a1b2c3d4e5f6a7b pending 35s: <why it waits>
func printDemands(w io.Writer, d clusterstate.Demands) {
	if len(d.Tasks) == 0 && len(d.PlacementGroups) == 0 && d.Omitted == 0 {
		fmt.Fprintln(w, "Demands: none (no task, actor or placement group waits for resources)")
		return
	}
	fmt.Fprintln(w, "Demands:")
	for _, t := range d.Tasks {
		var what []string
		if t.Tasks > 0 {
			what = append(what, fmt.Sprintf("%d pending task(s)", t.Tasks))
		}
		if t.Actors > 0 {
			what = append(what, fmt.Sprintf("%d pending actor(s)", t.Actors))
		}
		in := ""
		if t.PlacementGroup != "" {
			in = " in placement group " + t.PlacementGroup
		}
		fmt.Fprintln(w, "  "+cell(fmt.Sprintf("%s%s: %s (at %s)", fmtShape(t.Shape), in, strings.Join(what, ", "), strings.Join(t.AgentIDs, ", "))))
	}
	if d.Omitted > 0 {
		fmt.Fprintf(w, "  %d more pending task(s) or actor(s) of other shapes\n", d.Omitted)
	}
	for _, g := range d.PlacementGroups {
		line := fmt.Sprintf("%s (%s): placement group %s", fmtBundles(g.Bundles), g.Strategy, g.ID)
		if g.Name != "" {
			line += fmt.Sprintf(" %q", g.Name)
		}
		if g.State == "PENDING" {
			line += fmt.Sprintf(" pending %s", time.Duration(g.PendingSeconds)*time.Second)
		} else {
			line += " " + strings.ToLower(g.State) + " (bundles lost with their node)"
		}
		line += ", job " + g.JobID
		if g.Reason != "" {
			line += ": " + g.Reason
		}
		fmt.Fprintln(w, "  "+cell(line))
	}
}

// fmtShape prints a shape as "{CPU: 1, GPU: 1, accel: 2}", names sorted, CPU and GPU first.
func fmtShape(shape map[string]float64) string {
	names := sortedResourceNames(shape)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s: %g", n, shape[n]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// fmtBundles prints bundles as Ray does, runs of equal ones counted: "{CPU: 1} * 2, {GPU: 1} * 1".
func fmtBundles(bundles []map[string]float64) string {
	var parts []string
	for i := 0; i < len(bundles); {
		j := i + 1
		for j < len(bundles) && fmtShape(bundles[j]) == fmtShape(bundles[i]) {
			j++
		}
		parts = append(parts, fmt.Sprintf("%s * %d", fmtShape(bundles[i]), j-i))
		i = j
	}
	if len(parts) == 0 {
		return "{}"
	}
	return strings.Join(parts, ", ")
}

// driverState is a driver's state in the node table of `rayctl status`: alive,
// "unreachable, silent 12s" or "dead".
func driverState(d clusterstate.DriverStatus) string {
	switch d.State {
	case clusterstate.DriverUnreachable:
		if d.LastHeartbeat != "" {
			return fmt.Sprintf("unreachable, silent %ds", d.SilentSeconds)
		}
		return "unreachable"
	case clusterstate.DriverDead:
		return "dead"
	}
	return "alive"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
