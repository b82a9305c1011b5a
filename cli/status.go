package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	ucli "github.com/urfave/cli/v2"

	"github.com/ray-go/ray/internal/assembly/clusterstate"
	"github.com/ray-go/ray/internal/base/gcs"
)

func statusCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "status",
		Usage: "show the cluster's nodes (agents, and drivers: alive, unreachable or dead), jobs and resources",
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
		return
	}
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
