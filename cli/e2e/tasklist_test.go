package e2e

import (
	"encoding/json"
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

	// The job has ended, and its records went with its processes: rayctl list tasks and
	// timeline of it say so, instead of an empty table or trace and nothing else.
	out, errOut, code = run(t, time.Minute, env, rayctl, "list", "jobs", "-o", "json")
	var jobs []struct {
		JobID string `json:"job_id"`
		State string
	}
	if err := json.Unmarshal([]byte(out), &jobs); err != nil || code != 0 || len(jobs) != 1 || jobs[0].State != "SUCCEEDED" {
		t.Fatalf("rayctl list jobs: exit %d, %v, want the driver's job SUCCEEDED\n%s\n%s", code, err, out, errOut)
	}
	job := jobs[0].JobID
	for _, args := range [][]string{
		{"list", "tasks", "--filter", "job_id=" + job},
		{"timeline", "--job", job, "-o", filepath.Join(t.TempDir(), "trace.json")},
	} {
		_, errOut, code := run(t, time.Minute, env, rayctl, args...)
		if code != 0 || !strings.Contains(errOut, "job "+job+" ended (SUCCEEDED") || !strings.Contains(errOut, "keeps no task history") {
			t.Errorf("rayctl %s of the ended job: exit %d, want a line saying the job ended and its task records are gone; stderr:\n%s",
				strings.Join(args, " "), code, errOut)
		}
	}
}
