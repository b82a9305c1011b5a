package taskstate

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
	"github.com/ray-go/ray/internal/base/pb"
)

// archivedTask is a record of an archived report: task i of function fn, in state st,
// ended at second i.
func archivedTask(i int, fn, st string) core.TaskEvent {
	return core.TaskEvent{TaskID: fmt.Sprintf("%032x", i+1), Function: fn, State: st, Job: "j1", Node: "node-aaaaaa",
		Worker: "w1", Submitted: int64(i) * 1e9, Started: int64(i)*1e9 + 10, Ended: int64(i)*1e9 + 20}
}

// A process that stopped answers through its archive: Gather reads it, applies the query
// as the process would (state, function, task ID prefix, limit, summary, edges) and does
// not ask the process, although its node record is still in the table (it lapses with its
// lease): asked, it would never answer, and the query waited its whole wait for it and
// then reported it missing. Before, an exited process's records were gone.
func TestGatherAnswersFromArchives(t *testing.T) {
	store := memstore.New(memstore.Options{})
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, _ := proto.Marshal(&pb.NodeInfo{NodeId: "stopped", Role: "driver", JobId: "j1", Pid: 10})
	if _, err := store.Put(ctx, gcs.NodeKey("stopped"), b, 0); err != nil {
		t.Fatal(err)
	}
	rep := core.TaskReport{Edges: []core.TaskEdge{{Producer: fmt.Sprintf("%032x", 1), Consumer: fmt.Sprintf("%032x", 2)}}}
	for i := 0; i < 10; i++ {
		fn, st := "f", core.StateFinished
		if i%2 == 1 {
			fn, st = "g", core.StateFailed
		}
		rep.Tasks = append(rep.Tasks, archivedTask(i, fn, st))
	}
	core.SortNewest(rep.Tasks)
	form, err := archiveForm(&rep, "stopped", 99e9, ArchiveBytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Put(ctx, gcs.TaskArchiveKey("j1", "stopped"), form, 0); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	res, err := Gather(ctx, store, "j1", core.TaskQuery{Summary: true}, Options{Wait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tasks) != 10 || res.Total != 10 || len(res.Missing) != 0 || len(res.Gone) != 0 || !reflect.DeepEqual(res.Archived, []string{"stopped"}) {
		t.Fatalf("Gather: %d tasks, total %d, missing %v, gone %v, archived %v; want the 10 archived, from the archive of \"stopped\"",
			len(res.Tasks), res.Total, res.Missing, res.Gone, res.Archived)
	}
	if waited := time.Since(start); waited >= 5*time.Second {
		t.Errorf("Gather waited %v: it asked the stopped process", waited)
	}
	want := []core.TaskCount{{Function: "f", State: core.StateFinished, Count: 5}, {Function: "g", State: core.StateFailed, Count: 5}}
	if !reflect.DeepEqual(res.Summary, want) {
		t.Errorf("summary: %v, want %v", res.Summary, want)
	}
	if res.Tasks[0].TaskID != fmt.Sprintf("%032x", 10) {
		t.Errorf("newest first: the first is %s", res.Tasks[0].TaskID)
	}

	for _, c := range []struct {
		q        core.TaskQuery
		n, total int
		firstID  int
		edges    int
		what     string
	}{
		{q: core.TaskQuery{State: core.StateFailed}, n: 5, total: 5, firstID: 10, what: "state FAILED"},
		{q: core.TaskQuery{Function: "f", Limit: 2}, n: 2, total: 5, firstID: 9, what: "function f, limit 2"},
		{q: core.TaskQuery{TaskID: fmt.Sprintf("%032X", 3)[:30]}, n: 10, total: 10, firstID: 10, what: "a task ID prefix, in capitals"},
		{q: core.TaskQuery{TaskID: fmt.Sprintf("%032x", 3)}, n: 1, total: 1, firstID: 3, what: "a whole task ID"},
		{q: core.TaskQuery{Node: "node-a"}, n: 10, total: 10, firstID: 10, what: "a node prefix of 6"},
		{q: core.TaskQuery{Node: "other"}, n: 0, total: 0, what: "another node"},
		{q: core.TaskQuery{Edges: true, TaskID: fmt.Sprintf("%032x", 2)}, n: 1, total: 1, firstID: 2, edges: 1, what: "the edge into task 2"},
	} {
		res, err := Gather(ctx, store, "j1", c.q, Options{Wait: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Tasks) != c.n || res.Total != c.total || len(res.Edges) != c.edges {
			t.Errorf("%s: %d tasks, total %d, %d edges; want %d, %d, %d", c.what, len(res.Tasks), res.Total, len(res.Edges), c.n, c.total, c.edges)
			continue
		}
		if c.n > 0 && res.Tasks[0].TaskID != fmt.Sprintf("%032x", c.firstID) {
			t.Errorf("%s: the first is %s, want task %d", c.what, res.Tasks[0].TaskID, c.firstID)
		}
	}
	// Another job's query does not see it; every job's does; a count (metrics) does not.
	if res, err := Gather(ctx, store, "j2", core.TaskQuery{}, Options{Wait: 5 * time.Second}); err != nil || len(res.Tasks) != 0 {
		t.Errorf("job j2's query: %v, %v; want none of j1's", res, err)
	}
	if res, err := Gather(ctx, store, "", core.TaskQuery{}, Options{Wait: 5 * time.Second}); err != nil || len(res.Tasks) != 10 {
		t.Errorf("every job's query: %v; want j1's 10", err)
	}
	if res, err := Gather(ctx, store, "", core.TaskQuery{Counts: true}, Options{Wait: time.Second}); err != nil || res.Total != 0 || len(res.Archived) != 0 {
		t.Errorf("a count: %+v, %v; want nothing from archives", res, err)
	}
}

// An archive keeps the newest records that fit its bound, and says how many it left
// out; a task that had not ended when its owner stopped is archived FAILED, saying why.
func TestArchiveFormBounded(t *testing.T) {
	var rep core.TaskReport
	for i := 0; i < 20000; i++ {
		rep.Tasks = append(rep.Tasks, archivedTask(i, "f"+strconv.Itoa(i%7), core.StateFinished))
	}
	rep.Tasks[19999].State = core.StateRunning
	rep.Tasks[19999].Ended = 0
	counts := map[[2]string]int{}
	for _, e := range rep.Tasks {
		counts[[2]string{e.Function, e.State}]++
	}
	rep.Summary = core.SummaryOf(counts) // what Archive's query counts: every record
	core.SortNewest(rep.Tasks)
	const limit = 64 << 10
	b, err := archiveForm(&rep, "p1", 5e12, limit)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > limit {
		t.Fatalf("the archive takes %d bytes, over its bound of %d", len(b), limit)
	}
	got, err := DecodeReport(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Tasks) < 1000 || got.Dropped != int64(20000-len(got.Tasks)) {
		t.Fatalf("kept %d records, dropped %d; want most of what fits, and the rest counted", len(got.Tasks), got.Dropped)
	}
	if first := got.Tasks[0]; first.TaskID != fmt.Sprintf("%032x", 20000) || first.State != core.StateFailed ||
		first.Error == "" || first.Ended != 5e12 {
		t.Errorf("the newest (running when its owner stopped): %+v; want it FAILED, ended at the stop, with a reason", first)
	}
	// The counts are of every record, kept or not, with the running one FAILED.
	sum, failed := 0, 0
	for _, c := range got.Summary {
		sum += c.Count
		if c.State == core.StateRunning {
			t.Errorf("the counts keep %+v", c)
		}
		if c.State == core.StateFailed {
			failed += c.Count
		}
	}
	if sum != 20000 || failed != 1 {
		t.Errorf("the archive counts %d records, %d FAILED; want 20000 and 1: %v", sum, failed, got.Summary)
	}
	// So a query on function and state is answered whole: total and summary.
	f := filterArchived(got, &core.TaskQuery{Function: "f0", State: core.StateFinished, Summary: true, Limit: 10})
	if f.Total != counts[[2]string{"f0", core.StateFinished}] || len(f.Tasks) != 10 || len(f.Summary) != 1 || f.Summary[0].Count != f.Total {
		t.Errorf("function f0 FINISHED of the archive: total %d, %d tasks, summary %v; want total %d, 10 tasks",
			f.Total, len(f.Tasks), f.Summary, counts[[2]string{"f0", core.StateFinished}])
	}
	if empty, err := archiveForm(&core.TaskReport{}, "p1", 1, limit); err != nil || empty != nil {
		t.Errorf("a process that ran nothing archives %d bytes, %v; want nothing", len(empty), err)
	}
}

// The GCS keeps the archives of the last jobs, within a count of jobs and of bytes: the
// oldest jobs' go, whole, first.
func TestPruneArchives(t *testing.T) {
	store := memstore.New(memstore.Options{})
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	put := func(job, node string, ms, size int) {
		if _, err := store.Put(ctx, gcs.TaskArchiveKey(job, node), []byte("x"), 0); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Put(ctx, gcs.TaskArchivedKey(job, node), fmt.Appendf(nil, "%d %d", ms, size), 0); err != nil {
			t.Fatal(err)
		}
	}
	left := func() (jobs []string) {
		for _, job := range []string{"old", "mid", "new", "newer"} {
			n, err := store.Count(ctx, gcs.TaskArchiveOf(job))
			if err != nil {
				t.Fatal(err)
			}
			idx, err := store.Count(ctx, gcs.TaskArchivedOf(job))
			if err != nil {
				t.Fatal(err)
			}
			if n != idx {
				t.Errorf("job %s: %d archives, %d index entries", job, n, idx)
			}
			if n > 0 {
				jobs = append(jobs, job)
			}
		}
		return jobs
	}
	// "old" has a process that archived late: a job's age is its newest archive's.
	put("old", "n1", 1000, 10)
	put("old", "n2", 1001, 10)
	put("mid", "n1", 1002, 10)
	put("mid", "n2", 1500, 10)
	put("new", "n1", 1200, 10)
	put("newer", "n1", 1300, 10)
	if err := pruneArchives(ctx, store, 10, 1000); err != nil {
		t.Fatal(err)
	}
	if got := left(); !reflect.DeepEqual(got, []string{"old", "mid", "new", "newer"}) {
		t.Fatalf("within both bounds: %v left, want all", got)
	}
	if err := pruneArchives(ctx, store, 3, 1000); err != nil {
		t.Fatal(err)
	}
	if got := left(); !reflect.DeepEqual(got, []string{"mid", "new", "newer"}) {
		t.Fatalf("3 jobs kept: %v left, want the oldest gone", got)
	}
	// mid (newest at 1500) 20 bytes, new (1200) 10, newer (1300) 10: new, then newer go.
	if err := pruneArchives(ctx, store, 10, 25); err != nil {
		t.Fatal(err)
	}
	if got := left(); !reflect.DeepEqual(got, []string{"mid"}) {
		t.Errorf("25 bytes kept: %v left, want the jobs archived longest ago gone until 25 bytes are left (mid's 20)", got)
	}
}
