package taskstate

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/ids"
)

// ArchiveBytes bounds one process's archive (its wire form): the newest records that fit
// are kept, and the archive says how many it left out (TaskReport.Dropped). One Put.
const ArchiveBytes = 768 << 10

// ArchiveRecords bounds the records an archive is made from (ArchiveBytes holds fewer).
const ArchiveRecords = 50000

// ArchivedJobs and ArchivedBytes bound the archives the GCS keeps: past either, the
// archives of the jobs archived longest ago are deleted, whole (Ray's bound on the task
// events its GCS keeps, which drops finished jobs' first). A query of every job reads at
// most ArchivedBytes of them.
const (
	ArchivedJobs  = 100
	ArchivedBytes = 64 << 20
)

// Archive puts the task records of runtime c (process node of job) in the GCS, for the
// state API to answer from once the process has exited: the records of a process live in
// its memory (nothing per task goes to the GCS), so without this an ended job's tasks,
// and a worker process's that exited, were gone with their processes. Called once, by a
// process that stops cleanly (a killed process leaves nothing, as before). A task that
// has not ended is archived as FAILED: its owner is gone, and nothing will end it. Then
// the oldest jobs' archives past ArchivedJobs are deleted.
func Archive(ctx context.Context, store gcs.Store, job ids.JobID, node ids.NodeID, c *core.Core) error {
	// The newest ArchiveRecords (of up to a million a process keeps: no copy of them all
	// at a stop), and the counts of every record by function and state.
	rep, err := c.Tasks(ctx, core.TaskQuery{Edges: true, Summary: true, Limit: ArchiveRecords})
	if err != nil {
		return err
	}
	rep.Dropped += int64(rep.Total - len(rep.Tasks))
	b, err := archiveForm(&rep, node, time.Now().UnixNano(), ArchiveBytes)
	if err != nil || b == nil {
		return err
	}
	index := fmt.Appendf(nil, "%d %d", time.Now().UnixMilli(), len(b))
	if _, _, err := store.Txn(ctx, nil, []gcs.Op{
		{Kind: gcs.OpPut, Key: gcs.TaskArchiveKey(string(job), string(node)), Value: b},
		{Kind: gcs.OpPut, Key: gcs.TaskArchivedKey(string(job), string(node)), Value: index},
	}); err != nil {
		return fmt.Errorf("taskstate: archive the task records: %w", err)
	}
	return pruneArchives(ctx, store, ArchivedJobs, ArchivedBytes)
}

// archiveForm is the wire form of the archive of rep, process node's records at exited
// (unix ns), in at most limit bytes: nil when there is nothing to keep.
func archiveForm(rep *core.TaskReport, node ids.NodeID, exited int64, limit int) ([]byte, error) {
	if len(rep.Tasks) == 0 && rep.Dropped == 0 {
		return nil, nil // it ran nothing: nothing to keep
	}
	moved := false
	for i := range rep.Tasks {
		e := &rep.Tasks[i]
		if !core.Ended(e.State) {
			for j := range rep.Summary { // the counts say so too
				if c := &rep.Summary[j]; c.Function == e.Function && c.State == e.State && c.Count > 0 {
					c.Count--
					rep.Summary = append(rep.Summary, core.TaskCount{Function: e.Function, State: core.StateFailed, Count: 1})
					moved = true
					break
				}
			}
			e.State, e.ErrorKind = core.StateFailed, "SYSTEM"
			e.Error = fmt.Sprintf("its owner (process %s) exited before it ended", node)
			e.Ended = exited
		}
	}
	if moved {
		counts := map[[2]string]int{}
		for _, c := range rep.Summary {
			if c.Count > 0 {
				counts[[2]string{c.Function, c.State}] += c.Count
			}
		}
		rep.Summary = core.SummaryOf(counts)
	}
	b, err := EncodeReport(rep)
	for err == nil && len(b) > limit {
		// Keep the newest records that fit (a tenth under the estimate, for the string table).
		keep := int(float64(len(rep.Tasks)) * float64(limit) / float64(len(b)) * 0.9)
		rep.Dropped += int64(len(rep.Tasks) - keep)
		rep.Tasks = rep.Tasks[:keep]
		rep.Edges = edgesInto(rep.Edges, rep.Tasks)
		b, err = EncodeReport(rep)
	}
	return b, err
}

