package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os/signal"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/ray-go/ray/internal/assembly/agent"
	"github.com/ray-go/ray/internal/assembly/clusterstate"
	"github.com/ray-go/ray/internal/assembly/clusterview"
	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/assembly/taskstate"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/pb"
)

// `rayctl logs` (Ray's `ray logs`): the output of the worker process that ran a task or
// hosts an actor, of a worker process named by its node ID or pid, or of a submitted job's
// driver. A task or actor is resolved to its worker process through the state API (the
// task's record names the node it ran on; the actor table the actor's) and the node table
// or the jobworkers/ records (node → agent, job, pid); the agent that started the process
// serves the log (agent.ReadWorkerLog: a request through the GCS, so the cluster's
// credentials are needed, and the agent builds the file's path from its session directory
// and the job ID). A job's driver output is already in the GCS (agent.ReadLog).
//
// A worker process runs many tasks of its job, one after another and side by side, into
// one log. The worker records where each task's (and actor call's) output starts and ends
// there (TaskResult.log_start, log_end: the log file's size before and after the body ran,
// core.TaskEvent.LogStart/LogEnd), so `logs task` of a task that ended shows that range
// only. Tasks that ran at the same time in that process wrote into the same range: their
// lines are shown too (as Ray shows the worker's lines between a task's markers). A task
// still running (or a process that kept no offsets) shows the whole log of its process.
//
// An actor call's range is its output and, for a call that ran under worker.LogReadMin, that
// of the calls its actor ran with it since the log's end was last read (the actor's
// executor reads it once per batch of results it sends, not per call). A call's node is
// its actor's incarnation's that ran it (core.TaskEvent.Incarnation): after a restart on
// another node, an earlier call's output is still read from the process it ran in.
// `logs actor ID --calls N` splits an actor's output per call: the ranges of its newest N
// calls (core.TaskQuery.Worker: the actor's ID), each once, under a line naming the calls
// in it, without what the job's other tasks wrote into the same process's log in between.

// logFollowEvery is how often --follow asks for new output.
const logFollowEvery = 250 * time.Millisecond

func logsCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "logs",
		Usage:     "print the log of a task's or an actor's worker process, of a worker process, or of a submitted job, from whichever node has it (Ray's `ray logs`)",
		ArgsUsage: "task TASK_ID | actor ACTOR_ID|CALL_TASK_ID | worker NODE_ID|PID | job JOB_OR_SUBMISSION_ID",
		Description: "task: the output of a task or actor call (its newest attempt) that ended: the part of its worker " +
			"process's log it wrote while it ran (the lines of other tasks that ran at the same time in that process " +
			"included); of a task still running, its worker process's whole log. actor: the log of the worker process " +
			"that hosts the actor (of a DEAD actor: that it last ran in), which holds every task of its job that ran there; given the task ID of one of an actor's " +
			"calls (rayctl list tasks --filter type=ACTOR_TASK), that call's output, as task; with --calls N, the output of its " +
			"newest N calls, each under a line naming it. worker: a worker process by " +
			"its node ID (the node column of `rayctl list tasks`, 6 characters will do) or by its pid (with --node " +
			"when several nodes have one). job: a submitted driver's output (rayctl job logs). IDs may be cut to 6 " +
			"characters. The agent of the node serves the log to holders of the cluster's credentials. Exit codes: 0 " +
			"ok, 1 unknown ID or usage, 5 the node's agent is not running (the log stays on its machine), and those of " +
			"every command that reaches the cluster (4, 8).",
		Flags: append([]ucli.Flag{addressFlag(), namespaceFlag(), sessionDirFlag(),
			&ucli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing new output until the process (or job) ends; Ctrl-C stops"},
			&ucli.IntFlag{Name: "tail", Usage: "print the last N lines first (-1: the whole log; 0: none, with --follow)", Value: 1000},
			&ucli.StringFlag{Name: "node", Usage: "worker: the node (agent ID, 6 characters of it, or host name) of the process with that pid"},
			&ucli.IntFlag{Name: "calls", Usage: "actor: print the output of its newest N calls that ended, oldest first, each under a line naming the call (calls whose ranges are one are named together), instead of its process's log"},
		}, credentialFlags()...),
		Action: runLogs,
	}
}

