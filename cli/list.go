package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	ucli "github.com/urfave/cli/v2"

	"github.com/ray-go/ray/internal/assembly/clusterstate"
	"github.com/ray-go/ray/internal/base/gcs"
)

// The state API's command line (Ray's `ray list` and `ray get`): records of the cluster's
// nodes, jobs and actors as the GCS holds them, as a table, JSON or YAML, filtered and
// limited. Every record is a flat list of fields, so that one printer and one filter serve
// every kind.

// field is one column of a record; v is a string, a number, a bool or a map of resources.
type field struct {
	k string
	v any
}

// record is one row: its fields in column order.
type record []field

func (r record) get(k string) (any, bool) {
	for _, f := range r {
		if f.k == k {
			return f.v, true
		}
	}
	return nil, false
}

// MarshalJSON keeps the column order.
func (r record) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, f := range r {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.k)
		v, err := json.Marshal(f.v)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// kind is one kind of record that `list` and `get` know.
type kind struct {
	name    string // as typed: nodes, jobs, actors
	one     string // as `get` takes it: node, job, actor
	id      string // the field that identifies a record
	read    func(ctx context.Context, s gcs.Store) ([]record, error)
	columns []string        // the table's columns (JSON and YAML print every field)
	fields  func() []string // every field of its records, in order (what --filter takes)
}

var kinds = []kind{
	{name: "nodes", one: "node", id: "node_id", read: readNodes, fields: fieldsOf(nodeRecord(clusterstate.NodeStatus{})),
		columns: []string{"node_id", "state", "role", "head", "host", "pid", "resources_in_use/total", "object_store_used", "object_store_budget"}},
	{name: "jobs", one: "job", id: "job_id", read: readJobs, fields: fieldsOf(jobRecord(clusterstate.JobStatus{})),
		columns: []string{"job_id", "state", "submission_id", "start", "end", "driver", "driver_state", "entrypoint"}},
	{name: "actors", one: "actor", id: "actor_id", read: readActors, fields: fieldsOf(actorRecord(clusterstate.Actor{})),
		columns: []string{"actor_id", "class", "name", "namespace", "state", "node", "job_id", "restarts", "detail"}},
	{name: "placement-groups", one: "placement-group", id: "placement_group_id", read: readPlacementGroups, fields: fieldsOf(groupRecord(clusterstate.PlacementGroup{})),
		columns: []string{"placement_group_id", "state", "strategy", "bundles", "nodes", "agent_ids", "job_id", "detail"}},
	{name: "workers", one: "worker", id: "worker_id", read: readWorkers, fields: func() []string {
		return []string{"worker_id", "worker_type", "state", "is_alive", "job_id", "agent_id", "host", "pid", "address", "started", "exit", "exited", "message", "log_path"}
	}, columns: []string{"worker_id", "worker_type", "state", "job_id", "agent_id", "host", "pid", "exit"}},
	// tasks are not in the GCS: their owners are asked (tasks.go)
	{name: "tasks", one: "task", id: "task_id", columns: taskColumns, fields: taskFields},
	// objects neither: their owners are asked (objects.go)
	{name: "objects", one: "object", id: "object_id", columns: objectColumns, fields: objectFields},
}

// fieldsOf returns a function that answers the fields of records like r.
func fieldsOf(r record) func() []string {
	return func() []string {
		out := make([]string, len(r))
		for i, f := range r {
			out[i] = f.k
		}
		return out
	}
}

// knownFields refuses a filter on a field the records of k do not have, naming those they
// have, before anything is read: a list of no records used to take any field and print
// nothing.
func knownFields(k kind, filters []filter) error {
	fields := k.fields()
	for _, f := range filters {
		if !slices.Contains(fields, f.key) {
			return exitf(ExitError, "filter on %q: %s have no such field; they have %s", f.key, k.name, strings.Join(fields, ", "))
		}
	}
	return nil
}

func kindOf(name string) (kind, bool) {
	for _, k := range kinds {
		if k.name == name || k.one == name {
			return k, true
		}
	}
	return kind{}, false
}

func kindNames() string {
	var n []string
	for _, k := range kinds {
		n = append(n, k.name)
	}
	return strings.Join(n, ", ")
}

// kindArgs is what list and summary (one: get) take, as their usage line shows it.
func kindArgs(one bool) string {
	var n []string
	for _, k := range kinds {
		if one {
			n = append(n, k.one)
		} else {
			n = append(n, k.name)
		}
	}
	return strings.Join(n, "|")
}

