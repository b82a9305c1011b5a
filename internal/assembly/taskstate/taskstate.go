package taskstate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// Request is a query as it travels through the GCS (the value of statereq/<id>).
type Request struct {
	ID    string         `json:"id"`
	Job   string         `json:"job,omitempty"` // "": every job
	Lease int64          `json:"lease"`         // the lease the answers go on
	Query core.TaskQuery `json:"query"`
	// Objects, when set, asks for objects instead of tasks (Query is ignored); the answer
	// is a core.ObjectReport in JSON.
	Objects *core.ObjectQuery `json:"objects,omitempty"`
	// Collect, when set, asks for a garbage collection instead (core.Core.CollectForOthers;
	// Query is ignored, nothing is answered): the process From waits for something a
	// handle dropped elsewhere may hold (AskCollect).
	Collect bool `json:"collect,omitempty"`
	// From is the node ID of the asking process: a query's asker with a runtime reads its
	// own records directly (Options.Local), so its Server does not answer.
	From string `json:"from,omitempty"`
	// Archive, when set, asks the process To (a node ID) to archive its task records now
	// (Archive), as it does when it stops cleanly, and to answer "ok" or why not (Query is
	// ignored): AskArchive, before its driver is stopped by a signal it may die of.
	Archive bool   `json:"archive,omitempty"`
	To      string `json:"to,omitempty"`
}

// partBytes is the most bytes of an answer under one key (etcd takes 1.5 MiB a request).
const partBytes = 1 << 20

// maxAnswerBytes bounds a decoded answer (a reader of the GCS trusts its members, but not
// without limit).
const maxAnswerBytes = 1 << 30

func partsPrefix(id string) string { return gcs.StateRepliesOf(id) + "part/" }
func endsPrefix(id string) string  { return gcs.StateRepliesOf(id) + "end/" }

// Server answers the state queries of one process's runtime.
type Server struct {
	Store  gcs.Store
	Node   ids.NodeID
	Job    ids.JobID
	Core   *core.Core
	Logger *slog.Logger
}