func runLogs(c *ucli.Context) error {
	if c.NArg() != 2 {
		return exitf(ExitError, "logs takes what and an ID: rayctl logs task|actor|worker|job ID")
	}
	what, id := c.Args().Get(0), c.Args().Get(1)
	if c.String("node") != "" && what != "worker" {
		return exitf(ExitError, "--node is for `rayctl logs worker PID`; a %s's node is found from its ID", what)
	}
	if c.IsSet("calls") && (what != "actor" || c.Int("calls") <= 0 || c.Bool("follow")) {
		return exitf(ExitError, "--calls N (N > 0) is for `rayctl logs actor ID`, without --follow")
	}
	store, _, err := connect(c)
	if err != nil {
		return err
	}
	defer store.Close()
	ctx, stop := signal.NotifyContext(c.Context, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var t *logTarget
	switch what {
	case "job":
		return jobLogs(c, ctx, store, id)
	case "task":
		t, err = taskTarget(c.Context, store, id)
	case "actor":
		if n := c.Int("calls"); n > 0 {
			a, err := findActor(c.Context, store, id)
			if err != nil {
				return err
			}
			return actorCalls(ctx, store, c.App.Writer, c.App.ErrWriter, a, n)
		}
		t, err = actorTarget(c.Context, store, id)
	case "worker":
		t, err = workerTarget(c.Context, store, id, c.String("node"))
	default:
		return exitf(ExitError, "cannot show the logs of %q: use task, actor, worker or job", what)
	}
	if err != nil {
		return err
	}
	if err := t.checkAlive(c.Context, store); err != nil {
		return err
	}
	err = t.print(ctx, store, c.App.Writer, c.App.ErrWriter, c.Int("tail"), c.Bool("follow"))
	if ctx.Err() != nil && c.Context.Err() == nil {
		return nil // Ctrl-C ends a follow
	}
	return err
}

// logTarget is a worker process whose log to print.
type logTarget struct {
	desc  string // what it is, for messages: "task 3f2a... (attempt 0)"
	agent string // the agent that started it
	job   string
	pid   int32  // 0: not known
	node  string // its node ID ("" not known)
	host  string // the agent's host ("" not known)
	path  string // its log file, on host ("" not known)
	self  bool   // desc names the process itself (logs worker)
	// dead, when set, says the target (a dead actor: "actor ... is DEAD") no longer runs
	// in the process: its log is that of the process it last ran in, and a log that is not
	// there is gone, not yet to come.
	dead string
	// span: only [from, to) of the log is the target's (a task's output)
	span     bool
	from, to int64
}

func (t *logTarget) where() string {
	s := fmt.Sprintf("worker process of job %s on agent %s", t.job, t.agent)
	if t.pid != 0 {
		s = fmt.Sprintf("worker process %d of job %s on agent %s", t.pid, t.job, t.agent)
	}
	if t.host != "" {
		s += " (" + t.host + ")"
	}
	return s
}

// checkAlive fails with ExitNothingRunning when the target's agent is not running.
func (t *logTarget) checkAlive(ctx context.Context, store gcs.Store) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if kv, found, err := store.Get(cctx, gcs.AgentKey(t.agent)); err == nil && found {
		if info, err := agent.DecodeAgentInfo(t.agent, kv.Value); err == nil {
			t.host = info.GetHostname()
			if t.path == "" && info.GetSessionDir() != "" {
				t.path = agent.WorkerLogPath(info.GetSessionDir(), t.job)
			}
		}
	}
	_, alive, err := store.Get(cctx, gcs.AgentAliveKey(t.agent))
	if err != nil {
		return exitf(ExitError, "read the agents: %v", err)
	}
	if !alive {
		where := ""
		if t.path != "" {
			where = fmt.Sprintf(": its log stays in %s on %s", t.path, dash(t.host))
		}
		if t.self {
			return exitf(ExitNothingRunning, "the %s is gone with its agent, which is not running%s", t.where(), where)
		}
		return exitf(ExitNothingRunning, "%s ran in the %s, whose agent is not running%s", t.desc, t.where(), where)
	}
	return nil
}