func stateFlags() []ucli.Flag {
	return append([]ucli.Flag{addressFlag(), namespaceFlag(), sessionDirFlag(),
		&ucli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "output format: table, json or yaml", Value: "table", EnvVars: []string{"RAY_GO_OUTPUT"}},
	}, credentialFlags()...)
}

// checkLimit refuses a negative --limit (it printed everything, as 0 does).
func checkLimit(c *ucli.Context) error {
	if n := c.Int("limit"); n < 0 {
		return exitf(ExitError, "--limit %d: give a number of records, 1 or more, or 0 for all", n)
	}
	return nil
}

func listCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "list",
		Usage:     "list the cluster's nodes, jobs, actors, placement groups, worker processes and drivers (workers), tasks or objects (Ray's `ray list`)",
		ArgsUsage: kindArgs(false),
		Flags: append(stateFlags(),
			&ucli.StringSliceFlag{Name: "filter", Aliases: []string{"f"}, Usage: "keep records whose FIELD=VALUE (or FIELD!=VALUE); repeatable, all must hold; values of enum fields (state, type, reference_type, ...) in any case, checked; of ID fields (job_id, node, actor_id, task_id, ...) an ID or at least 6 of its first characters"},
			&ucli.IntFlag{Name: "limit", Usage: "print at most this many records (0: all)", Value: 100},
			&ucli.BoolFlag{Name: "detail", Usage: "objects: add the call_site column (where each object was created; its owner records it with RAY_record_ref_creation_sites=1)"},
		),
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return exitf(ExitError, "list takes what to list: one of %s", kindNames())
			}
			k, ok := kindOf(c.Args().First())
			if !ok {
				return exitf(ExitError, "cannot list %q: use one of %s", c.Args().First(), kindNames())
			}
			format, err := stateFormat(c)
			if err != nil {
				return err
			}
			if err := checkLimit(c); err != nil {
				return err
			}
			filters, err := parseFilters(c.StringSlice("filter"))
			if err == nil {
				err = knownFields(k, filters)
			}
			if err == nil {
				filters, err = enumFilters(k.name, filters)
			}
			if err == nil {
				filters, err = resolveIDFilters(c, k.name, filters)
			}
			if err != nil {
				return err
			}
			if c.Bool("detail") && k.name != "objects" {
				return exitf(ExitError, "--detail is for list objects (the call_site column)")
			}
			switch k.name {
			case "tasks":
				return listTasks(c, format, filters, c.Int("limit"))
			case "objects":
				return listObjects(c, format, filters, c.Int("limit"))
			}
			recs, err := readKind(c, k)
			if err != nil {
				return err
			}
			if recs, err = filterRecords(recs, filters); err != nil {
				return err
			}
			if limit := c.Int("limit"); limit > 0 && len(recs) > limit {
				fmt.Fprintf(c.App.ErrWriter, "rayctl: %d of %d %s shown; raise --limit to see more\n", limit, len(recs), k.name)
				recs = recs[:limit]
			}
			return printRecords(c.App.Writer, format, k.columns, recs)
		},
	}
}

func getCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "get",
		Usage:     "show one node, job, actor, placement group, worker, task or object with every field (Ray's `ray get`)",
		ArgsUsage: kindArgs(true) + " ID",
		Flags:     stateFlags(),
		Action: func(c *ucli.Context) error {
			if c.NArg() != 2 {
				return exitf(ExitError, "get takes a kind and an ID, e.g. `rayctl get actor 3f2a...`")
			}
			k, ok := kindOf(c.Args().Get(0))
			if !ok {
				return exitf(ExitError, "cannot get %q: use one of %s", c.Args().Get(0), strings.ReplaceAll(kindArgs(true), "|", ", "))
			}
			format, err := stateFormat(c)
			if err != nil {
				return err
			}
			if format == "table" {
				format = "yaml" // one record reads best as YAML
			}
			switch k.name {
			case "tasks":
				return getTask(c, format, c.Args().Get(1))
			case "objects":
				return getObject(c, format, c.Args().Get(1))
			}
			recs, workers, err := readKindForGet(c, k)
			if err != nil {
				return err
			}
			id := c.Args().Get(1)
			ids := make([]string, len(recs))
			byID := map[string]record{}
			for i, r := range recs {
				v, _ := r.get(k.id)
				ids[i] = fmt.Sprint(v)
				byID[ids[i]] = r
			}
			for w := range workers { // a node: its worker processes' IDs name their machine
				ids = append(ids, w)
			}
			match, err := matchID(k.one, ids, id)
			if err != nil {
				return err
			}
			if match == "" {
				return exitf(ExitError, "no %s %q in the cluster (rayctl list %s shows them)", k.one, id, k.name)
			}
			found, ok := byID[match]
			if !ok {
				found = withWorker(byID, workers[match])
			}
			if format == "json" {
				enc := json.NewEncoder(c.App.Writer)
				enc.SetIndent("", "  ")
				return enc.Encode(found)
			}
			return printYAML(c.App.Writer, found, "")
		},
	}
}

func summaryCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "summary",
		Usage:     "count the cluster's tasks by function and state, actors by class and state, objects by reference type and state, or its nodes, jobs, placement groups or workers by state (Ray's `ray summary`)",
		ArgsUsage: kindArgs(false),
		Flags:     stateFlags(),
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return exitf(ExitError, "summary takes what to count: one of %s", kindNames())
			}
			k, ok := kindOf(c.Args().First())
			if !ok {
				return exitf(ExitError, "cannot summarize %q: use one of %s", c.Args().First(), kindNames())
			}
			format, err := stateFormat(c)
			if err != nil {
				return err
			}
			switch k.name {
			case "tasks":
				return summarizeTasks(c, format)
			case "objects":
				return summarizeObjects(c, format)
			}
			recs, err := readKind(c, k)
			if err != nil {
				return err
			}
			group := "state"
			if k.name == "actors" {
				group = "class"
			}
			return printRecords(c.App.Writer, format, nil, summarize(recs, group))
		},
	}
}

// matchID finds id (the whole ID, or at least 6 of its first characters) among ids, as
// every command that takes an ID does (clusterstate.MatchID): "" when none is; a prefix of
// several is an error naming them.
func matchID(kind string, ids []string, id string) (string, error) {
	m, err := clusterstate.MatchID(kind, ids, id)
	if err != nil {
		return "", exitf(ExitError, "%v", err)
	}
	return m, nil
}

// ambiguous is the error of a prefix that starts each of ids (more than one).
func ambiguous(kind, prefix string, ids []string) error {
	ids = slices.Clone(ids)
	sort.Strings(ids)
	return exitf(ExitError, "%v", &clusterstate.AmbiguousError{Kind: kind, Prefix: prefix, Candidates: ids})
}

// summarize counts records by the field group (if not "state") and by state: one row per
// group, with a column per state seen and the total.
func summarize(recs []record, group string) []record {
	counts := map[string]map[string]int{}
	for _, r := range recs {
		g := ""
		if group != "state" {
			v, _ := r.get(group)
			g = scalar(v)
		}
		st, _ := r.get("state")
		if counts[g] == nil {
			counts[g] = map[string]int{}
		}
		counts[g][scalar(st)]++
	}
	if group == "state" {
		group = ""
	}
	return countTable(group, counts)
}

// countTable makes the rows of a summary from counts[group][state]: one row per group in
// order (its name under the column group, left out when group is ""), a column per state
// seen in any group, in order, and the total.
func countTable(group string, counts map[string]map[string]int) []record {
	seen := map[string]bool{}
	var groups, states []string
	for g, byState := range counts {
		groups = append(groups, g)
		for st := range byState {
			if !seen[st] {
				seen[st] = true
				states = append(states, st)
			}
		}
	}
	sort.Strings(groups)
	sort.Strings(states)
	out := []record{}
	for _, g := range groups {
		var r record
		if group != "" {
			r = append(r, field{group, g})
		}
		total := 0
		for _, st := range states {
			r = append(r, field{st, counts[g][st]})
			total += counts[g][st]
		}
		out = append(out, append(r, field{"total", total}))
	}
	return out
}

func stateFormat(c *ucli.Context) (string, error) {
	switch o := c.String("output"); o {
	case "table", "text", "":
		return "table", nil
	case "json", "yaml":
		return o, nil
	default:
		return "", exitf(ExitError, "unknown output format %q: use -o table, -o json or -o yaml", o)
	}
}

