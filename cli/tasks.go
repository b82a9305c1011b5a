package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/ray-go/ray/internal/assembly/agent"
	"github.com/ray-go/ray/internal/assembly/clusterstate"
	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/assembly/taskstate"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// Tasks in the state API: `rayctl list tasks`, `get task`, `summary tasks` and `timeline`.
// Tasks are not in the GCS while their processes run: each process of a job keeps the
// records of the tasks it submitted (internal/assembly/core, events.go) and answers a
// query put in the GCS (internal/assembly/taskstate); rayctl asks and merges. A process
// that stops cleanly leaves its records in the GCS (taskstate.Archive), which answer for
// it once it has exited: an ended job's tasks stay listed. Filters on the fields below are
// applied by the processes, so that `--limit 100` of a million tasks moves 100 records.

var taskColumns = []string{"task_id", "attempt", "name", "state", "job_id", "node", "started", "duration", "error"}

// pushed are the --filter fields the processes apply (with "="); the query field each sets.
var pushed = map[string]func(q *core.TaskQuery, job *string, v string){
	"state":   func(q *core.TaskQuery, _ *string, v string) { q.State = v },
	"name":    func(q *core.TaskQuery, _ *string, v string) { q.Function = v },
	"node":    func(q *core.TaskQuery, _ *string, v string) { q.Node = v },
	"task_id": func(q *core.TaskQuery, _ *string, v string) { q.TaskID = v },
	"job_id":  func(_ *core.TaskQuery, job *string, v string) { *job = v },
}

// gatherTasks asks the cluster's processes (those of job; every job's when "").
func gatherTasks(c *ucli.Context, job string, q core.TaskQuery) (*taskstate.Result, error) {
	store, addr, err := connect(c)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	ctx, cancel := context.WithTimeout(c.Context, 30*time.Second)
	defer cancel()
	res, err := taskstate.Gather(ctx, store, job, q, taskstate.Options{})
	if err != nil {
		return nil, exitf(ExitError, "read the tasks from %s: %v", strings.Join(addr, ","), err)
	}
	if len(res.Missing) > 0 {
		sort.Strings(res.Missing)
		fmt.Fprintf(c.App.ErrWriter, "rayctl: the processes of %d node(s) did not answer in time or are unreachable, their tasks are missing: %s\n",
			len(res.Missing), strings.Join(res.Missing, ", "))
	}
	if res.Dropped > 0 {
		fmt.Fprintf(c.App.ErrWriter, "rayctl: %d older task records were dropped by their processes (ray.WithTaskEvents raises the retention)\n", res.Dropped)
	}
	if job != "" && res.Processes == 0 && len(res.Missing) == 0 && len(res.Archived) == 0 {
		if state, end := endedJob(ctx, store, job); state != "" {
			fmt.Fprintf(c.App.ErrWriter, "rayctl: job %s ended (%s at %s) and its processes left no task records: a process keeps its records in memory and leaves them in the GCS when it stops cleanly (ray.Shutdown, the end of its job, or rayctl job stop), not when it is killed or crashes; and the GCS keeps those of the last %d jobs\n",
				job, state, end, taskstate.ArchivedJobs)
		}
	}
	return res, nil
}

// endedJob returns the state of job and when it ended, from its record, when it ended
// ("" when it runs, or its record cannot be read): no process is left to answer for it.
func endedJob(ctx context.Context, store gcs.Store, job string) (state, end string) {
	kv, found, err := store.Get(ctx, gcs.JobKey(job))
	if err != nil || !found {
		return "", ""
	}
	info, err := agent.DecodeJob(job, kv.Value)
	if err != nil || info.GetState() == pb.JobInfo_RUNNING || info.GetState() == pb.JobInfo_PENDING {
		return "", ""
	}
	return info.GetState().String(), clusterstate.FormatTime(info.GetEndUnixMs())
}