// read asks the target's agent for a piece of its log.
func (t *logTarget) read(ctx context.Context, store gcs.Store, req agent.LogRequest) (*agent.LogReply, error) {
	req.Agent, req.Job = t.agent, t.job
	rep, err := agent.ReadWorkerLog(ctx, store, req, 10*time.Second)
	if errors.Is(err, agent.ErrNoLogAnswer) {
		return nil, exitf(ExitNothingRunning, "the agent %s did not answer for the %s's log within 10 s (is it running? rayctl status): %v", t.agent, t.desc, err)
	}
	if err != nil {
		return nil, exitf(ExitError, "read the log of the %s: %v", t.where(), err)
	}
	if rep.Err != "" {
		return nil, exitf(ExitError, "agent %s could not read the log of the %s: %s", t.agent, t.where(), rep.Err)
	}
	return rep, nil
}

// print writes the last tail lines of the log (every line when tail < 0) and, with
// follow, what the process writes next until it ends.
func (t *logTarget) print(ctx context.Context, store gcs.Store, w, errw io.Writer, tail int, follow bool) error {
	if t.span {
		if err := t.printSpan(ctx, store, w, errw, tail); err != nil {
			return err
		}
		if follow {
			fmt.Fprintf(errw, "rayctl: the %s ended: that is all its output (rayctl logs worker %s --follow follows its process)\n", t.desc, dash(t.node))
		}
		return nil
	}
	if t.dead != "" {
		fmt.Fprintf(errw, "rayctl: the %s; the log of the %s, where it last ran, follows\n", t.dead, t.where())
	}
	var off int64
	switch {
	case tail > 0:
		rep, err := t.read(ctx, store, agent.LogRequest{Tail: tail})
		if err != nil {
			return err
		}
		switch {
		case !rep.Found && t.dead != "":
			return exitf(ExitError, "the %s, and the log of the %s where it last ran (%s) is gone", t.dead, t.where(), dash(rep.Path))
		case !rep.Found && !follow:
			fmt.Fprintf(errw, "rayctl: the %s has no log yet\n", t.where())
		}
		if rep.Truncated {
			fmt.Fprintf(errw, "rayctl: fewer than %d lines in the last %d bytes of %s: showing those bytes\n", tail, agent.LogReadMax, rep.Path)
		}
		if _, err := w.Write(rep.Data); err != nil {
			return err
		}
		off = rep.Offset + int64(len(rep.Data))
	case tail < 0:
		for {
			rep, err := t.read(ctx, store, agent.LogRequest{Offset: off})
			if err != nil {
				return err
			}
			if !rep.Found && t.dead != "" {
				return exitf(ExitError, "the %s, and the log of the %s where it last ran (%s) is gone", t.dead, t.where(), dash(rep.Path))
			}
			if _, err := w.Write(rep.Data); err != nil {
				return err
			}
			off = rep.Offset + int64(len(rep.Data))
			if len(rep.Data) == 0 || off >= rep.Size {
				break
			}
		}
	default:
		rep, err := t.read(ctx, store, agent.LogRequest{Offset: 1 << 62})
		if err != nil {
			return err
		}
		off = rep.Size
	}
	if !follow {
		return nil
	}
	return t.follow(ctx, store, w, errw, off)
}

// printSpan prints the last tail lines (every line when tail < 0) of the target's span of
// its log.
func (t *logTarget) printSpan(ctx context.Context, store gcs.Store, w, errw io.Writer, tail int) error {
	if t.to == t.from {
		fmt.Fprintf(errw, "rayctl: the %s wrote nothing to the log (of the %s)\n", t.desc, t.where())
		return nil
	}
	if tail == 0 {
		return nil
	}
	from := t.from
	if tail > 0 {
		from = max(from, t.to-agent.LogReadMax) // the tail is in the span's last bytes
	}
	var buf []byte
	for off := from; off < t.to; {
		rep, err := t.read(ctx, store, agent.LogRequest{Offset: off, Max: int(min(t.to-off, agent.LogReadMax))})
		if err != nil {
			return err
		}
		if rep.Size < t.to {
			fmt.Fprintf(errw, "rayctl: %s has %d bytes, fewer than the %d the %s's output ends at: it was truncated or replaced\n",
				dash(rep.Path), rep.Size, t.to, t.desc)
		}
		if len(rep.Data) == 0 {
			break
		}
		if tail > 0 {
			buf = append(buf, rep.Data...)
		} else if _, err := w.Write(rep.Data); err != nil {
			return err
		}
		off = rep.Offset + int64(len(rep.Data))
	}
	if tail > 0 {
		start, truncated := agent.TailStart(buf, tail, from == t.from)
		if truncated {
			fmt.Fprintf(errw, "rayctl: fewer than %d lines in the last %d bytes of the %s's output: showing those bytes\n", tail, agent.LogReadMax, t.desc)
		}
		if _, err := w.Write(buf[start:]); err != nil {
			return err
		}
	}
	return nil
}

