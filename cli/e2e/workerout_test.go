package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWorkerOutputToDriver: what a task prints to its worker process's stdout and stderr
// is shown by its driver (Ray's log_to_driver), on the driver's stderr, each line
// prefixed with the worker process's pid and host: in the output `rayctl job submit`
// follows, in `rayctl job logs`, and on the stderr of a driver run directly (not on its
// stdout, which stays the program's). RAY_LOG_TO_DRIVER=0 turns it off; the lines are
// still in the worker process's log.
func TestWorkerOutputToDriver(t *testing.T) {
	t.Parallel()
	port, addr, sess := newSession(t)
	env := startTwoNodes(t, port, addr, sess)

	type report struct {
		Marker string
		PID    int
		Error  string
	}
	parse := func(stdout string) report {
		t.Helper()
		var r report
		if err := json.Unmarshal([]byte(lastLine(stdout)), &r); err != nil || r.Error != "" || r.Marker == "" || r.PID == 0 {
			t.Fatalf("the workerout driver: %v, %q\n%s", err, r.Error, tail(stdout))
		}
		return r
	}
	lines := func(r report) []string {
		p := fmt.Sprintf("(worker pid=%d, ip=127.0.0.1) ", r.PID)
		return []string{p + "workerout stdout " + r.Marker + "\n", p + "workerout stderr " + r.Marker + "\n"}
	}

	// A submitted job: the lines are in what the submit follows and in its log.
	out, errOut, code := run(t, 2*time.Minute, env, rayctl, "job", "submit", "--", driver, "-check", "workerout")
	if code != 0 {
		t.Fatalf("rayctl job submit: exit %d\n%s\n%s", code, out, tail(errOut))
	}
	r := parse(out)
	for _, l := range lines(r) {
		if !strings.Contains(out, l) {
			t.Errorf("rayctl job submit's output lacks the task's line %q:\n%s", l, tail(out))
		}
	}
	subs, _, _ := run(t, time.Minute, env, rayctl, "job", "list", "-o", "json")
	var list []struct {
		SubmissionID string `json:"submission_id"`
	}
	if err := json.Unmarshal([]byte(subs), &list); err != nil || len(list) != 1 {
		t.Fatalf("rayctl job list: %v\n%s", err, subs)
	}
	jobLog, errOut, code := run(t, time.Minute, env, rayctl, "job", "logs", list[0].SubmissionID)
	if code != 0 {
		t.Fatalf("rayctl job logs: exit %d\n%s", code, errOut)
	}
	for _, l := range lines(r) {
		if !strings.Contains(jobLog, l) {
			t.Errorf("rayctl job logs lacks the task's line %q:\n%s", l, tail(jobLog))
		}
	}

	// A driver run directly: on its stderr, not its stdout.
	out, errOut, code = run(t, 2*time.Minute, env, driver, "-check", "workerout")
	if code != 0 {
		t.Fatalf("the driver: exit %d\n%s\n%s", code, out, tail(errOut))
	}
	r = parse(out)
	for _, l := range lines(r) {
		if !strings.Contains(errOut, l) {
			t.Errorf("the driver's stderr lacks the task's line %q:\n%s", l, tail(errOut))
		}
	}
	if strings.Contains(out, "(worker pid=") {
		t.Errorf("the driver's stdout has worker output:\n%s", tail(out))
	}

	// Turned off: not shown, but in the worker process's log.
	out, errOut, code = run(t, 2*time.Minute, append(env, "RAY_LOG_TO_DRIVER=0"), driver, "-check", "workerout")
	if code != 0 {
		t.Fatalf("the driver with RAY_LOG_TO_DRIVER=0: exit %d\n%s\n%s", code, out, tail(errOut))
	}
	r = parse(out)
	if strings.Contains(errOut, r.Marker) || strings.Contains(errOut, "(worker pid=") {
		t.Errorf("RAY_LOG_TO_DRIVER=0, yet the driver shows worker output:\n%s", tail(errOut))
	}
	files, _ := filepath.Glob(filepath.Join(sess, "*", "logs", "worker-*.log"))
	found := false
	for _, f := range files {
		b, _ := os.ReadFile(f)
		found = found || strings.Contains(string(b), "workerout stdout "+r.Marker)
	}
	if !found {
		t.Errorf("no worker process's log (%v) has the line the task printed with RAY_LOG_TO_DRIVER=0", files)
	}
}
