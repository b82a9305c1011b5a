package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ray-go/ray/internal/assembly/agent"
	"github.com/ray-go/ray/internal/assembly/clusterstate"
	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/assembly/taskstate"
)

// Bounds of the API.
const (
	readTimeout  = 10 * time.Second // one request's reads of the GCS
	taskWait     = 5 * time.Second  // the wait for the processes' task answers
	defaultLimit = 500              // tasks returned when no limit is asked
	maxLimit     = 5000             // tasks returned at most
	maxLogBytes  = 256 << 10        // the end of a job's log that is returned
)

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	_ = enc.Encode(v)
}

func (d *Dashboard) fail(w http.ResponseWriter, what string, err error) {
	d.cfg.Logger.Warn("dashboard: "+what, "err", err)
	http.Error(w, "dashboard: "+what+": "+err.Error(), http.StatusBadGateway)
}

// apiCluster: the nodes, jobs and totals (rayctl status).
func (d *Dashboard) apiCluster(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	st, err := clusterstate.Read(ctx, d.cfg.Store)
	if err != nil {
		d.fail(w, "read the cluster state", err)
		return
	}
	st.Address = d.cfg.Address
	writeJSON(w, Overview{Status: st, Machines: d.machines.get()})
}

// Overview is the answer of /api/cluster: the cluster's state (rayctl status) and the
// machines of its agents as their metrics endpoints last said.
type Overview struct {
	*clusterstate.Status
	Machines map[string]Machine `json:"machines"`
}

// ActorList is the answer of /api/actors: one page of the actor table (rayctl list actors)
// of at most limit actors (default defaultActorLimit, 0 for maxLimit) that match filter (a
// substring of an ID, class, name, namespace, state, node, machine or job; case does not
// matter), the actors that are not dead first, each group by its latest change, newest
// first; Matched counts the actors that match, Total all of them and Dead the dead ones
// (the head keeps a bounded number of those: agent.Config.MaxDeadActors).
type ActorList struct {
	Actors  []clusterstate.Actor `json:"actors"`
	Matched int                  `json:"matched"`
	Total   int                  `json:"total"`
	Dead    int                  `json:"dead"`
}

// defaultActorLimit is how many actors /api/actors returns when no limit is asked.
const defaultActorLimit = 1000