// follow prints what the log gains from off until the process ends (its jobworkers/
// record says EXITED, or names another pid: a restart), its agent stops, or ctx is done.
func (t *logTarget) follow(ctx context.Context, store gcs.Store, w, errw io.Writer, off int64) error {
	ended := false
	lastCheck := time.Time{}
	for {
		rep, err := t.read(ctx, store, agent.LogRequest{Offset: off})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if rep.Size < off {
			fmt.Fprintf(errw, "rayctl: %s was truncated or replaced; reading it from the start\n", rep.Path)
			off = 0
			continue
		}
		if _, err := w.Write(rep.Data); err != nil {
			return err
		}
		off = rep.Offset + int64(len(rep.Data))
		if len(rep.Data) == agent.LogReadMax {
			continue // more is there
		}
		if ended {
			fmt.Fprintf(errw, "rayctl: the %s ended\n", t.where())
			return nil
		}
		if time.Since(lastCheck) >= time.Second {
			lastCheck = time.Now()
			if ended, err = t.ended(ctx, store); err != nil {
				return err
			}
			if ended {
				continue // read what it wrote last, then stop
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(logFollowEvery):
		}
	}
}

// ended reports whether the target's process ended; its agent not running is an error.
func (t *logTarget) ended(ctx context.Context, store gcs.Store) (bool, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, alive, err := store.Get(cctx, gcs.AgentAliveKey(t.agent)); err == nil && !alive {
		return false, exitf(ExitNothingRunning, "the agent %s of the %s stopped", t.agent, t.where())
	}
	kv, found, err := store.Get(cctx, gcs.JobWorkerKey(t.job, t.agent))
	if err != nil || !found {
		return err == nil, nil // no record: the job is gone
	}
	rec, err := pb.DecodeJobWorker(t.job, t.agent, kv.Value)
	if err != nil {
		return false, nil
	}
	if t.pid == 0 {
		t.pid = rec.GetPid()
	}
	st := rec.GetState()
	return st == pb.JobWorker_EXITED || st == pb.JobWorker_UNSUPPORTED || (rec.GetPid() != 0 && rec.GetPid() != t.pid), nil
}

// idMatches: got is want, or starts with it and want has at least 6 characters.
func idMatches(got, want string) bool {
	return got == want || (len(want) >= 6 && strings.HasPrefix(got, want))
}

// readWorkerRecs reads the jobworkers/ records and the node table.
func readWorkerRecs(ctx context.Context, store gcs.Store) ([]*pb.JobWorker, []*pb.NodeInfo, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	kvs, _, err := store.List(cctx, gcs.JobWorkersPrefix)
	if err != nil {
		return nil, nil, exitf(ExitError, "read the worker processes: %v", err)
	}
	var ws []*pb.JobWorker
	for _, kv := range kvs {
		rest, _ := gcs.TrimKey(gcs.JobWorkersPrefix, kv.Key)
		job, ag, ok := strings.Cut(rest, "/")
		if !ok {
			continue
		}
		if w, err := pb.DecodeJobWorker(job, ag, kv.Value); err == nil && w.GetJobId() == job && w.GetAgentId() == ag {
			ws = append(ws, w)
		}
	}
	nkvs, _, err := store.List(cctx, gcs.NodesPrefix)
	if err != nil {
		return nil, nil, exitf(ExitError, "read the nodes: %v", err)
	}
	var ns []*pb.NodeInfo
	for _, kv := range nkvs {
		id, _ := gcs.TrimKey(gcs.NodesPrefix, kv.Key)
		if n, err := clusterview.DecodeNode(id, kv.Value); err == nil {
			ns = append(ns, n)
		}
	}
	return ws, ns, nil
}

// nodeTarget finds the worker process whose node ID is node (or starts with it).
func nodeTarget(ctx context.Context, store gcs.Store, node, desc string) (*logTarget, error) {
	ws, ns, err := readWorkerRecs(ctx, store)
	if err != nil {
		return nil, err
	}
	found := map[string]*logTarget{}
	for _, n := range ns {
		if !idMatches(n.GetNodeId(), node) {
			continue
		}
		switch n.GetRole() {
		case "worker":
			found[n.GetNodeId()] = &logTarget{desc: desc, agent: n.GetAgentId(), job: n.GetJobId(), pid: n.GetPid(), node: n.GetNodeId(), host: n.GetHostname()}
		case "local":
			return nil, exitf(ExitError, "%s ran in a local-mode program (ray.Init without an address, pid %d on %s): its output is that program's own",
				desc, n.GetPid(), n.GetHostname())
		default:
			return nil, exitf(ExitError, "node %s is a %s (pid %d on %s), not a worker process an agent started: its output is that program's own",
				n.GetNodeId(), dash(n.GetRole()), n.GetPid(), n.GetHostname())
		}
	}
	for _, w := range ws {
		if w.GetNodeId() == "" || !idMatches(w.GetNodeId(), node) {
			continue
		}
		t := found[w.GetNodeId()]
		if t == nil {
			// Its node record went (the process ended); the agent's record remains.
			t = &logTarget{desc: desc, agent: w.GetAgentId(), job: w.GetJobId(), pid: w.GetPid(), node: w.GetNodeId()}
			found[w.GetNodeId()] = t
		}
		t.path = w.GetLogPath()
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		for _, t := range found {
			return t, nil
		}
	}
	return nil, ambiguous("node", node, slices.Collect(maps.Keys(found)))
}

func taskTarget(ctx context.Context, store gcs.Store, id string) (*logTarget, error) {
	if len(id) < 6 {
		return nil, exitf(ExitError, "give at least 6 characters of the task ID, got %q", id)
	}
	gctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := taskstate.Gather(gctx, store, "", core.TaskQuery{TaskID: strings.ToLower(id)}, taskstate.Options{})
	if err != nil {
		return nil, exitf(ExitError, "read the tasks: %v", err)
	}
	seen := map[string]bool{}
	for _, ev := range res.Tasks {
		seen[ev.TaskID] = true
	}
	switch {
	case len(seen) == 0 && len(res.Missing) > 0:
		return nil, exitf(ExitError, "no task %q among the processes that answered (%d did not: %s)", id, len(res.Missing), strings.Join(res.Missing, ", "))
	case len(seen) == 0:
		return nil, exitf(ExitError, "no task %q in the cluster (rayctl list tasks shows them; a task's record lives as long as the process that submitted it)", id)
	case len(seen) > 1:
		return nil, ambiguous("task", id, slices.Collect(maps.Keys(seen)))
	}
	core.SortNewest(res.Tasks)
	var ev *core.TaskEvent
	for i := range res.Tasks {
		if res.Tasks[i].Node != "" {
			ev = &res.Tasks[i]
			break
		}
	}
	if ev == nil {
		t0 := res.Tasks[0]
		if t0.Actor && t0.Worker != "" && t0.Ended == 0 {
			return actorTarget(ctx, store, t0.Worker) // not run yet: its actor's process now
		}
		if t0.Actor && t0.Worker != "" {
			// It ran on an incarnation whose node its owner no longer knows (the actor
			// restarted since): the actor's process now is not where its output is.
			return nil, exitf(ExitError, "actor call %s (%s) ran on incarnation %d of actor %s, whose node is no longer known (rayctl logs actor %s shows its process now)",
				t0.TaskID, t0.Function, t0.Incarnation, t0.Worker, t0.Worker)
		}
		return nil, exitf(ExitError, "task %s (%s) has not run on a node yet: it is %s", t0.TaskID, t0.Function, t0.State)
	}
	desc := fmt.Sprintf("task %s (%s, attempt %d)", ev.TaskID, ev.Function, ev.Attempt)
	t, err := nodeTarget(ctx, store, ev.Node, desc)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, exitf(ExitError, "%s ran on node %s, which the cluster no longer knows", desc, ev.Node)
	}
	if ev.LogEnd > 0 && ev.LogEnd >= ev.LogStart {
		t.span, t.from, t.to = true, ev.LogStart, ev.LogEnd
	}
	return t, nil
}