func readKind(c *ucli.Context, k kind) ([]record, error) {
	store, addr, err := connect(c)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	recs, err := k.read(c.Context, store)
	if err != nil {
		return nil, exitf(ExitError, "read the %s from %s: %v", k.name, strings.Join(addr, ","), err)
	}
	return recs, nil
}

// readKindForGet reads the records of kind k for `get`, and for nodes also the worker
// processes (their IDs name their machine: workernode.go).
func readKindForGet(c *ucli.Context, k kind) ([]record, map[string]workerProc, error) {
	if k.name != "nodes" {
		recs, err := readKind(c, k)
		return recs, nil, err
	}
	store, addr, err := connect(c)
	if err != nil {
		return nil, nil, err
	}
	defer store.Close()
	recs, err := k.read(c.Context, store)
	if err == nil {
		var workers map[string]workerProc
		if workers, err = readWorkerProcesses(c.Context, store); err == nil {
			var exited map[string]workerProc
			if exited, err = exitedWorkerProcesses(c.Context, store, workers); err == nil {
				maps.Copy(workers, exited)
				return recs, workers, nil
			}
		}
	}
	return nil, nil, exitf(ExitError, "read the %s from %s: %v", k.name, strings.Join(addr, ","), err)
}

// filter is one --filter: the records whose field key prints as value (or not, neg).
type filter struct {
	key, value string
	neg        bool
}

func parseFilters(list []string) ([]filter, error) {
	var out []filter
	for _, s := range list {
		f := filter{}
		if i := strings.Index(s, "!="); i > 0 {
			f.key, f.value, f.neg = s[:i], s[i+2:], true
		} else if i := strings.Index(s, "="); i > 0 {
			f.key, f.value = s[:i], s[i+1:]
		} else {
			return nil, exitf(ExitError, "filter %q: write FIELD=VALUE or FIELD!=VALUE, e.g. --filter state=ALIVE", s)
		}
		out = append(out, f)
	}
	return out, nil
}

func filterRecords(recs []record, filters []filter) ([]record, error) {
	if len(filters) == 0 || len(recs) == 0 {
		return recs, nil
	}
	for _, f := range filters {
		if _, ok := recs[0].get(f.key); !ok {
			var keys []string
			for _, fl := range recs[0] {
				keys = append(keys, fl.k)
			}
			return nil, exitf(ExitError, "filter on %q: these records have no such field; they have %s", f.key, strings.Join(keys, ", "))
		}
	}
	var out []record
	for _, r := range recs {
		keep := true
		for _, f := range filters {
			v, _ := r.get(f.key)
			if (scalar(v) == f.value) == f.neg {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, r)
		}
	}
	return out, nil
}

// derived are table columns made of two fields: a node's resources as "CPU 1/2" (in use of
// total), as rayctl status prints them. JSON and YAML have the fields themselves.
var derived = map[string]func(r record) string{
	"resources_in_use/total": func(r record) string {
		total, _ := r.get("resources_total")
		inUse, _ := r.get("resources_in_use")
		t, _ := total.(map[string]float64)
		u, _ := inUse.(map[string]float64)
		return fmtResources(t, u)
	},
}

// scalar prints a field's value as a table cell, a filter compares it and YAML writes it.
func scalar(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case map[string]float64:
		return fmtAmounts(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	default:
		return fmt.Sprint(x)
	}
}

// fmtAmounts prints resource amounts in rayctl status's order: "CPU 2, GPU 1, accel 1".
func fmtAmounts(m map[string]float64) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	rank := map[string]int{"CPU": 0, "GPU": 1}
	sort.Slice(names, func(i, j int) bool {
		ri, iok := rank[names[i]]
		rj, jok := rank[names[j]]
		if !iok {
			ri = 2
		}
		if !jok {
			rj = 2
		}
		if ri != rj {
			return ri < rj
		}
		return names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + " " + strconv.FormatFloat(m[n], 'f', -1, 64)
	}
	return strings.Join(parts, ", ")
}

// printFiltered applies to recs the filters the processes could not (rest), cuts them to
// limit and prints them, saying on stderr when the cut hid some; total is how many the
// processes matched.
func printFiltered(c *ucli.Context, format, noun string, columns []string, recs []record, total int, rest []filter, limit int) error {
	if len(rest) > 0 {
		var err error
		if rest, err = matchRecordIDs(noun, rest, recs); err != nil {
			return err
		}
		if recs, err = filterRecords(recs, rest); err != nil {
			return err
		}
		total = len(recs)
	}
	if limit > 0 && len(recs) > limit {
		recs = recs[:limit]
	}
	if total > len(recs) {
		fmt.Fprintf(c.App.ErrWriter, "rayctl: %d of %d %s shown; raise --limit to see more\n", len(recs), total, noun)
	}
	return printRecords(c.App.Writer, format, columns, recs)
}