// pruneArchives deletes the archives of the jobs archived longest ago (by their newest
// archive), whole, until at most keepJobs jobs' and keepBytes bytes of archives are left.
// It reads the index (taskarchived/: a few bytes per archive), not the archives.
func pruneArchives(ctx context.Context, store gcs.Store, keepJobs int, keepBytes int64) error {
	kvs, _, err := store.List(ctx, gcs.TaskArchivedPrefix)
	if err != nil {
		return err
	}
	type archived struct {
		job   string
		ms    int64 // the newest archive's time
		bytes int64
	}
	byJob := map[string]*archived{}
	var total int64
	for _, kv := range kvs {
		rest, _ := gcs.TrimKey(gcs.TaskArchivedPrefix, kv.Key)
		job, _, _ := strings.Cut(rest, "/")
		var ms, size int64 // unreadable: oldest, empty
		_, _ = fmt.Sscanf(string(kv.Value), "%d %d", &ms, &size)
		a := byJob[job]
		if a == nil {
			a = &archived{job: job}
			byJob[job] = a
		}
		a.ms, a.bytes = max(a.ms, ms), a.bytes+size
		total += size
	}
	if len(byJob) <= keepJobs && total <= keepBytes {
		return nil
	}
	jobs := make([]*archived, 0, len(byJob))
	for _, a := range byJob {
		jobs = append(jobs, a)
	}
	slices.SortFunc(jobs, func(a, b *archived) int { return cmp.Or(cmp.Compare(a.ms, b.ms), strings.Compare(a.job, b.job)) })
	for i, left := 0, len(jobs); i < len(jobs) && (left > keepJobs || total > keepBytes); i++ {
		j := jobs[i]
		if _, _, err := store.Txn(ctx, nil, []gcs.Op{
			{Kind: gcs.OpDeletePrefix, Key: gcs.TaskArchiveOf(j.job)},
			{Kind: gcs.OpDeletePrefix, Key: gcs.TaskArchivedOf(j.job)},
		}); err != nil {
			return err
		}
		left, total = left-1, total-j.bytes
	}
	return nil
}

// archives reads the archives of job's processes (every job's when job is ""), by node.
// An archive that cannot be decoded is reported in bad (its node), not used.
func archives(ctx context.Context, store gcs.Store, job string) (got map[string]*core.TaskReport, bad []string, err error) {
	kvs, _, err := store.List(ctx, gcs.TaskArchiveOf(job))
	if err != nil {
		return nil, nil, fmt.Errorf("taskstate: read the archived task records: %w", err)
	}
	got = make(map[string]*core.TaskReport, len(kvs))
	for _, kv := range kvs {
		rest, _ := gcs.TrimKey(gcs.TaskArchivePrefix, kv.Key)
		_, node, ok := strings.Cut(rest, "/")
		if !ok || node == "" {
			continue
		}
		r, err := DecodeReport(kv.Value)
		if err != nil {
			bad = append(bad, node)
			continue
		}
		got[node] = r
	}
	return got, bad, nil
}

// filterArchived answers q from an archived report, as a process answers it from its
// records (core's shard.answer): the matches newest first (at most q.Limit), their
// number, the summary of every match, and the edges into the tasks returned.
func filterArchived(r *core.TaskReport, q *core.TaskQuery) core.TaskReport {
	out := core.TaskReport{Dropped: r.Dropped}
	var counts map[[2]string]int
	if q.Summary {
		counts = map[[2]string]int{}
	}
	tid := strings.ToLower(q.TaskID)
	for i := range r.Tasks {
		e := &r.Tasks[i]
		if (q.State != "" && e.State != q.State) || (q.Function != "" && e.Function != q.Function) ||
			(q.Worker != "" && e.Worker != q.Worker) || (tid != "" && !strings.HasPrefix(e.TaskID, tid)) ||
			(q.Node != "" && !core.NodeMatches(e.Node, q.Node)) {
			continue
		}
		out.Total++
		if counts != nil {
			counts[[2]string{e.Function, e.State}]++
		}
		if q.Limit <= 0 || len(out.Tasks) < q.Limit {
			out.Tasks = append(out.Tasks, *e)
		}
	}
	core.SortNewest(out.Tasks)
	if len(r.Summary) > 0 && q.Worker == "" && tid == "" && q.Node == "" {
		// The archive counted every record by function and state, also those it left
		// out: the total and the summary of a query on those alone are whole.
		out.Total = 0
		if counts != nil {
			clear(counts)
		}
		for _, c := range r.Summary {
			if (q.State == "" || c.State == q.State) && (q.Function == "" || c.Function == q.Function) {
				out.Total += c.Count
				if counts != nil {
					counts[[2]string{c.Function, c.State}] += c.Count
				}
			}
		}
	}
	if q.Edges {
		out.Edges = edgesInto(r.Edges, out.Tasks)
	}
	if counts != nil {
		out.Summary = core.SummaryOf(counts)
	}
	return out
}

// edgesInto keeps the edges whose consumer is one of tasks.
func edgesInto(edges []core.TaskEdge, tasks []core.TaskEvent) []core.TaskEdge {
	if len(edges) == 0 {
		return nil
	}
	want := make(map[string]bool, len(tasks))
	for i := range tasks {
		want[tasks[i].TaskID] = true
	}
	var out []core.TaskEdge
	for _, e := range edges {
		if want[e.Consumer] {
			out = append(out, e)
		}
	}
	return out
}

// archivedSince answers q for the processes in missing (asked, no answer in time) that
// left an archive meanwhile: they stopped while they were asked. It returns those still
// missing.
func archivedSince(ctx context.Context, store gcs.Store, job string, missing []string, q *core.TaskQuery, reports *[]*core.TaskReport, res *Result) []string {
	got, _, err := archives(ctx, store, job)
	if err != nil {
		return missing
	}
	return slices.DeleteFunc(missing, func(node string) bool {
		r := got[node]
		if r == nil {
			return false
		}
		f := filterArchived(r, q)
		*reports = append(*reports, &f)
		res.Archived = append(res.Archived, node)
		return true
	})
}