// findActor finds the actor whose ID is id (or starts with it).
func findActor(ctx context.Context, store gcs.Store, id string) (clusterstate.Actor, error) {
	found, err := matchActors(ctx, store, id)
	if err != nil {
		return clusterstate.Actor{}, err
	}
	switch len(found) {
	case 0:
		return clusterstate.Actor{}, exitf(ExitError, "no actor %q in the cluster (rayctl list actors shows them)", id)
	case 1:
		return found[0], nil
	}
	return clusterstate.Actor{}, exitf(ExitError, "%q is the start of %d actor IDs: give more of it", id, len(found))
}

func matchActors(ctx context.Context, store gcs.Store, id string) ([]clusterstate.Actor, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	actors, err := clusterstate.ReadActors(cctx, store)
	if err != nil {
		return nil, exitf(ExitError, "read the actors: %v", err)
	}
	ids := make([]string, len(actors))
	for i, a := range actors {
		ids[i] = a.ActorID
	}
	m, err := matchID("actor", ids, id)
	if err != nil || m == "" {
		return nil, err
	}
	return []clusterstate.Actor{actors[slices.Index(ids, m)]}, nil
}

// actorCalls prints the output of actor a's newest n calls that ended, oldest first: each
// range of a worker process's log once, under a line naming the calls it holds (short calls
// sent back in one batch share one), read from the process of the incarnation that ran
// them. A call whose range or node is not known is named on a line of its own.
func actorCalls(ctx context.Context, store gcs.Store, w, errw io.Writer, a clusterstate.Actor, n int) error {
	gctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := taskstate.Gather(gctx, store, "", core.TaskQuery{Worker: a.ActorID, Limit: n}, taskstate.Options{})
	if err != nil {
		return exitf(ExitError, "read the calls of actor %s: %v", a.ActorID, err)
	}
	if len(res.Missing) > 0 {
		fmt.Fprintf(errw, "rayctl: the processes of %d node(s) did not answer in time or are unreachable, their calls are missing: %s\n", len(res.Missing), strings.Join(res.Missing, ", "))
	}
	type span struct {
		node     string
		from, to int64
		calls    []string
	}
	var spans []*span
	for i := len(res.Tasks) - 1; i >= 0; i-- { // oldest first
		ev := &res.Tasks[i]
		if ev.Ended == 0 {
			continue
		}
		name := fmt.Sprintf("call %s (%s, incarnation %d, %s)", ev.TaskID, ev.Function, ev.Incarnation, ev.State)
		if ev.Node == "" || ev.LogEnd == 0 || ev.LogEnd < ev.LogStart {
			fmt.Fprintf(w, "--- %s: its output's place is not known ---\n", name)
			continue
		}
		if k := len(spans); k > 0 && spans[k-1].node == ev.Node && spans[k-1].from == ev.LogStart && spans[k-1].to == ev.LogEnd {
			spans[k-1].calls = append(spans[k-1].calls, name)
			continue
		}
		spans = append(spans, &span{node: ev.Node, from: ev.LogStart, to: ev.LogEnd, calls: []string{name}})
	}
	targets := map[string]*logTarget{}
	for _, sp := range spans {
		t := targets[sp.node]
		if t == nil {
			desc := fmt.Sprintf("actor %s (%s)", a.ActorID, a.Class)
			if t, err = nodeTarget(ctx, store, sp.node, desc); err != nil {
				return err
			}
			if t == nil {
				fmt.Fprintf(w, "--- %s: ran on node %s, which the cluster no longer knows ---\n", strings.Join(sp.calls, ", "), sp.node)
				continue
			}
			if err := t.checkAlive(ctx, store); err != nil {
				return err
			}
			targets[sp.node] = t
		}
		fmt.Fprintf(w, "--- %s ---\n", strings.Join(sp.calls, ", "))
		t.desc = callsDesc(sp.calls) // what printSpan names: these calls, not the actor
		t.span, t.from, t.to = true, sp.from, sp.to
		if err := t.printSpan(ctx, store, w, errw, -1); err != nil {
			return err
		}
	}
	return nil
}