// resolveJob finds the job whose ID is job or starts with it (6 characters at least), and
// fails for a job the cluster has no record of (a typo wrote an empty trace).
func resolveJob(c *ucli.Context, job string) (string, error) {
	store, addr, err := connect(c)
	if err != nil {
		return "", err
	}
	defer store.Close()
	id, err := clusterstate.ResolveJob(c.Context, store, job)
	var amb *clusterstate.AmbiguousError
	switch {
	case errors.As(err, &amb):
		return "", exitf(ExitError, "%v", err)
	case err != nil:
		return "", exitf(ExitError, "read the jobs from %s: %v", strings.Join(addr, ","), err)
	case id == "":
		return "", exitf(ExitError, "no job %q in the cluster at %s (`rayctl list jobs` shows its jobs)", job, strings.Join(addr, ","))
	}
	return id, nil
}

func listTasks(c *ucli.Context, format string, filters []filter, limit int) error {
	var q core.TaskQuery
	job := ""
	var rest []filter
	for _, f := range filters {
		if set, ok := pushed[f.key]; ok && !f.neg {
			set(&q, &job, f.value)
			continue
		}
		if !hasTaskField(f.key) {
			return exitf(ExitError, "filter on %q: tasks have no such field; they have %s", f.key, strings.Join(taskFields(), ", "))
		}
		rest = append(rest, f)
	}
	if len(rest) == 0 {
		q.Limit = limit
	}
	res, err := gatherTasks(c, job, q)
	if err != nil {
		return err
	}
	recs := make([]record, len(res.Tasks))
	matched := make([]string, len(res.Tasks))
	for i := range res.Tasks {
		recs[i] = taskRecord(&res.Tasks[i])
		matched[i] = res.Tasks[i].TaskID
	}
	if q.TaskID != "" {
		// The processes matched a prefix: of one task, or say so.
		if err := checkMatchedIDs(taskIDs, "task_id", q.TaskID, matched, 2*ids.TaskIDLen); err != nil {
			return err
		}
	}
	return printFiltered(c, format, "tasks", taskColumns, recs, res.Total, rest, limit)
}

func getTask(c *ucli.Context, format, id string) error {
	if len(id) < 6 {
		return exitf(ExitError, "give at least 6 characters of the task ID, got %q", id)
	}
	res, err := gatherTasks(c, "", core.TaskQuery{TaskID: strings.ToLower(id)})
	if err != nil {
		return err
	}
	ids := map[string]bool{}
	for _, t := range res.Tasks {
		ids[t.TaskID] = true
	}
	switch len(ids) {
	case 0:
		return exitf(ExitError, "no task %q in the cluster (rayctl list tasks shows them)", id)
	case 1:
	default:
		return ambiguous("task", id, slices.Collect(maps.Keys(ids)))
	}
	// Every attempt, the newest first.
	recs := make([]record, len(res.Tasks))
	for i := range res.Tasks {
		recs[i] = taskRecord(&res.Tasks[i])
	}
	if format == "json" {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		if len(recs) == 1 {
			return enc.Encode(recs[0])
		}
		return enc.Encode(recs)
	}
	if len(recs) == 1 {
		return printYAML(c.App.Writer, recs[0], "")
	}
	return printRecords(c.App.Writer, "yaml", nil, recs)
}

func summarizeTasks(c *ucli.Context, format string) error {
	res, err := gatherTasks(c, "", core.TaskQuery{Summary: true, Limit: 1})
	if err != nil {
		return err
	}
	byFn := map[string]map[string]int{}
	for _, tc := range res.Summary {
		if byFn[tc.Function] == nil {
			byFn[tc.Function] = map[string]int{}
		}
		byFn[tc.Function][tc.State] += tc.Count
	}
	out := countTable("name", byFn)
	return printRecords(c.App.Writer, format, nil, out)
}