// Run answers queries until ctx is done. It lists the queries already in the GCS before it
// watches for new ones (from the list's revision on): a query sent before the watch was
// made (just after this process joined, or while a broken watch was made again) is
// answered too, instead of its asker waiting its whole wait and reporting this process
// missing. One answered before a watch broke may be answered again: the same keys, put
// again on the query's lease (gone with its asker).
func (s *Server) Run(ctx context.Context) {
	for ctx.Err() == nil {
		kvs, rev, err := s.Store.List(ctx, gcs.StateRequestsPrefix)
		if err == nil {
			for _, kv := range kvs {
				s.handle(ctx, kv.Value)
			}
			for resp := range s.Store.Watch(ctx, gcs.StateRequestsPrefix, rev+1) {
				if resp.Err != nil {
					break
				}
				for _, ev := range resp.Events {
					if ev.Type == gcs.EventPut {
						s.handle(ctx, ev.KV.Value)
					}
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second): // the watch broke (compaction, a lost connection): list and watch again
		}
	}
}

// handle acts on one request (the value of statereq/<id>) if it is for this process.
func (s *Server) handle(ctx context.Context, value []byte) {
	var req Request
	if err := json.Unmarshal(value, &req); err != nil || req.ID == "" {
		return
	}
	if req.Job != "" && req.Job != string(s.Job) {
		return
	}
	if req.Collect {
		if req.From != string(s.Node) {
			s.Core.CollectForOthers()
		}
		return
	}
	if req.Archive {
		if req.To == string(s.Node) {
			s.archiveNow(ctx, &req)
		}
		return
	}
	if req.From == string(s.Node) {
		return // the asker read its own records directly (Options.Local)
	}
	if err := s.answer(ctx, &req); err != nil && ctx.Err() == nil {
		s.Logger.Debug("taskstate: answering a query failed", "id", req.ID, "err", err)
	}
}

func (s *Server) answer(ctx context.Context, req *Request) error {
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var b []byte
	if req.Objects != nil {
		rep, err := s.Core.ListObjects(qctx, *req.Objects)
		if err != nil {
			return err
		}
		if b, err = json.Marshal(&rep); err != nil {
			return err
		}
	} else {
		rep, err := s.Core.Tasks(qctx, req.Query)
		if err != nil {
			return err
		}
		if b, err = EncodeReport(&rep); err != nil {
			return err
		}
	}
	n := 0
	for off := 0; off < len(b) || n == 0; off += partBytes {
		part := b[off:min(off+partBytes, len(b))]
		if _, err := s.Store.Put(qctx, partsPrefix(req.ID)+string(s.Node)+"/"+fmt.Sprintf("%06d", n), part, gcs.LeaseID(req.Lease)); err != nil {
			return err
		}
		n++
	}
	_, err := s.Store.Put(qctx, endsPrefix(req.ID)+string(s.Node), []byte(strconv.Itoa(n)), gcs.LeaseID(req.Lease))
	return err
}

// archiveNow archives this process's task records (Archive) for an AskArchive request and
// answers "ok", or the error, under the request's end key for this node.
func (s *Server) archiveNow(ctx context.Context, req *Request) {
	actx, cancel := context.WithTimeout(ctx, archiveAskWait)
	defer cancel()
	answer := "ok"
	if err := Archive(actx, s.Store, s.Job, s.Node, s.Core); err != nil {
		answer = err.Error()
	}
	if _, err := s.Store.Put(actx, endsPrefix(req.ID)+string(s.Node), []byte(answer), gcs.LeaseID(req.Lease)); err != nil && ctx.Err() == nil {
		s.Logger.Debug("taskstate: answering a request to archive failed", "id", req.ID, "err", err)
	}
}

// archiveAskWait is the default bound of AskArchive, and of the archive it asks for.
const archiveAskWait = 3 * time.Second

// AskArchive asks the process node of job (a driver about to be stopped: `rayctl job
// stop` sends it SIGTERM, which a Go program dies of unless it handles it) to archive its
// task records now (Archive), as a process that stops cleanly does, and waits for its
// answer, at most wait (default 3 s). Without it, a stopped job's tasks were gone with its
// driver. The process runs on: a later archive (its Stop, if it handles the signal and
// calls ray.Shutdown) replaces this one; until it has exited, the state API reads this
// archive for it (Gather), in which a task not ended yet is FAILED (its owner is about to
// exit). It returns nil once the process has archived, an error when it did not answer in
// time or could not.
func AskArchive(ctx context.Context, store gcs.Store, job, node string, wait time.Duration) error {
	if wait <= 0 {
		wait = archiveAskWait
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	lease, err := store.Grant(ctx, wait+5*time.Second)
	if err != nil {
		return fmt.Errorf("taskstate: lease for a request to archive: %w", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = store.Revoke(rctx, lease) // the request and its answer go with it
	}()
	req := Request{ID: ids.NewRootTaskID().String(), Job: job, Lease: int64(lease), Archive: true, To: node}
	b, _ := json.Marshal(req)
	if _, err := store.Put(ctx, gcs.StateRequestKey(req.ID), b, lease); err != nil {
		return fmt.Errorf("taskstate: send a request to archive: %w", err)
	}
	key := endsPrefix(req.ID) + node
	for {
		kv, found, err := store.Get(ctx, key)
		switch {
		case err != nil:
			return fmt.Errorf("taskstate: process %s did not archive its task records in time: %w", node, err)
		case found && string(kv.Value) == "ok":
			return nil
		case found:
			return fmt.Errorf("taskstate: process %s could not archive its task records: %s", node, kv.Value)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("taskstate: process %s did not archive its task records within %v", node, wait)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// collectTTL is how long a request for collections stays in the GCS, on a lease of its
// own, before etcd deletes it (the processes act on its put, as they see it).
const collectTTL = 5 * time.Second

// AskCollect asks every process of the cluster but from (a process with a runtime, its
// node ID) for a garbage collection: from has waited for an actor's instance, a lease or
// room for a placement group that a handle dropped in another process may hold (the
// handle is released when a collection there finds it gone; internal/assembly/core,
// collect.go). Every job's processes: the actor holding the resources may be another
// job's. The request lives collectTTL on a lease of its own; no answer is waited for.
func AskCollect(ctx context.Context, store gcs.Store, from ids.NodeID) error {
	lease, err := store.Grant(ctx, collectTTL)
	if err != nil {
		return fmt.Errorf("taskstate: lease for a collection request: %w", err)
	}
	req := Request{ID: ids.NewRootTaskID().String(), Lease: int64(lease), Collect: true, From: string(from)}
	b, _ := json.Marshal(req)
	if _, err := store.Put(ctx, gcs.StateRequestKey(req.ID), b, lease); err != nil {
		return fmt.Errorf("taskstate: send a collection request: %w", err)
	}
	return nil
}

// Result is what Gather found.
type Result struct {
	core.TaskReport
	// Processes is how many processes answered; Missing names those that did not in time,
	// and the unreachable processes of running jobs, which could not be asked (a driver
	// or worker process whose node record lapsed: stopped, hung, cut off).
	Processes int
	Missing   []string
	// Gone names the processes of the node table that were not asked: known to have
	// exited, and their records went with them (killed, they left no archive).
	Gone []string
	// Archived names the exited processes whose records were read from the archive each
	// left when it stopped (Archive): an ended job's, a worker process that exited.
	Archived []string
	// Counts is, of a query with Counts set, each answering process's counts (by node
	// ID): what a monotonic total over processes that come and go needs.
	Counts map[string][]core.TaskCount
}

// Options tunes Gather.
type Options struct {
	// Local, when set, is this process's runtime (node LocalNode): it is asked directly.
	Local     *core.Core
	LocalNode ids.NodeID
	// Wait bounds the wait for answers (default 10 s, or ctx's deadline).
	Wait time.Duration
	// Dead (optional) reports a process (node ID) the asker knows exited (its membership
	// saw its address refuse connections): it is not asked. Gather also skips the worker
	// processes whose agent recorded their exit (deadWorkers).
	Dead func(node string) bool
}

// Gather asks every process of job (every process of the cluster when job is "") for
// the tasks it owns that match q, and merges their answers: the newest q.Limit, newest
// first, the total of matches, the summary and the edges.
func Gather(ctx context.Context, store gcs.Store, job string, q core.TaskQuery, o Options) (*Result, error) {
	expect, gone, unreachable, err := processes(ctx, store, job, o.Dead)
	if err != nil {
		return nil, err
	}
	var reports []*core.TaskReport
	res := &Result{}
	if !q.Counts { // a count is of the processes that answer (Result.Counts): no archive
		got, bad, err := archives(ctx, store, job)
		if err != nil {
			return nil, err
		}
		for node, r := range got {
			delete(expect, node) // it exited: its archive answers for it
			f := filterArchived(r, &q)
			reports = append(reports, &f)
			res.Archived = append(res.Archived, node)
		}
		slices.Sort(res.Archived)
		gone = slices.DeleteFunc(gone, func(n string) bool { return got[n] != nil })
		unreachable = slices.DeleteFunc(unreachable, func(n string) bool { return got[n] != nil })
		res.Missing = append(res.Missing, bad...)
	}
	res.Gone = gone
	if o.Local != nil && (job == "" || job == string(o.Local.Job())) {
		delete(expect, string(o.LocalNode))
		r, err := o.Local.Tasks(ctx, q)
		if err != nil {
			return nil, err
		}
		reports = append(reports, &r)
		res.Processes++
		if q.Counts {
			res.Counts = map[string][]core.TaskCount{string(o.LocalNode): r.Summary}
		}
	}
	if len(expect) > 0 {
		answers, missing, err := ask(ctx, store, Request{Job: job, Query: q, From: from(o)}, expect, o.Wait)
		if err != nil {
			return nil, err
		}
		for node, b := range answers {
			r, err := DecodeReport(b)
			if err != nil {
				return nil, fmt.Errorf("taskstate: the answer of node %s: %w", node, err)
			}
			reports = append(reports, r)
			if q.Counts {
				if res.Counts == nil {
					res.Counts = map[string][]core.TaskCount{}
				}
				res.Counts[node] = r.Summary
			}
		}
		res.Processes += len(answers)
		if len(missing) > 0 && !q.Counts {
			// A process that stopped while it was asked left its archive instead.
			missing = archivedSince(ctx, store, job, missing, &q, &reports, res)
		}
		res.Missing = append(res.Missing, missing...)
	}
	res.Missing = append(res.Missing, unreachable...)
	res.TaskReport = Merge(reports, q)
	return res, nil
}

// ObjectResult is what GatherObjects found.
type ObjectResult struct {
	core.ObjectReport
	// Processes is how many processes answered; Missing names those that did not in time
	// or could not be asked (see Result.Missing).
	Processes int
	Missing   []string
	// Gone names the processes not asked: known to have exited (see Result.Gone).
	Gone []string
}

// GatherObjects asks every process of job (every process when job is "") for the objects
// it owns that match q, and merges their answers: the first q.Limit by ID, the total of
// matches and the summary.
func GatherObjects(ctx context.Context, store gcs.Store, job string, q core.ObjectQuery, o Options) (*ObjectResult, error) {
	expect, gone, unreachable, err := processes(ctx, store, job, o.Dead)
	if err != nil {
		return nil, err
	}
	var reports []*core.ObjectReport
	res := &ObjectResult{Gone: gone}
	if o.Local != nil && (job == "" || job == string(o.Local.Job())) {
		delete(expect, string(o.LocalNode))
		r, err := o.Local.ListObjects(ctx, q)
		if err != nil {
			return nil, err
		}
		reports = append(reports, &r)
		res.Processes++
	}
	if len(expect) > 0 {
		answers, missing, err := ask(ctx, store, Request{Job: job, Objects: &q, From: from(o)}, expect, o.Wait)
		if err != nil {
			return nil, err
		}
		for node, b := range answers {
			r := &core.ObjectReport{}
			if err := json.Unmarshal(b, r); err != nil {
				return nil, fmt.Errorf("taskstate: the answer of node %s: %w", node, err)
			}
			reports = append(reports, r)
		}
		res.Processes += len(answers)
		res.Missing = missing
	}
	res.Missing = append(res.Missing, unreachable...)
	counts := map[[2]string]*core.ObjectCount{}
	for _, r := range reports {
		res.Objects = append(res.Objects, r.Objects...)
		res.Total += r.Total
		for _, c := range r.Summary {
			k := [2]string{c.State, c.RefType}
			if counts[k] == nil {
				counts[k] = &core.ObjectCount{State: c.State, RefType: c.RefType}
			}
			counts[k].Count += c.Count
			counts[k].Bytes += c.Bytes
		}
	}
	res.Objects = core.LimitObjects(res.Objects, q.Limit)
	if q.Summary {
		res.Summary = core.ObjectSummaryOf(counts)
	}
	return res, nil
}

// from is the asker's node when it reads its own records directly (Options.Local): its
// Server is not to answer the query too.
func from(o Options) string {
	if o.Local == nil {
		return ""
	}
	return string(o.LocalNode)
}

// processes lists the node table for the processes of job (every process when ""), and
// those of them known to have exited, which are not to be asked (gone, sorted): a
// process's node record stays until its lease lapses (seconds after a crash), and waiting
// for its answer held every query for the whole wait. Known exited: dead says so (the
// asker's membership), or the agent that ran it as a job's worker process recorded its
// exit (deadWorkers). Unreachable (sorted) are the processes of a running job that
// cannot be asked although they have not exited (unreachableProcesses): their records
// are missing from any answer.
func processes(ctx context.Context, store gcs.Store, job string, dead func(string) bool) (expect map[string]bool, gone, unreachable []string, err error) {
	kvs, _, err := store.List(ctx, gcs.NodesPrefix)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("taskstate: list the nodes: %w", err)
	}
	expect = map[string]bool{}
	registered := map[string]bool{}
	var infos []*pb.NodeInfo
	for _, kv := range kvs {
		info := &pb.NodeInfo{}
		if proto.Unmarshal(kv.Value, info) != nil || info.NodeId == "" {
			continue
		}
		registered[info.NodeId] = true
		if job == "" || info.JobId == job {
			expect[info.NodeId] = true
			infos = append(infos, info)
		}
	}
	exited := deadWorkers(ctx, store, job, infos)
	for node := range expect {
		if exited[node] || (dead != nil && dead(node)) {
			delete(expect, node)
			gone = append(gone, node)
		}
	}
	slices.Sort(gone)
	unreachable = unreachableProcesses(ctx, store, job, registered, dead)
	return expect, gone, unreachable, nil
}

// Unreachable returns the processes of job (every job when "") that cannot be asked
// although they have not exited (a running job's driver or worker process whose node
// record lapsed: see unreachableProcesses), sorted; dead, when set, names processes known
// to have exited. The callers that read the nodes' figures another way (ray.Memory,
// `rayctl memory`) name them as missing instead of leaving them out with no word.
func Unreachable(ctx context.Context, store gcs.Store, job string, dead func(string) bool) ([]string, error) {
	_, _, unreachable, err := processes(ctx, store, job, dead)
	return unreachable, err
}

// unreachableProcesses returns the processes of job (every job when "") that are not in
// the node table although their job runs and they have not exited (registered: the node
// table's IDs): the driver of a RUNNING job whose node record lapsed (stopped, hung or
// cut off: `rayctl list nodes` shows it UNREACHABLE until it comes back or the head
// fails its job), and a worker process its agent runs for a RUNNING job (jobworkers/
// RUNNING, with its node ID) whose node record lapsed. Nobody asks them, so without this
// their records dropped out of every answer with no word (a query would report them
// neither answered nor missing). A record that cannot be read adds nothing.
func unreachableProcesses(ctx context.Context, store gcs.Store, job string, registered map[string]bool, dead func(string) bool) []string {
	prefix := gcs.JobsPrefix
	if job != "" {
		prefix = gcs.JobKey(job)
	}
	kvs, _, err := store.List(ctx, prefix)
	if err != nil {
		return nil
	}
	running := map[string]bool{}
	out := map[string]bool{}
	lost := func(node string) {
		if node != "" && !registered[node] && (dead == nil || !dead(node)) {
			out[node] = true
		}
	}
	for _, kv := range kvs {
		id, _ := gcs.TrimKey(gcs.JobsPrefix, kv.Key)
		info := &pb.JobInfo{}
		if (job != "" && id != job) || proto.Unmarshal(kv.Value, info) != nil || info.GetState() != pb.JobInfo_RUNNING {
			continue
		}
		running[id] = true
		lost(info.GetDriverNode())
	}
	if len(running) == 0 {
		return nil
	}
	wprefix := gcs.JobWorkersPrefix
	if job != "" {
		wprefix = gcs.JobWorkersOf(job)
	}
	if kvs, _, err = store.List(ctx, wprefix); err == nil {
		for _, kv := range kvs {
			rest, _ := gcs.TrimKey(gcs.JobWorkersPrefix, kv.Key)
			j, agent, ok := strings.Cut(rest, "/")
			if !ok || !running[j] {
				continue
			}
			w, err := pb.DecodeJobWorker(j, agent, kv.Value)
			if err == nil && w.GetState() == pb.JobWorker_RUNNING {
				lost(w.GetNodeId())
			}
		}
	}
	ids := make([]string, 0, len(out))
	for node := range out {
		ids = append(ids, node)
	}
	slices.Sort(ids)
	return ids
}

// deadWorkers returns the worker processes among infos (node records of job, every job
// when "") known to have exited: an agent runs one worker process per job at a time, so
// of the worker nodes of one job on one agent all but the newest (StartedUnixMs) exited
// (their records stay until their leases lapse); and the newest did when the agent's
// jobworkers/ record says EXITED for its node ID or pid, or the exit of a process started
// after it (exit_unix_ms), or names another process starting or running. A record that cannot be read
// makes no process dead: it is asked, as before.
func deadWorkers(ctx context.Context, store gcs.Store, job string, infos []*pb.NodeInfo) map[string]bool {
	out := map[string]bool{}
	newest := map[[2]string]*pb.NodeInfo{} // (job, agent)
	for _, info := range infos {
		if info.Role != "worker" || info.AgentId == "" || info.JobId == "" {
			continue
		}
		k := [2]string{info.JobId, info.AgentId}
		switch n := newest[k]; {
		case n == nil:
			newest[k] = info
		case info.StartedUnixMs > n.StartedUnixMs:
			out[n.NodeId] = true
			newest[k] = info
		default:
			out[info.NodeId] = true
		}
	}
	prefix := gcs.JobWorkersPrefix
	if job != "" {
		prefix = gcs.JobWorkersOf(job)
	}
	kvs, _, err := store.List(ctx, prefix)
	if err != nil {
		return out
	}
	for _, kv := range kvs {
		rest, _ := gcs.TrimKey(gcs.JobWorkersPrefix, kv.Key)
		j, agent, ok := strings.Cut(rest, "/")
		if !ok {
			continue
		}
		w, err := pb.DecodeJobWorker(j, agent, kv.Value)
		if err != nil {
			continue
		}
		n := newest[[2]string{j, agent}]
		if w.GetState() == pb.JobWorker_EXITED && w.GetNodeId() != "" {
			out[w.GetNodeId()] = true
		}
		if n == nil || w.GetPid() == 0 || n.Pid == 0 {
			continue
		}
		switch w.GetState() {
		case pb.JobWorker_EXITED:
			// Its own exit, or another process's that it started before: one at a
			// time, so it had ended by then (a process started after is a new one).
			if w.GetPid() == n.Pid || (w.GetExitUnixMs() > 0 && n.StartedUnixMs > 0 && n.StartedUnixMs < w.GetExitUnixMs()) {
				out[n.NodeId] = true
			}
		case pb.JobWorker_STARTING, pb.JobWorker_RUNNING:
			if w.GetPid() != n.Pid {
				out[n.NodeId] = true // the agent started another process for the job since
			}
		}
	}
	return out
}

// ask sends req (its ID and lease are set here) through the GCS and collects the answers
// of the processes in expect: the bytes of each, by node. An answer from a process not in
// expect is left out: its records are read otherwise (the asker's own, Options.Local) or
// it was not of the job when the node table was read; taking it would count its tasks
// twice or out of turn.
func ask(ctx context.Context, store gcs.Store, req Request, expect map[string]bool, wait time.Duration) (map[string][]byte, []string, error) {
	if wait <= 0 {
		wait = 10 * time.Second
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
		wait = time.Until(dl)
	}
	lease, err := store.Grant(ctx, wait+5*time.Second)
	if err != nil {
		return nil, nil, fmt.Errorf("taskstate: lease for a query: %w", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = store.Revoke(rctx, lease) // the query and its answers go with it
	}()
	req.ID, req.Lease = ids.NewRootTaskID().String(), int64(lease)
	b, _ := json.Marshal(req)
	if _, err := store.Put(ctx, gcs.StateRequestKey(req.ID), b, lease); err != nil {
		return nil, nil, fmt.Errorf("taskstate: send the query: %w", err)
	}
	deadline := time.Now().Add(wait)
	ends := map[string]int{}
	for {
		kvs, _, err := store.List(ctx, endsPrefix(req.ID))
		if err != nil {
			return nil, nil, fmt.Errorf("taskstate: read the answers: %w", err)
		}
		for _, kv := range kvs {
			node := strings.TrimPrefix(kv.Key, endsPrefix(req.ID))
			n, err := strconv.Atoi(string(kv.Value))
			if err == nil && n > 0 && n < maxAnswerBytes/partBytes && expect[node] {
				ends[node] = n
			}
		}
		done := true
		for node := range expect {
			if _, ok := ends[node]; !ok {
				done = false
			}
		}
		if done || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	var missing []string
	for node := range expect {
		if _, ok := ends[node]; !ok {
			missing = append(missing, node)
		}
	}
	parts, _, err := store.List(ctx, partsPrefix(req.ID))
	if err != nil {
		return nil, nil, fmt.Errorf("taskstate: read the answers: %w", err)
	}
	byNode := map[string][][]byte{}
	for _, kv := range parts {
		rest := strings.TrimPrefix(kv.Key, partsPrefix(req.ID))
		node, _, ok := strings.Cut(rest, "/")
		if ok {
			byNode[node] = append(byNode[node], kv.Value) // List is in key order: parts in order
		}
	}
	out := map[string][]byte{}
	for node, n := range ends {
		ps := byNode[node]
		if len(ps) != n {
			missing = append(missing, node)
			continue
		}
		out[node] = bytes.Join(ps, nil)
	}
	return out, missing, nil
}

// Merge merges the reports of several processes for q.
// mergeNewest merges lists, each newest first (as core.Core.Tasks answers), into the
// newest n, newest first (core.SortNewest's order): each event is moved once, at most,
// and a single list is cut, not copied. Lists out of order are sorted first.
func mergeNewest(lists [][]core.TaskEvent, n int) []core.TaskEvent {
	for _, l := range lists {
		if !sortedNewest(l) {
			core.SortNewest(l)
		}
	}
	switch len(lists) {
	case 0:
		return nil
	case 1:
		return lists[0][:n]
	}
	out := make([]core.TaskEvent, 0, n)
	for len(out) < n {
		best := -1
		for i, l := range lists {
			if len(l) > 0 && (best < 0 || core.NewerThan(&l[0], &lists[best][0])) {
				best = i
			}
		}
		out = append(out, lists[best][0])
		lists[best] = lists[best][1:]
	}
	return out
}

func sortedNewest(l []core.TaskEvent) bool {
	for i := 1; i < len(l); i++ {
		if core.NewerThan(&l[i], &l[i-1]) {
			return false
		}
	}
	return true
}

func Merge(reports []*core.TaskReport, q core.TaskQuery) core.TaskReport {
	var out core.TaskReport
	counts := map[[2]string]int{}
	var lists [][]core.TaskEvent
	n := 0
	for _, r := range reports {
		if len(r.Tasks) > 0 {
			lists = append(lists, r.Tasks)
			n += len(r.Tasks)
		}
		out.Total += r.Total
		out.Edges = append(out.Edges, r.Edges...)
		out.Dropped += r.Dropped
		for _, c := range r.Summary {
			counts[[2]string{c.Function, c.State}] += c.Count
		}
	}
	if q.Limit > 0 {
		n = min(n, q.Limit)
	}
	out.Tasks = mergeNewest(lists, n)
	if q.Summary || q.Counts {
		out.Summary = core.SummaryOf(counts)
	}
	return out
}