// callsDesc names the calls of one range of a log ("call 3f2a... (C.Add, incarnation 1,
// FINISHED)"), for printSpan's messages.
func callsDesc(calls []string) string {
	if len(calls) == 1 {
		return calls[0]
	}
	names := make([]string, len(calls))
	for i, c := range calls {
		names[i] = strings.TrimPrefix(c, "call ")
	}
	return "calls " + strings.Join(names, ", ")
}

func actorTarget(ctx context.Context, store gcs.Store, id string) (*logTarget, error) {
	found, err := matchActors(ctx, store, id)
	if err != nil {
		return nil, err
	}
	switch {
	case len(found) == 0 && len(id) >= 6:
		// The ID of one of an actor's calls: that call's output (as logs task).
		gctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		res, err := taskstate.Gather(gctx, store, "", core.TaskQuery{TaskID: strings.ToLower(id), Limit: 1}, taskstate.Options{})
		if err == nil && len(res.Tasks) == 1 && res.Total >= 1 && res.Tasks[0].Actor {
			return taskTarget(ctx, store, id)
		}
		fallthrough
	case len(found) == 0:
		return nil, exitf(ExitError, "no actor %q in the cluster (rayctl list actors shows them; an actor call's task ID shows that call's output)", id)
	case len(found) > 1:
		return nil, exitf(ExitError, "%q is the start of %d actor IDs: give more of it", id, len(found))
	}
	a := found[0]
	desc := fmt.Sprintf("actor %s (%s)", a.ActorID, a.Class)
	node := a.Node
	if node == "" {
		// Dead (or between incarnations): its log is that of the process it last ran in,
		// the newest node its history names, as Ray serves a dead actor's log.
		for i := len(a.History) - 1; i >= 0 && node == ""; i-- {
			node = a.History[i].Node
		}
		if node == "" {
			return nil, exitf(ExitError, "%s is %s and never ran on a node: it has no log", desc, a.State)
		}
	}
	t, err := nodeTarget(ctx, store, node, desc)
	if err != nil {
		return nil, err
	}
	if t == nil {
		if a.Node == "" {
			return nil, exitf(ExitError, "%s is %s; it last ran on node %s, which the cluster no longer knows (its worker process and its record are gone): its log is gone",
				desc, a.State, node)
		}
		return nil, exitf(ExitError, "%s is on node %s, which the cluster no longer knows", desc, node)
	}
	if a.Node == "" {
		t.dead = fmt.Sprintf("%s is %s", desc, a.State)
	}
	return t, nil
}