// timelineCount says how many task attempts a timeline drew (spans, and marks of the
// attempts that ended without running), and how many it did not (running or waiting: no
// span yet): "wrote 3 task attempts (1 failed or cancelled before it ran: a mark) (of 4:
// 1 still running or waiting, not drawn)".
func timelineCount(tasks []core.TaskEvent) string {
	drawn, marks := 0, 0
	for i := range tasks {
		switch {
		case taskstate.Drawn(&tasks[i]):
			drawn++
		case taskstate.NotRun(&tasks[i]):
			drawn++
			marks++
		}
	}
	s := fmt.Sprintf("wrote %d task attempt%s", drawn, plural(drawn))
	if marks == 1 {
		s += " (1 failed or was cancelled before it ran: a mark)"
	} else if marks > 1 {
		s += fmt.Sprintf(" (%d failed or were cancelled before they ran: marks)", marks)
	}
	if n := len(tasks) - drawn; n > 0 {
		s += fmt.Sprintf(" (of %d: %d still running or waiting, not drawn)", len(tasks), n)
	}
	return s
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func timelineCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "timeline",
		Usage: "write the tasks of a job (or of every job) as a Chrome trace for Perfetto or chrome://tracing (Ray's `ray timeline`)",
		Description: "A track per worker (more, named \"WORKER (2)\"..., for spans that would overlap others of its track without nesting: " +
			"a span's start is estimated), a span per task attempt that ran, a mark (on a \"not run\" track) per attempt that " +
			"failed or was cancelled before it ran, an arrow from a task to each task that took its result as an argument. " +
			"Open the file at https://ui.perfetto.dev or chrome://tracing.",
		Flags: append([]ucli.Flag{addressFlag(), namespaceFlag(), sessionDirFlag(),
			&ucli.StringFlag{Name: "job", Usage: "the job whose tasks to write (its ID, or at least 6 of its first characters; default: every job's)"},
			&ucli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "the `FILE` to write (default: ray-timeline-<time>.json here)"},
			&ucli.IntFlag{Name: "limit", Usage: "write at most this many task attempts, the newest (0: all)"},
		}, credentialFlags()...),
		Action: func(c *ucli.Context) error {
			if c.NArg() != 0 {
				return exitf(ExitError, "timeline takes no arguments: use --job ID and --output FILE")
			}
			if err := checkLimit(c); err != nil {
				return err
			}
			path := c.String("output")
			if path == "" {
				path = "ray-timeline-" + time.Now().UTC().Format("2006-01-02_15-04-05") + ".json"
			}
			job := c.String("job")
			if job != "" {
				var err error
				if job, err = resolveJob(c, job); err != nil {
					return err
				}
			}
			res, err := gatherTasks(c, job, core.TaskQuery{Edges: true, Limit: c.Int("limit")})
			if err != nil {
				return err
			}
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
			if err != nil {
				return exitf(ExitError, "timeline: %v", err)
			}
			if err := taskstate.WriteTimeline(f, &res.TaskReport); err != nil {
				f.Close()
				return exitf(ExitError, "timeline: write %s: %v", path, err)
			}
			if err := f.Close(); err != nil {
				return exitf(ExitError, "timeline: write %s: %v", path, err)
			}
			fmt.Fprintf(c.App.Writer, "%s from %d processes to %s; open it at https://ui.perfetto.dev or chrome://tracing\n",
				timelineCount(res.Tasks), res.Processes, path)
			return nil
		},
	}
}

func taskFields() []string {
	var out []string
	for _, f := range taskRecord(&core.TaskEvent{}) {
		out = append(out, f.k)
	}
	return out
}

func hasTaskField(k string) bool {
	for _, f := range taskFields() {
		if f == k {
			return true
		}
	}
	return false
}

func stamp(ns int64) string {
	if ns == 0 {
		return ""
	}
	return time.Unix(0, ns).UTC().Format("2006-01-02T15:04:05.000000Z")
}

// taskRecord is a task attempt as a record (Ray's field names where Ray has one).
func taskRecord(t *core.TaskEvent) record {
	typ := "NORMAL_TASK"
	if t.Actor {
		typ = "ACTOR_TASK"
	}
	dur := ""
	if t.Started != 0 && t.Ended >= t.Started {
		dur = time.Duration(t.Ended - t.Started).String()
	}
	return record{{"task_id", t.TaskID}, {"attempt", t.Attempt}, {"name", t.Function}, {"state", t.State},
		{"job_id", t.Job}, {"type", typ}, {"node", t.Node}, {"worker", t.Worker}, {"actor_incarnation", t.Incarnation}, {"owner_node", t.Owner},
		{"submitted", stamp(t.Submitted)}, {"args_ready", stamp(t.Ready)}, {"dispatched", stamp(t.Dispatched)},
		{"started", stamp(t.Started)}, {"ended", stamp(t.Ended)}, {"duration", dur},
		{"error_type", t.ErrorKind}, {"error", t.Error}, {"log_start", t.LogStart}, {"log_end", t.LogEnd}}
}
