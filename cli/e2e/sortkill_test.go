package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSortWorkerKilled: a head and one more agent (2 CPUs, a 256 MiB store each), the
// driver's sortdeath check (400,000 records made by map tasks in 16 blocks, sorted, read
// back with IterBatches) SIGKILLs one of the job's two worker processes at the first sorted
// batch; the output must still be complete, in order, with the input's checksum. A driver
// that has not ended within its bound is sent SIGQUIT (its goroutines go to stderr) and
// the test fails with that dump and the tail of every agent's and worker's log, so a hang
// can be told apart from a slow run and diagnosed.
func TestSortWorkerKilled(t *testing.T) {
	port, addr, sess := newSession(t)
	var tok []string
	start := func(args ...string) string {
		t.Helper()
		out, errOut, code := run(t, 90*time.Second, tok, rayctl, append([]string{"start", "--session-dir", sess, "--num-cpus", "2", "--object-store-memory", "256MiB"}, args...)...)
		if code != 0 {
			t.Fatalf("rayctl start %v: exit %d\n%s\n%s", args, code, out, errOut)
		}
		return out
	}
	tok = []string{"RAY_GO_TOKEN=" + printedToken(t, start("--head", "--port", strconv.Itoa(port)))}
	start("--address", addr)

	cmd := exec.Command(driver, "-check", "sortdeath")
	cmd.Env = tagEnv(t, append([]string{"RAY_ADDRESS=" + addr}, tok...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(3 * time.Minute):
		// A hang: the job's tasks that have not finished (the state API), the driver's
		// goroutines (Go prints them on SIGQUIT and exits), then the logs.
		open := unfinishedTasks(t, tok, addr)
		workers := quitWorkers(t, sess, cmd.Process.Pid)
		cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		t.Fatalf("the sortdeath driver did not end within 3 minutes (hung)\nstdout: %s\ntasks not finished:\n%s\nworker processes' goroutines:\n%s\ndriver stderr (goroutines):\n%s\nlogs:\n%s",
			stdout.String(), open, workers, stderr.String(), sessionLogs(sess, 40))
	}
	var rep struct {
		Nodes     []node
		Sortdeath struct {
			Victim           string
			Rows             int64 `json:"rows"`
			WantRows         int64 `json:"want_rows"`
			Sum              string
			WantSum          string `json:"want_sum"`
			Batches          int64
			BatchesAfterKill int64 `json:"batches_after_kill"`
			Killed           bool
		}
		Error string
	}
	if jerr := json.Unmarshal([]byte(lastLine(stdout.String())), &rep); jerr != nil || err != nil {
		t.Fatalf("driver: %v, %v\nstdout: %s\nstderr: %s\nlogs:\n%s", err, jerr, stdout.String(), tail(stderr.String()), sessionLogs(sess, 40))
	}
	s := rep.Sortdeath
	if len(rep.Nodes) != 2 {
		t.Errorf("the job had %d nodes at its start, want 2", len(rep.Nodes))
	}
	if !s.Killed || s.BatchesAfterKill == 0 {
		t.Errorf("no sorted batch arrived after the kill (killed %v, batches %d, after the kill %d)", s.Killed, s.Batches, s.BatchesAfterKill)
	}
	if s.Rows != s.WantRows || s.WantRows != 400_000 {
		t.Errorf("the sorted output has %d rows, want %d (400,000)", s.Rows, s.WantRows)
	}
	if s.Sum != s.WantSum || s.Sum == "" {
		t.Errorf("the sorted output's checksum is %q, the input's %q", s.Sum, s.WantSum)
	}
	if strings.TrimSpace(rep.Error) != "" {
		t.Errorf("driver error: %s", rep.Error)
	}
	t.Logf("victim %s: %d batches, %d after the kill, %d rows", s.Victim, s.Batches, s.BatchesAfterKill, s.Rows)
}

// unfinishedTasks lists the tasks of the cluster's jobs that are not FINISHED, one a line,
// as the state API (rayctl list tasks) has them: what a hung job waits for.
func unfinishedTasks(t *testing.T, tok []string, addr string) string {
	t.Helper()
	out, errOut, code := run(t, time.Minute, tok, rayctl, "list", "tasks", "--address", addr, "-o", "json", "--limit", "0")
	if code != 0 {
		return fmt.Sprintf("rayctl list tasks: exit %d: %s", code, errOut)
	}
	var raw []map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		return fmt.Sprintf("rayctl list tasks: %v: %s", err, tail(out))
	}
	var b strings.Builder
	n := 0
	for _, r := range raw {
		if r["state"] != "FINISHED" {
			j, _ := json.Marshal(r)
			fmt.Fprintf(&b, "%s\n", j)
			n++
		}
	}
	return fmt.Sprintf("%d task attempts listed, %d not FINISHED:\n%s", len(raw), n, b.String())
}

// quitWorkers sends SIGQUIT to the job's worker processes (the driver binary, other than
// the driver itself) and returns what each wrote from then on to its log: its goroutines.
func quitWorkers(t testing.TB, sess string, driverPID int) string {
	logs, _ := filepath.Glob(filepath.Join(sess, "*", "logs", "worker-*.log"))
	sizes := map[string]int64{}
	for _, f := range logs {
		if st, err := os.Stat(f); err == nil {
			sizes[f] = st.Size()
		}
	}
	for _, p := range ourProcesses(t) {
		pid, err := strconv.Atoi(strings.Fields(p)[0])
		if err == nil && pid != driverPID && strings.Contains(p, driver) && !strings.Contains(p, "rayctl") {
			syscall.Kill(pid, syscall.SIGQUIT)
		}
	}
	time.Sleep(3 * time.Second)
	var b strings.Builder
	for _, f := range logs {
		data, err := os.ReadFile(f)
		if err != nil || int64(len(data)) < sizes[f] {
			continue
		}
		fmt.Fprintf(&b, "== %s\n%s\n", f, data[sizes[f]:])
	}
	return b.String()
}