func workerTarget(ctx context.Context, store gcs.Store, id, node string) (*logTarget, error) {
	pid, perr := strconv.ParseInt(id, 10, 32)
	if perr != nil || len(id) > 7 || pid <= 0 {
		if node != "" {
			return nil, exitf(ExitError, "--node goes with a pid; %q is a node ID", id)
		}
		t, err := nodeTarget(ctx, store, id, "worker process "+id)
		if err != nil {
			return nil, err
		}
		if t == nil {
			return nil, exitf(ExitError, "no worker process with node ID %q in the cluster (the node column of rayctl list tasks names them)", id)
		}
		t.desc, t.self = "worker process "+t.node, true
		return t, nil
	}
	ws, _, err := readWorkerRecs(ctx, store)
	if err != nil {
		return nil, err
	}
	var hosts map[string]string
	if node != "" {
		if hosts, err = agentHosts(ctx, store); err != nil {
			return nil, err
		}
	}
	var found []*logTarget
	var where []string
	for _, w := range ws {
		if w.GetPid() != int32(pid) {
			continue
		}
		if node != "" && !idMatches(w.GetAgentId(), node) && hosts[w.GetAgentId()] != node {
			continue
		}
		found = append(found, &logTarget{desc: "worker process " + id, self: true, agent: w.GetAgentId(), job: w.GetJobId(), pid: w.GetPid(), node: w.GetNodeId(), path: w.GetLogPath()})
		where = append(where, w.GetAgentId())
	}
	switch len(found) {
	case 0:
		in := "the cluster"
		if node != "" {
			in = "node " + node
		}
		return nil, exitf(ExitError, "no worker process with pid %d in %s (rayctl list nodes names the nodes)", pid, in)
	case 1:
		return found[0], nil
	}
	sort.Strings(where)
	return nil, exitf(ExitError, "worker processes with pid %d ran on %d nodes (%s): pass --node", pid, len(found), strings.Join(where, ", "))
}