// apiActors: a page of the actor table (ActorList).
func (d *Dashboard) apiActors(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	limit := defaultActorLimit
	if v.Get("limit") != "" {
		var err error
		if limit, err = parseLimit(v.Get("limit")); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	filter := strings.ToLower(strings.TrimSpace(v.Get("filter")))
	if len(filter) > 256 {
		http.Error(w, "filter: too long", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	actors, err := clusterstate.ReadActors(ctx, d.cfg.Store)
	if err != nil {
		d.fail(w, "read the actors", err)
		return
	}
	writeJSON(w, pageActors(actors, filter, limit))
}

// pageActors makes the ActorList of actors: those that match filter (lowercase), the live
// ones first, newest change first, at most limit.
func pageActors(actors []clusterstate.Actor, filter string, limit int) ActorList {
	out := ActorList{Actors: []clusterstate.Actor{}, Total: len(actors)}
	matched := make([]clusterstate.Actor, 0, min(len(actors), limit))
	for _, a := range actors {
		if a.State == "DEAD" {
			out.Dead++
		}
		if filter != "" && !strings.Contains(strings.ToLower(strings.Join([]string{a.ActorID, a.Class, a.Name, a.Namespace, a.State, a.Node, a.AgentID, a.JobID}, "\x00")), filter) {
			continue
		}
		matched = append(matched, a)
	}
	out.Matched = len(matched)
	latest := func(a *clusterstate.Actor) int64 {
		if len(a.History) == 0 {
			return 0
		}
		return a.History[len(a.History)-1].UnixMs
	}
	sort.SliceStable(matched, func(i, j int) bool {
		di, dj := matched[i].State == "DEAD", matched[j].State == "DEAD"
		if di != dj {
			return dj
		}
		return latest(&matched[i]) > latest(&matched[j])
	})
	out.Actors = append(out.Actors, matched[:min(len(matched), limit)]...)
	return out
}

// taskQuery reads the filters of /api/tasks and /api/timeline: those the processes apply,
// as rayctl list tasks pushes them (job, state, name, node, task_id), and limit.
func taskQuery(r *http.Request) (job string, q core.TaskQuery, err error) {
	v := r.URL.Query()
	for _, k := range []string{"job", "state", "name", "node", "task_id"} {
		if x := v.Get(k); len(x) > 256 || strings.ContainsAny(x, "/\x00\n") {
			return "", q, badRequest(k + ": too long, or has '/' or a control character")
		}
	}
	q = core.TaskQuery{State: v.Get("state"), Function: v.Get("name"), Node: v.Get("node"), TaskID: strings.ToLower(v.Get("task_id"))}
	if q.Limit, err = parseLimit(v.Get("limit")); err != nil {
		return "", q, err
	}
	return v.Get("job"), q, nil
}

// parseLimit reads a limit parameter: defaultLimit when absent, 0 for all (as rayctl's
// --limit 0), and never more than maxLimit, the most one answer holds.
func parseLimit(s string) (int, error) {
	if s == "" {
		return defaultLimit, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, errBadLimit
	}
	if n == 0 {
		return maxLimit, nil
	}
	return min(n, maxLimit), nil
}

type badRequest string

func (e badRequest) Error() string { return string(e) }

const errBadLimit = badRequest("limit: want a number, 0 for all (at most 5000 are returned)")

// TaskList is the answer of /api/tasks: the newest matching task attempts (Limit) and
// how many matched, with the processes that did not answer in time.
type TaskList struct {
	Tasks     []core.TaskEvent `json:"tasks"`
	Total     int              `json:"total"`
	Dropped   int64            `json:"dropped"`
	Processes int              `json:"processes"`
	Missing   []string         `json:"missing"`
	Now       int64            `json:"now"` // unix ns, for the timeline's open spans
}

// resolveJob turns the job filter (its ID, or at least 6 of its first characters, as rayctl
// takes them: clusterstate.ResolveJob) into the job's ID; a prefix of several jobs is a
// 400 naming them. An ID no job has is kept (nothing matches it).
func (d *Dashboard) resolveJob(ctx context.Context, w http.ResponseWriter, job string) (string, bool) {
	if job == "" {
		return "", true
	}
	id, err := clusterstate.ResolveJob(ctx, d.cfg.Store, job)
	var amb *clusterstate.AmbiguousError
	switch {
	case errors.As(err, &amb):
		http.Error(w, "job: "+err.Error(), http.StatusBadRequest)
		return "", false
	case err != nil:
		d.fail(w, "read the jobs", err)
		return "", false
	case id == "":
		return job, true
	}
	return id, true
}

func (d *Dashboard) gather(w http.ResponseWriter, r *http.Request, edges bool) (res *taskstate.Result, ok bool) {
	job, q, err := taskQuery(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, false
	}
	q.Edges = edges
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	if job, ok = d.resolveJob(ctx, w, job); !ok {
		return nil, false
	}
	res, err = taskstate.Gather(ctx, d.cfg.Store, job, q, taskstate.Options{Wait: taskWait})
	if err != nil {
		d.fail(w, "gather the tasks", err)
		return nil, false
	}
	return res, true
}

// apiTasks: the tasks (rayctl list tasks), asked of their owners.
func (d *Dashboard) apiTasks(w http.ResponseWriter, r *http.Request) {
	res, ok := d.gather(w, r, false)
	if !ok {
		return
	}
	out := TaskList{Tasks: res.Tasks, Total: res.Total, Dropped: res.Dropped, Processes: res.Processes, Missing: res.Missing,
		Now: time.Now().UnixNano()}
	if out.Tasks == nil {
		out.Tasks = []core.TaskEvent{}
	}
	if out.Missing == nil {
		out.Missing = []string{}
	}
	writeJSON(w, out)
}

// ObjectList is the answer of /api/objects: the objects the job's processes own (by ID,
// at most Limit), how many matched, the summary by state and reference type, and the
// processes that did not answer in time.
type ObjectList struct {
	Objects   []core.ObjectInfo  `json:"objects"`
	Total     int                `json:"total"`
	Summary   []core.ObjectCount `json:"summary"`
	Processes int                `json:"processes"`
	Missing   []string           `json:"missing"`
}

// apiObjects: the objects (rayctl list objects, rayctl memory), asked of their owners;
// filters job, state, reference_type, object_id and limit, as rayctl pushes them.
func (d *Dashboard) apiObjects(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	for _, k := range []string{"job", "state", "reference_type", "object_id"} {
		if x := v.Get(k); len(x) > 256 || strings.ContainsAny(x, "/\x00\n") {
			http.Error(w, k+": too long, or has '/' or a control character", http.StatusBadRequest)
			return
		}
	}
	q := core.ObjectQuery{State: v.Get("state"), RefType: v.Get("reference_type"), ObjectID: strings.ToLower(v.Get("object_id")),
		Summary: true}
	var err error
	if q.Limit, err = parseLimit(v.Get("limit")); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	job, ok := d.resolveJob(ctx, w, v.Get("job"))
	if !ok {
		return
	}
	res, err := taskstate.GatherObjects(ctx, d.cfg.Store, job, q, taskstate.Options{Wait: taskWait})
	if err != nil {
		d.fail(w, "gather the objects", err)
		return
	}
	out := ObjectList{Objects: res.Objects, Total: res.Total, Summary: res.Summary, Processes: res.Processes, Missing: res.Missing}
	if out.Objects == nil {
		out.Objects = []core.ObjectInfo{}
	}
	if out.Summary == nil {
		out.Summary = []core.ObjectCount{}
	}
	if out.Missing == nil {
		out.Missing = []string{}
	}
	writeJSON(w, out)
}

// apiTimeline: the tasks as a Chrome trace (rayctl timeline), a download for Perfetto.
func (d *Dashboard) apiTimeline(w http.ResponseWriter, r *http.Request) {
	res, ok := d.gather(w, r, true)
	if !ok {
		return
	}
	var b bytes.Buffer
	if err := taskstate.WriteTimeline(&b, &res.TaskReport); err != nil {
		d.fail(w, "write the timeline", err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", `attachment; filename="ray-timeline-`+time.Now().UTC().Format("2006-01-02_15-04-05")+`.json"`)
	_, _ = w.Write(b.Bytes())
}

// tailWriter keeps the last n bytes written.
type tailWriter struct {
	n   int
	buf []byte
	cut bool
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.n {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.n:]...)
		t.cut = true
	}
	return len(p), nil
}

func (t *tailWriter) bytes() []byte {
	if len(t.buf) > t.n {
		t.cut = true
		return t.buf[len(t.buf)-t.n:]
	}
	return t.buf
}

// apiLogs: the end of a submitted job's output (rayctl job logs), as the GCS holds it.
func (d *Dashboard) apiLogs(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("submission")
	if id == "" || len(id) > 128 || strings.ContainsAny(id, "/ \t\n") {
		http.Error(w, "bad submission ID", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	// Its ID or its job's, or at least 6 of the first characters of either (as rayctl job logs).
	sid, err := clusterstate.ResolveSubmission(ctx, d.cfg.Store, id)
	var amb *clusterstate.AmbiguousError
	switch {
	case errors.As(err, &amb):
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	case err != nil:
		d.fail(w, "read the submissions", err)
		return
	case sid != "":
		id = sid
	}
	if _, err := agent.GetSubmission(ctx, d.cfg.Store, id); errors.Is(err, agent.ErrNoSubmission) {
		http.Error(w, "no submission "+strconv.Quote(id)+" in this cluster", http.StatusNotFound)
		return
	} else if err != nil {
		d.fail(w, "read the submission", err)
		return
	}
	t := &tailWriter{n: maxLogBytes}
	if _, err := agent.ReadLog(ctx, d.cfg.Store, id, t, false); err != nil {
		d.fail(w, "read the job's log", err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	b := t.bytes()
	if t.cut {
		_, _ = w.Write([]byte("[... the start is cut: the last " + strconv.Itoa(maxLogBytes>>10) + " KiB follow; rayctl job logs prints all ...]\n"))
	}
	_, _ = w.Write(b)
}

// Samples is the answer of /api/metrics.
type Samples struct {
	IntervalMs int64    `json:"interval_ms"`
	WindowMs   int64    `json:"window_ms"`
	Samples    []Sample `json:"samples"`
}

// apiMetrics: the charts' samples, oldest first (memory only: no slot needed).
func (d *Dashboard) apiMetrics(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, Samples{IntervalMs: d.cfg.SampleEvery.Milliseconds(), WindowMs: d.cfg.Window.Milliseconds(), Samples: d.samples.samples()})
}
