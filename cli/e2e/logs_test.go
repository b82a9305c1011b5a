package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuf is a buffer a process writes while the test reads it.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestLogs: `rayctl logs` on a head and an agent (each its own session dir, so one can be
// stopped alone): a submitted job's output, followed to its end and its tail; then a
// driver's job: a task's log is the lines the task printed (its range of its worker
// process's log), not the actor's method's, which ran before in a process of the same job;
// an actor call's log is the line its method printed; the actor's log (its process's)
// holds it; --tail; the errors and exit codes of an unknown ID; --follow of a task that
// ended prints its output and ends; --follow of a worker process prints what a task
// prints after it started and ends when the process ends; each of the later tasks' logs is
// its own output; a worker process of a stopped agent is exit 5.
func TestLogs(t *testing.T) {
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	sess, sess2 := t.TempDir(), t.TempDir()
	t.Cleanup(func() {
		run(t, time.Minute, nil, rayctl, "stop", "--force", "--session-dir", sess2)
		run(t, time.Minute, nil, rayctl, "stop", "--force", "--session-dir", sess)
		checkNothingLeft(t)
	})
	startArgs := []string{"start", "--num-cpus", "2", "--object-store-memory", "512MiB", "--metrics-port", "-1"}
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, append(startArgs, "--session-dir", sess, "--head", "--port", strconv.Itoa(port), "--dashboard-port", "-1")...)
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	tok := []string{"RAY_GO_TOKEN=" + printedToken(t, out)}
	if out, errOut, code = run(t, 90*time.Second, tok, rayctl, append(startArgs, "--session-dir", sess2, "--address", addr)...); code != 0 {
		t.Fatalf("rayctl start --address: exit %d\n%s\n%s", code, out, errOut)
	}
	rayctlLogs := func(args ...string) (string, string, int) {
		t.Helper()
		return run(t, time.Minute, tok, rayctl, append([]string{"logs", "--address", addr}, args...)...)
	}

	// A submitted job's output: followed to its end, then its last 2 lines.
	out, errOut, code = run(t, time.Minute, tok, rayctl, "job", "submit", "--address", addr, "--no-wait", "--", "/bin/sh", "-c", "echo job-marker; echo two; echo three")
	sub := strings.TrimSpace(out)
	if code != 0 || sub == "" {
		t.Fatalf("rayctl job submit --no-wait: exit %d\n%s\n%s", code, out, errOut)
	}
	if out, errOut, code = rayctlLogs("job", sub, "--follow"); code != 0 || out != "job-marker\ntwo\nthree\n" {
		t.Fatalf("rayctl logs job %s --follow: exit %d\n%q\n%s", sub, code, out, errOut)
	}
	if out, errOut, code = rayctlLogs("job", sub, "--tail", "2"); code != 0 || out != "two\nthree\n" {
		t.Fatalf("rayctl logs job %s --tail 2: exit %d\n%q\n%s", sub, code, out, errOut)
	}

	// The job: an actor and a task print their markers, then it waits for its stdin.
	drv := exec.Command(driver, "-check", "logs")
	drv.Env = tagEnv(t, append([]string{"RAY_ADDRESS=" + addr}, tok...)...)
	var drvErr lockedBuf
	drv.Stderr = &drvErr
	drvIn, err := drv.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	drvOut, err := drv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := drv.Start(); err != nil {
		t.Fatal(err)
	}
	drvDone := make(chan struct{}) // closed once drv.Wait returned drvExit
	var drvExit error
	defer func() {
		drvIn.Close()
		select {
		case <-drvDone:
		case <-time.After(30 * time.Second):
			drv.Process.Kill()
			<-drvDone
		}
	}()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(drvOut)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		drvExit = drv.Wait()
		close(drvDone)
	}()
	expect := func(prefix string) string {
		t.Helper()
		timeout := time.After(2 * time.Minute)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the driver ended before printing %q\n%s", prefix, tail(drvErr.String()))
				}
				if strings.HasPrefix(l, prefix) {
					return l
				}
			case <-timeout:
				t.Fatalf("the driver did not print %q within 2 minutes\n%s", prefix, tail(drvErr.String()))
			}
		}
	}
	actorID := strings.TrimSpace(strings.TrimPrefix(expect("logs ready"), "logs ready"))

	out, errOut, code = run(t, time.Minute, tok, rayctl, "list", "tasks", "--address", addr, "--filter", "name=e2e.Say", "-o", "json")
	var tasks []struct {
		TaskID string `json:"task_id"`
		Node   string `json:"node"`
	}
	if err := json.Unmarshal([]byte(out), &tasks); err != nil || code != 0 || len(tasks) != 1 || tasks[0].Node == "" {
		t.Fatalf("rayctl list tasks --filter name=e2e.Say: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	task := tasks[0].TaskID
	// The actor's call is listed with the node it ran on and when it started.
	out, errOut, code = run(t, time.Minute, tok, rayctl, "list", "tasks", "--address", addr, "--filter", "name=e2e.Accel.Shout", "-o", "json")
	var calls []struct {
		TaskID  string `json:"task_id"`
		Type    string `json:"type"`
		Node    string `json:"node"`
		Worker  string `json:"worker"`
		Started string `json:"started"`
	}
	if err := json.Unmarshal([]byte(out), &calls); err != nil || code != 0 || len(calls) != 1 || calls[0].Type != "ACTOR_TASK" ||
		calls[0].Node == "" || calls[0].Started == "" || calls[0].Worker != actorID {
		t.Fatalf("rayctl list tasks --filter name=e2e.Accel.Shout: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}

	// A task's log, by its ID and by 8 characters of it: what the task printed, not the
	// actor's method's line (printed before, by a process of the same job).
	const sayOut = "e2e-log-marker\nsay line 1\nsay line 2\nsay line 3\nsay line 4\nsay line 5\n"
	for _, id := range []string{task, task[:8]} {
		out, errOut, code = rayctlLogs("task", id)
		if code != 0 || !strings.Contains(out, sayOut) || strings.Contains(out, "e2e-actor-marker") {
			t.Fatalf("rayctl logs task %s: exit %d\n%s\n%s", id, code, out, errOut)
		}
	}
	// An actor call's log: the line its method printed.
	out, errOut, code = rayctlLogs("task", calls[0].TaskID)
	if code != 0 || !strings.Contains(out, "e2e-actor-marker\n") || strings.Contains(out, "e2e-log-marker") {
		t.Fatalf("rayctl logs task %s (the actor call): exit %d\n%s\n%s", calls[0].TaskID, code, out, errOut)
	}
	t.Logf("rayctl logs task %s:\n%s", task[:8], out)
	// Tiny calls (too short to read the log's end each): each call's log is a range that
	// holds its line (and maybe its batch-mates'), not the process's whole log; `logs
	// actor` of a call's ID is the same.
	out, errOut, code = run(t, time.Minute, tok, rayctl, "list", "tasks", "--address", addr, "--filter", "name=e2e.Accel.Echo", "-o", "json")
	var echoes []struct {
		TaskID string `json:"task_id"`
	}
	if err := json.Unmarshal([]byte(out), &echoes); err != nil || code != 0 || len(echoes) != 3 {
		t.Fatalf("rayctl list tasks --filter name=e2e.Accel.Echo: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	for _, e := range echoes {
		call, errOut, code := rayctlLogs("task", e.TaskID)
		if code != 0 || !strings.Contains(call, "e2e-echo-") || strings.Contains(call, "e2e-log-marker") || strings.Contains(call, "e2e-actor-marker") {
			t.Fatalf("rayctl logs task %s (a tiny actor call): exit %d\n%s\n%s", e.TaskID, code, call, errOut)
		}
		if viaActor, errOut, code := rayctlLogs("actor", e.TaskID[:10]); code != 0 || viaActor != call {
			t.Fatalf("rayctl logs actor %s (a call's ID): exit %d\n%q, want %q\n%s", e.TaskID[:10], code, viaActor, call, errOut)
		}
	}
	// The actor's log.
	out, errOut, code = rayctlLogs("actor", actorID)
	if code != 0 || !strings.Contains(out, "e2e-actor-marker\n") {
		t.Fatalf("rayctl logs actor %s: exit %d\n%s\n%s", actorID, code, out, errOut)
	}
	// The actor's log split per call: each call's lines under a line naming it, oldest
	// first, without the task's output that the same process wrote in between.
	out, errOut, code = rayctlLogs("actor", actorID, "--calls", "10")
	if code != 0 || strings.Contains(out, "e2e-log-marker") || strings.Contains(out, "not known") ||
		!strings.Contains(out, "e2e.Accel.Shout, incarnation 1, FINISHED) ---\ne2e-actor-marker\n") ||
		strings.Index(out, "e2e-actor-marker") > strings.Index(out, "e2e-echo-a") || strings.Count(out, "e2e-echo-") != 3 ||
		strings.Count(out, "e2e.Accel.Echo, incarnation 1") != 3 {
		t.Fatalf("rayctl logs actor %s --calls 10: exit %d\n%s\n%s", actorID, code, out, errOut)
	}
	t.Logf("rayctl logs actor %s --calls 10:\n%s", actorID[:8], out)
	if _, errOut, code = rayctlLogs("task", task, "--calls", "1"); code != 1 || !strings.Contains(errOut, "--calls N (N > 0) is for") {
		t.Fatalf("rayctl logs task --calls 1: exit %d\n%s", code, errOut)
	}
	// The worker process by its node ID: the same log as the task's.
	out, errOut, code = rayctlLogs("worker", tasks[0].Node, "--tail", "-1")
	if code != 0 || !strings.Contains(out, "e2e-log-marker\n") {
		t.Fatalf("rayctl logs worker %s: exit %d\n%s\n%s", tasks[0].Node, code, out, errOut)
	}
	// --tail 3: the last three lines of the task's output.
	tail3, errOut, code := rayctlLogs("task", task, "--tail", "3")
	if code != 0 || !strings.HasSuffix(tail3, "say line 3\nsay line 4\nsay line 5\n") || strings.Count(tail3, "\n") != 3 {
		t.Fatalf("rayctl logs task --tail 3: exit %d\n%q\n%s", code, tail3, errOut)
	}
	whole, _, code := rayctlLogs("task", task, "--tail", "-1")
	if code != 0 || !strings.Contains(whole, sayOut) || strings.Contains(whole, "e2e-actor-marker") {
		t.Fatalf("rayctl logs task --tail -1: exit %d: %q", code, whole)
	}
	// --follow of a task that ended: its output, and the end.
	out, errOut, code = rayctlLogs("task", task, "--follow")
	if code != 0 || !strings.Contains(out, sayOut) || !strings.Contains(errOut, "that is all its output") {
		t.Fatalf("rayctl logs task --follow: exit %d\n%s\n%s", code, out, errOut)
	}

	// Unknown IDs: exit 1 and what to run instead.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"task", "0123456789abcdef0123"}, "no task"},
		{[]string{"actor", "0123456789abcdef"}, "no actor"},
		{[]string{"worker", "fedcba9876543210"}, "no worker process"},
		{[]string{"worker", "4194000"}, "no worker process with pid"},
		{[]string{"job", "nosuchjob"}, "no job or submission"},
		{[]string{"cluster", "x"}, "use task, actor, worker or job"},
	} {
		out, errOut, code = rayctlLogs(c.args...)
		if code != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("rayctl logs %v: exit %d (want 1)\n%s\n%s", c.args, code, out, errOut)
		}
	}
	// Without credentials nothing is readable.
	out, errOut, code = run(t, time.Minute, nil, rayctl, "logs", "--address", addr, "task", task)
	if code != 8 || strings.Contains(out, "e2e-log-marker") {
		t.Errorf("rayctl logs without the token: exit %d (want 8)\n%s\n%s", code, out, errOut)
	}

	// --follow of the worker process that ran the task: what a task prints after the
	// follow started arrives; the follow ends when the worker process ends (the job ends
	// when the driver does).
	fol := exec.Command(rayctl, "logs", "--address", addr, "worker", tasks[0].Node, "--follow", "--tail", "0")
	fol.Env = tagEnv(t, tok...)
	var folOut, folErr lockedBuf
	fol.Stdout, fol.Stderr = &folOut, &folErr
	if err := fol.Start(); err != nil {
		t.Fatal(err)
	}
	folDone := make(chan struct{}) // closed once fol.Wait returned folExit
	var folExit error
	go func() {
		folExit = fol.Wait()
		close(folDone)
	}()
	defer func() {
		select {
		case <-folDone:
		default:
			fol.Process.Kill()
			<-folDone
		}
	}()
	time.Sleep(time.Second) // let it take the log's size first (what comes before is not printed)
	if _, err := io.WriteString(drvIn, "follow\n"); err != nil {
		t.Fatal(err)
	}
	expect("followed")
	// The nodes of the job's two worker processes (the follow's tasks ran on each).
	out, errOut, code = run(t, time.Minute, tok, rayctl, "list", "tasks", "--address", addr, "--filter", "name=e2e.Say", "-o", "json")
	if err := json.Unmarshal([]byte(out), &tasks); err != nil || code != 0 {
		t.Fatalf("rayctl list tasks: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	seen := map[string]bool{}
	var nodes []string
	for _, tk := range tasks {
		if !seen[tk.Node] {
			seen[tk.Node] = true
			nodes = append(nodes, tk.Node)
		}
	}
	if len(nodes) != 2 {
		t.Fatalf("the e2e.Say tasks ran on %v, want the job's 2 worker processes", nodes)
	}
	// Each task's log is its own output: the first task's marker, or a later one's.
	for _, tk := range tasks {
		out, errOut, code = rayctlLogs("task", tk.TaskID)
		first, later := strings.Contains(out, "e2e-log-marker\n"), strings.Contains(out, "e2e-follow-marker\n")
		if code != 0 || first == later || !strings.Contains(out, "say line 5\n") {
			t.Errorf("rayctl logs task %s (on %s): exit %d\n%s\n%s", tk.TaskID, tk.Node, code, out, errOut)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(folOut.String(), "e2e-follow-marker\n") {
		if time.Now().After(deadline) {
			t.Fatalf("rayctl logs --follow did not print the new marker within a minute\n%s\n%s", folOut.String(), folErr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if strings.Contains(folOut.String(), "e2e-log-marker") {
		t.Errorf("rayctl logs --follow --tail 0 printed the older output:\n%s", folOut.String())
	}
	drvIn.Close()
	select {
	case <-drvDone:
		if drvExit != nil {
			t.Fatalf("driver: %v\n%s", drvExit, tail(drvErr.String()))
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("the driver did not end\n%s", tail(drvErr.String()))
	}
	select {
	case <-folDone:
		if folExit != nil || !strings.Contains(folErr.String(), "ended") {
			t.Fatalf("rayctl logs --follow: %v\n%s", folExit, folErr.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("rayctl logs --follow did not end within a minute of the job's end\n%s", folErr.String())
	}

	// A job's task records: the worker processes keep what the program's ray.WithTaskEvents
	// says, as its driver does (they run the same program with the same flags). 5,000
	// nested tasks, owned by the worker process that runs their parent: all listed by
	// default, at most one chunk (4,096) with a budget of one chunk.
	listed := func(extra ...string) int {
		t.Helper()
		out, errOut, code := run(t, 2*time.Minute, append([]string{"RAY_ADDRESS=" + addr}, tok...), driver, append([]string{"-check", "taskevents"}, extra...)...)
		var res struct {
			Listed int    `json:"listed"`
			Error  string `json:"error"`
		}
		if err := json.Unmarshal([]byte(lastLine(out)), &res); code != 0 || err != nil || res.Error != "" {
			t.Fatalf("driver -check taskevents %v: exit %d, %v %s\n%s\n%s", extra, code, err, res.Error, out, tail(errOut))
		}
		return res.Listed
	}
	if n := listed(); n != 5000 {
		t.Fatalf("nested tasks listed with the default budget: %d, want 5000", n)
	}
	if n := listed("-task-events", "4096"); n <= 0 || n > 4096 {
		t.Fatalf("nested tasks listed with ray.WithTaskEvents(4096): %d, want 1..4096 (the worker process's budget)", n)
	}

	// The job's worker processes (one per agent) by node ID: after the second agent stops,
	// its process's log is exit 5, the head's still reads.
	if out, errOut, code = run(t, time.Minute, nil, rayctl, "stop", "--session-dir", sess2); code != 0 {
		t.Fatalf("rayctl stop (the agent): exit %d\n%s\n%s", code, out, errOut)
	}
	codes := []int{}
	for _, n := range nodes {
		out, errOut, code = rayctlLogs("worker", n)
		codes = append(codes, code)
		switch code {
		case 0:
			if !strings.Contains(out, "e2e-follow-marker") {
				t.Errorf("rayctl logs worker %s (head): no marker\n%s", n, out)
			}
		case 5:
			if !strings.Contains(errOut, "not running") {
				t.Errorf("rayctl logs worker %s (stopped agent): %s", n, errOut)
			}
		}
	}
	sort.Ints(codes)
	if len(codes) != 2 || codes[0] != 0 || codes[1] != 5 {
		t.Fatalf("rayctl logs worker of the head's and the stopped agent's processes: exit codes %v, want [0 5]", codes)
	}
}
