package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWorkerLogsPruned: when a job's first worker process starts, the agent removes the
// oldest worker logs beyond workerLogsKept, keeping those of worker processes that run
// here and the starting job's, whatever their age. One log per job was kept for ever.
func TestWorkerLogsPruned(t *testing.T) {
	defer func(n int) { workerLogsKept = n }(workerLogsKept)
	workerLogsKept = 3
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logs, 0o700); err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(-time.Hour)
	for i := range 8 { // job0 oldest ... job7 newest
		p := WorkerLogPath(dir, fmt.Sprintf("job%d", i))
		if err := os.WriteFile(p, []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		at := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	m := &workerManager{a: &Agent{cfg: Config{SessionDir: dir}, log: testLogger(t)},
		workers: map[string]*worker{"job1": {job: "job1", p: &proc{}}, "job2": {job: "job2"}}}
	m.pruneWorkerLogs("job0")
	var left []string
	for i := range 8 {
		if _, err := os.Stat(WorkerLogPath(dir, fmt.Sprintf("job%d", i))); err == nil {
			left = append(left, fmt.Sprintf("job%d", i))
		}
	}
	// Kept: job0 (starting), job1 (running), and the 3 newest of the others (job5-7).
	if fmt.Sprint(left) != "[job0 job1 job5 job6 job7]" {
		t.Fatalf("worker logs left: %v, want [job0 job1 job5 job6 job7]", left)
	}
}