func printRecords(w io.Writer, format string, columns []string, recs []record) error {
	switch format {
	case "json":
		if recs == nil {
			recs = []record{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(recs)
	case "yaml":
		if len(recs) == 0 {
			_, err := fmt.Fprintln(w, "[]")
			return err
		}
		for _, r := range recs {
			if err := printYAML(w, r, "- "); err != nil {
				return err
			}
		}
		return nil
	}
	if columns == nil && len(recs) == 0 {
		_, err := fmt.Fprintln(w, "(none)") // a summary of nothing: no columns to head
		return err
	}
	if columns == nil {
		for _, f := range recs[0] {
			columns = append(columns, f.k)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, strings.ToUpper(strings.Join(columns, "\t")))
	for _, r := range recs {
		cells := make([]string, len(columns))
		for i, col := range columns {
			if d := derived[col]; d != nil {
				cells[i] = cell(d(r))
			} else {
				v, _ := r.get(col)
				cells[i] = cell(scalar(v))
			}
			if cells[i] == "" {
				cells[i] = "-"
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// cellEscaper keeps a table cell on one line and in its column: newlines, carriage returns
// and tabs (a task's error, a job's message) are written as \n, \r and \t.
var cellEscaper = strings.NewReplacer("\n", `\n`, "\r", `\r`, "\t", `\t`)

// cell is s as a table cell (JSON and YAML print values as they are).
func cell(s string) string { return cellEscaper.Replace(s) }

// printYAML writes r as a YAML mapping; first prefixes its first line ("- " in a list).
// Strings are quoted as JSON strings (valid YAML) so that any value reads back unchanged.
func printYAML(w io.Writer, r record, first string) error {
	indent := strings.Repeat(" ", len(first))
	for i, f := range r {
		p := indent
		if i == 0 {
			p = first
		}
		var val string
		switch x := f.v.(type) {
		case map[string]float64:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			parts := make([]string, len(keys))
			for j, k := range keys {
				q, _ := json.Marshal(k)
				parts[j] = fmt.Sprintf("%s: %s", q, strconv.FormatFloat(x[k], 'f', -1, 64))
			}
			val = "{" + strings.Join(parts, ", ") + "}"
		case string:
			q, _ := json.Marshal(x)
			val = string(q)
		case []record: // a list of records, each item's fields under its "- "
			empty := ""
			if len(x) == 0 {
				empty = " []"
			}
			if _, err := fmt.Fprintf(w, "%s%s:%s\n", p, f.k, empty); err != nil {
				return err
			}
			for _, item := range x {
				if err := printYAML(w, item, indent+"  - "); err != nil {
					return err
				}
			}
			continue
		default:
			val = scalar(x)
		}
		if _, err := fmt.Fprintf(w, "%s%s: %s\n", p, f.k, val); err != nil {
			return err
		}
	}
	return nil
}

func state(alive bool) string {
	if alive {
		return "ALIVE"
	}
	return "DEAD"
}

func readNodes(ctx context.Context, s gcs.Store) ([]record, error) {
	st, err := readStatus(ctx, s)
	if err != nil {
		return nil, err
	}
	var out []record
	for _, n := range st.Nodes {
		out = append(out, nodeRecord(n))
	}
	// The drivers joined to the cluster: ALIVE, UNREACHABLE (lease lapsed) or DEAD (for a
	// while after the head ended its job), with their job and last heartbeat.
	for _, d := range st.Drivers {
		out = append(out, driverRecord(d))
	}
	return out, nil
}

// nodeRecord is an agent's row of list nodes; it has a driver's fields too, empty.
func nodeRecord(n clusterstate.NodeStatus) record {
	role := "agent"
	if n.Head {
		role = "head"
	}
	return record{{"node_id", n.AgentID}, {"state", state(n.Alive)}, {"role", role}, {"head", n.Head}, {"host", n.Host},
		{"pid", n.Pid}, {"started", n.Started}, {"resources_total", n.Total}, {"resources_in_use", n.InUse},
		{"object_store_budget", n.ObjectStoreBudget}, {"object_store_used", n.ObjectStoreUsed}, {"worker_processes", n.Workers},
		{"job_id", ""}, {"last_heartbeat", ""}, {"silent_seconds", 0}, {"died", ""}, {"death_reason", ""}} // a driver's fields
}

// driverRecord is a driver's row of list nodes, with the fields of an agent's.
func driverRecord(d clusterstate.DriverStatus) record {
	return record{{"node_id", d.NodeID}, {"state", d.State}, {"role", "driver"}, {"head", false}, {"host", d.Host},
		{"pid", d.Pid}, {"started", d.Started}, {"resources_total", map[string]float64{}}, {"resources_in_use", map[string]float64{}},
		{"object_store_budget", d.ObjectStoreBudget}, {"object_store_used", d.ObjectStoreUsed}, {"worker_processes", 0},
		{"job_id", d.JobID}, {"last_heartbeat", d.LastHeartbeat}, {"silent_seconds", d.SilentSeconds}, {"died", d.Died}, {"death_reason", d.Reason}}
}

func readJobs(ctx context.Context, s gcs.Store) ([]record, error) {
	st, err := readStatus(ctx, s)
	if err != nil {
		return nil, err
	}
	var out []record
	for _, j := range st.Jobs {
		out = append(out, jobRecord(j))
	}
	return out, nil
}

func jobRecord(j clusterstate.JobStatus) record {
	return record{{"job_id", j.JobID}, {"state", j.State}, {"submission_id", j.SubmissionID},
		{"start", j.Start}, {"end", j.End}, {"driver", j.Driver}, {"driver_state", j.DriverState},
		{"driver_last_heartbeat", j.DriverLastHeartbeat}, {"driver_silent_seconds", j.DriverSilentSeconds},
		{"entrypoint", j.Entrypoint}, {"namespace", j.Namespace}, {"message", j.Message}}
}

func readActors(ctx context.Context, s gcs.Store) ([]record, error) {
	actors, err := clusterstate.ReadActors(ctx, s)
	if err != nil {
		return nil, err
	}
	out := make([]record, 0, len(actors))
	for _, a := range actors {
		out = append(out, actorRecord(a))
	}
	return out, nil
}

func actorRecord(a clusterstate.Actor) record {
	return record{{"actor_id", a.ActorID}, {"class", a.Class}, {"name", a.Name}, {"namespace", a.Namespace},
		{"state", a.State}, {"node", a.Node}, {"agent_id", a.AgentID}, {"job_id", a.JobID}, {"detached", a.Detached},
		{"restarts", a.Restarts}, {"max_restarts", a.MaxRestarts}, {"exactly_once", a.ExactlyOnce},
		{"resources", a.Resources}, {"detail", a.Detail}, {"start_time", a.StartTime}, {"end_time", a.EndTime},
		{"history", historyRecords(a.History)}}
}

// historyRecords are an actor's transitions as records (a list in JSON and YAML).
func historyRecords(h []clusterstate.ActorTransition) []record {
	out := make([]record, 0, len(h))
	for _, t := range h {
		r := record{{"state", t.State}, {"time", t.Time}, {"incarnation", t.Incarnation}, {"node", t.Node}}
		if t.Detail != "" {
			r = append(r, field{"detail", t.Detail})
		}
		out = append(out, r)
	}
	return out
}

func readPlacementGroups(ctx context.Context, s gcs.Store) ([]record, error) {
	groups, err := clusterstate.ReadPlacementGroups(ctx, s)
	if err != nil {
		return nil, err
	}
	out := make([]record, 0, len(groups))
	for _, g := range groups {
		out = append(out, groupRecord(g))
	}
	return out, nil
}

func groupRecord(g clusterstate.PlacementGroup) record {
	return record{{"placement_group_id", g.ID}, {"name", g.Name}, {"state", g.State}, {"strategy", g.Strategy},
		{"bundles", g.Bundles}, {"nodes", g.Nodes}, {"agent_ids", g.AgentIDs}, {"job_id", g.JobID}, {"created_unix_ms", g.Created}, {"detail", g.Detail}}
}

// version is what `rayctl --version` prints: the module version and the commit it was
// built from, as the Go toolchain recorded them.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev != "" {
		v += " (" + rev[:min(12, len(rev))] + dirty + ")"
	}
	return v + " " + bi.GoVersion
}