// agentHosts maps agent IDs to their host names.
func agentHosts(ctx context.Context, store gcs.Store) (map[string]string, error) {
	kvs, err := list(ctx, store, gcs.AgentsPrefix)
	if err != nil {
		return nil, exitf(ExitError, "read the agents: %v", err)
	}
	out := map[string]string{}
	for _, kv := range kvs {
		id, _ := gcs.TrimKey(gcs.AgentsPrefix, kv.Key)
		if a, err := agent.DecodeAgentInfo(id, kv.Value); err == nil {
			out[id] = a.GetHostname()
		}
	}
	return out, nil
}

// jobLogs prints a submitted job's driver output: id is the submission's ID or its job's.
func jobLogs(c *ucli.Context, ctx context.Context, store gcs.Store, id string) error {
	sub, err := findSubmission(c.Context, store, id)
	if err != nil {
		return err
	}
	if sub == nil {
		job, err := clusterstate.ResolveJob(c.Context, store, id)
		var amb *clusterstate.AmbiguousError
		switch {
		case errors.As(err, &amb):
			return exitf(ExitError, "%v", err)
		case err != nil:
			return exitf(ExitError, "read the jobs: %v", err)
		case job == "":
			return exitf(ExitError, "no job or submission %q in the cluster (rayctl list jobs and rayctl job list show them)", id)
		}
		kv, found, gerr := store.Get(c.Context, gcs.JobKey(job))
		if gerr != nil || !found {
			return exitf(ExitError, "read job %s: %v", job, gerr)
		}
		info, derr := agent.DecodeJob(job, kv.Value)
		if derr != nil {
			return exitf(ExitError, "read job %s: %v", job, derr)
		}
		if info.GetSubmissionId() == "" {
			return exitf(ExitError, "job %s was not submitted with `rayctl job submit`: its driver's output went where the driver ran; "+
				"its worker processes' logs: rayctl logs worker NODE_ID (the node column of rayctl list tasks --filter job_id=%s)", job, job)
		}
		if sub, err = agent.GetSubmission(c.Context, store, info.GetSubmissionId()); err != nil {
			return exitf(ExitError, "read submission %s of job %s: %v", info.GetSubmissionId(), job, err)
		}
	}
	sid := sub.GetSubmissionId()
	tail := c.Int("tail")
	var buf bytes.Buffer
	var out io.Writer = c.App.Writer
	if tail >= 0 {
		out = &buf
	}
	// What is in the GCS: the first part of the output and its newest part (with a note
	// of what was omitted in between when it was long), so the last lines are the end.
	_, last, err := agent.ReadLogAfter(c.Context, store, sid, out, false, 0)
	if err != nil {
		return exitf(ExitError, "read the output of %s: %v", sid, err)
	}
	if tail >= 0 {
		b := buf.Bytes()
		if tail == 0 {
			b = nil
		} else {
			start, _ := agent.TailStart(b, tail, true)
			b = b[start:]
		}
		if _, err := c.App.Writer.Write(b); err != nil {
			return err
		}
	}
	if !c.Bool("follow") {
		return nil
	}
	// Go on after the last chunk read.
	if _, _, err := agent.ReadLogAfter(ctx, store, sid, c.App.Writer, true, last); err != nil && ctx.Err() == nil {
		return exitf(ExitError, "follow the output of %s: %v", sid, err)
	}
	return nil
}
