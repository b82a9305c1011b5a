package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// A driver of a cluster lists its job's tasks once each: its own (the five tasks, the
// actor call, the nested tasks' parent), read directly, and its worker process's (the
// two nested tasks). Its own process's answer through the GCS counted them a second time.
func TestDriverListsTasksOnce(t *testing.T) {
	port, addr, sess := newSession(t)
	env := startTwoNodes(t, port, addr, sess)
	out, errOut, code := run(t, 3*time.Minute, env, driver, "-check", "tasklist")
	var res struct {
		Records, Totals []int
		Duplicated      int
		Summary         map[string]int
		Error           string
	}
	if err := json.Unmarshal([]byte(lastLine(out)), &res); err != nil || code != 0 || res.Error != "" {
		t.Fatalf("driver -check tasklist: exit %d, %v %s\n%s\n%s", code, err, res.Error, out, tail(errOut))
	}
	want := map[string]int{"e2e.Add FINISHED": 7, "e2e.TlParent FINISHED": 1, "e2e.Accel.Add FINISHED": 1}
	for i := range res.Records {
		if res.Records[i] != 9 || res.Totals[i] != 9 {
			t.Errorf("ListTasks, time %d: %d records, total %d; want 9", i+1, res.Records[i], res.Totals[i])
		}
	}
	if res.Duplicated != 0 || !reflect.DeepEqual(res.Summary, want) {
		t.Errorf("ListTasks listed %d task attempts more than once; SummarizeTasks: %v, want %v", res.Duplicated, res.Summary, want)
	}

	// The job has ended, and its processes left their records in the GCS as they stopped
	// (the driver at Shutdown, its worker process at the job's end): rayctl lists them and
	// draws them, as Ray lists an ended job's tasks. Before, they went with the processes.
	out, errOut, code = run(t, time.Minute, env, rayctl, "list", "jobs", "-o", "json")
	var jobs []struct {
		JobID string `json:"job_id"`
		State string
	}
	if err := json.Unmarshal([]byte(out), &jobs); err != nil || code != 0 || len(jobs) != 1 || jobs[0].State != "SUCCEEDED" {
		t.Fatalf("rayctl list jobs: exit %d, %v, want the driver's job SUCCEEDED\n%s\n%s", code, err, out, errOut)
	}
	job := jobs[0].JobID
	var got map[string]int
	// The worker process stops within seconds of the job's end; until then it answers live.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
		out, errOut, code = run(t, time.Minute, env, rayctl, "list", "tasks", "--filter", "job_id="+job, "--limit", "100", "-o", "json")
		var recs []struct{ Name, State string }
		if err := json.Unmarshal([]byte(out), &recs); err != nil || code != 0 {
			t.Fatalf("rayctl list tasks of the ended job: exit %d, %v\n%s\n%s", code, err, out, errOut)
		}
		got = map[string]int{}
		for _, r := range recs {
			got[r.Name+" "+r.State]++
		}
		if reflect.DeepEqual(got, want) || time.Now().After(deadline) {
			break
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rayctl list tasks of the ended job: %v, want %v; stderr:\n%s", got, want, errOut)
	}
	trace := filepath.Join(t.TempDir(), "trace.json")
	if _, errOut, code := run(t, time.Minute, env, rayctl, "timeline", "--job", job, "-o", trace); code != 0 {
		t.Errorf("rayctl timeline of the ended job: exit %d\n%s", code, errOut)
	} else if b, err := os.ReadFile(trace); err != nil || strings.Count(string(b), `"e2e.Add"`) != 7 {
		t.Errorf("the ended job's timeline: %v; want the seven e2e.Add tasks in it:\n%.2000s", err, b)
	}
}
