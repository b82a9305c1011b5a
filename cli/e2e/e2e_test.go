// Package e2e holds the multi-process tests of cluster mode: they build rayctl and a test
// driver (./driver), start a head and two more node agents on 127.0.0.1 with rayctl, run
// drivers against the cluster, and stop everything, checking that no process is left.
// The tests that mostly wait (leases, timeouts, a head kept down) run in parallel, eight at
// a time unless -parallel says otherwise; each process carries its test's name in its
// environment, so each test checks its own, and a reaper kills whatever the test binary
// leaves once it has ended, also by -timeout (procs_test.go).
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ray-go/ray/cli"
	"github.com/ray-go/ray/internal/base/netx"
)

var (
	rayctl     string // built binaries
	driver     string
	etcdmember string
)

func TestMain(m *testing.M) {
	if owner := os.Getenv(reaperEnv); owner != "" {
		reap(owner)
		return
	}
	// Whatever the tests start is killed once this binary has exited, even by -timeout's
	// panic (which runs no cleanup): see startReaper.
	if err := startReaper(); err != nil {
		fmt.Fprintln(os.Stderr, "start the reaper:", err)
		os.Exit(1)
	}
	os.Setenv(ownerEnv, strconv.Itoa(os.Getpid()))
	dir := os.Getenv(binDirEnv) // set by TestTimeoutLeavesNothing for the binary it runs
	own := dir == ""
	if own {
		var err error
		if dir, err = os.MkdirTemp("", "ray-go-e2e-bin-"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	rayctl, driver, etcdmember = filepath.Join(dir, "rayctl"), filepath.Join(dir, "driver"), filepath.Join(dir, "etcdmember")
	for bin, pkg := range map[string]string{rayctl: "../rayctl", driver: "./driver", etcdmember: "./etcdmember"} {
		if !own {
			break
		}
		cmd := exec.Command("go", "build", "-o", bin, pkg)
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", pkg, err, out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	// The tests marked parallel mostly wait (on leases, timeouts, a head kept down), so
	// more of them run at once than -parallel's default (GOMAXPROCS), unless it was given.
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", "8")
	}
	code := m.Run()
	// Each test checks that its own processes are gone; one that escaped its tag (started
	// without it) would show here.
	if left := anyOfOurProcesses(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "processes left behind by the tests: %v\n", left)
		for _, p := range left {
			syscall.Kill(p.pid, syscall.SIGKILL)
		}
		if code == 0 {
			code = 1
		}
	}
	if own {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// freePort is a port for a head agent (its GCS port; the join endpoint takes the next
// one), outside the ephemeral range other processes' connections draw from.
// newSession picks a free GCS port on 127.0.0.1 (and its address) and a session directory
// for a cluster the test starts with rayctl, and stops whatever runs there when the test
// ends, checking that no process is left.
func newSession(t *testing.T) (port int, addr, sess string) {
	t.Helper()
	port = freePort(t)
	addr = "127.0.0.1:" + strconv.Itoa(port)
	sess = t.TempDir()
	t.Cleanup(func() {
		if t.Failed() {
			// What every process of the cluster said last: a failure that shows only
			// its symptom (an actor DEAD, a job FAILED) is diagnosable from CI's log.
			t.Logf("the session's logs (last lines of each, no DEBUG):\n%s", sessionLogs(sess, 40))
		}
		run(t, time.Minute, nil, rayctl, "stop", "--force", "--session-dir", sess)
		checkNothingLeft(t)
	})
	return port, addr, sess
}

func freePort(t *testing.T) int {
	t.Helper()
	p, err := netx.FreePorts("127.0.0.1", 2)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// run runs a binary with a timeout and returns its stdout, stderr and exit code.
func run(t *testing.T, timeout time.Duration, env []string, bin string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = tagEnv(t, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if ctx.Err() != nil {
			t.Fatalf("%s %s: did not finish within %v\nstdout: %s\nstderr: %s", filepath.Base(bin), strings.Join(args, " "), timeout, stdout.String(), tail(stderr.String()))
		}
	}
	return stdout.String(), stderr.String(), code
}

func tail(s string) string {
	if len(s) > 4000 {
		return "..." + s[len(s)-4000:]
	}
	return s
}

// startTwoNodes starts a head and one more agent (2 CPUs and a 256 MiB store each) in the
// session and returns a driver's environment for them (address and token).
func startTwoNodes(t *testing.T, port int, addr, sess string) []string {
	t.Helper()
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess, "--num-cpus", "2", "--object-store-memory", "256MiB")
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	tok := []string{"RAY_GO_TOKEN=" + printedToken(t, out)}
	out, errOut, code = run(t, 90*time.Second, tok, rayctl, "start", "--address", addr, "--session-dir", sess, "--num-cpus", "2", "--object-store-memory", "256MiB")
	if code != 0 {
		t.Fatalf("rayctl start --address: exit %d\n%s\n%s", code, out, errOut)
	}
	return append([]string{"RAY_ADDRESS=" + addr}, tok...)
}

// startReady starts the test driver with -check check and the extra env, and waits for
// the line ready it prints once set up; if that does not come, the process is stopped and
// the test fails with what it wrote on stderr. The caller stops the process (Kill, Wait).
func startReady(t *testing.T, driver, check string, env []string, ready string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(driver, "-check", check)
	cmd.Env = tagEnv(t, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, len(ready))
	if _, err := io.ReadFull(stdout, line); err != nil || string(line) != ready {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the %s driver did not get ready: %q, %v\n%s", check, line, err, tail(stderr.String()))
	}
	return cmd
}

// sessionLogs returns the last n lines that are not DEBUG of every agent's and worker
// process's log in a session directory, for a failure message, and the start of any Go
// panic or fatal error in them (a process that crashed says why there, not in a log line).
func sessionLogs(sess string, n int) string {
	files, _ := filepath.Glob(filepath.Join(sess, "*", "logs", "*.log"))
	more, _ := filepath.Glob(filepath.Join(sess, "logs", "*.log"))
	var b strings.Builder
	for _, f := range append(files, more...) {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		all := strings.Split(string(data), "\n")
		var lines []string
		for _, l := range all {
			if strings.HasPrefix(l, "time=") && !strings.Contains(l, "level=DEBUG") {
				lines = append(lines, l)
			}
		}
		lines = lines[max(0, len(lines)-n):]
		fmt.Fprintf(&b, "== %s\n%s\n", strings.TrimPrefix(f, sess+"/"), strings.Join(lines, "\n"))
		for i, l := range all {
			if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
				fmt.Fprintf(&b, "== %s crashed:\n%s\n", strings.TrimPrefix(f, sess+"/"), strings.Join(all[i:min(len(all), i+40)], "\n"))
				break
			}
		}
	}
	return b.String()
}

type status struct {
	Nodes []struct {
		AgentID string             `json:"agent_id"`
		Alive   bool               `json:"alive"`
		Head    bool               `json:"head"`
		Total   map[string]float64 `json:"resources_total"`
	} `json:"nodes"`
	Jobs []struct {
		JobID   string `json:"job_id"`
		State   string `json:"state"`
		Message string `json:"message"`
	} `json:"jobs"`
}

type node struct {
	ID        string
	PID       int
	Resources map[string]float64
}

type hashed struct {
	Node   string
	Size   int
	SHA256 string
}

type report struct {
	Nodes    []node
	Sum      int
	Spread   map[string]int
	Locality struct {
		Target string
		Ran    []string
	}
	Bigobject struct {
		On, Read      hashed
		RemoteSeconds float64 `json:"remote_seconds"`
	}
	Actor struct {
		Node string
		Sum  int
	}
	Error string
}

// TestCluster runs the whole multi-process scenario on one cluster: a head and two more
// agents (one with a custom resource), drivers run directly and through rayctl job
// submit, a driver killed mid-run, and the clear errors of a wrong address.
func TestCluster(t *testing.T) {
	t.Parallel() // mostly idle: it waits out a killed driver's lease
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	sess := t.TempDir()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			run(t, time.Minute, nil, rayctl, "stop", "--force", "--session-dir", sess)
		}
		checkNothingLeft(t)
	})

	var tok []string // RAY_GO_TOKEN=..., as a user exports it
	start := func(args ...string) string {
		t.Helper()
		out, errOut, code := run(t, 90*time.Second, tok, rayctl, append([]string{"start", "--session-dir", sess, "--num-cpus", "2", "--object-store-memory", "1GiB"}, args...)...)
		if code != 0 {
			t.Fatalf("rayctl start %v: exit %d\n%s\n%s", args, code, out, errOut)
		}
		if !strings.Contains(out, "RAY_ADDRESS="+addr) {
			t.Fatalf("rayctl start %v does not print the address to export:\n%s", args, out)
		}
		return out
	}
	tok = []string{"RAY_GO_TOKEN=" + printedToken(t, start("--head", "--port", strconv.Itoa(port)))}

	// Secure by default: an agent without the token, or with a wrong one, is refused with
	// its own exit code and a message that says what to pass.
	out, errOut, code := run(t, time.Minute, nil, rayctl, "start", "--address", addr, "--session-dir", t.TempDir())
	if code != 8 || !strings.Contains(errOut, "--token") {
		t.Fatalf("an agent without the token: exit %d (want 8)\n%s\n%s", code, out, errOut)
	}
	wrong := []byte(strings.TrimPrefix(tok[0], "RAY_GO_TOKEN="))
	// Another hex digit (flipping a bit could make a non-hex character, a malformed token
	// rather than a wrong one).
	if wrong[5] == '0' {
		wrong[5] = '1'
	} else {
		wrong[5] = '0'
	}
	out, errOut, code = run(t, time.Minute, []string{"RAY_GO_TOKEN=" + string(wrong)}, rayctl, "start", "--address", addr, "--session-dir", t.TempDir())
	if code != 8 || !strings.Contains(errOut, "refused") {
		t.Fatalf("an agent with a wrong token: exit %d (want 8)\n%s\n%s", code, out, errOut)
	}
	// A job submitted without the token: refused, nothing runs.
	out, errOut, code = run(t, time.Minute, nil, rayctl, "job", "submit", "--address", addr, "--", "/bin/sh", "-c", "id")
	if code != 8 || !strings.Contains(errOut, "--token") {
		t.Fatalf("job submit without the token: exit %d (want 8)\n%s\n%s", code, out, errOut)
	}
	// A driver without the token: a clear error at once.
	_, errOut, code = run(t, time.Minute, []string{"RAY_ADDRESS=" + addr}, driver, "-check", "sum")
	if code == 0 || !strings.Contains(errOut, "RAY_GO_TOKEN") {
		t.Fatalf("driver without the token: exit %d\n%s", code, tail(errOut))
	}

	start("--address", addr)
	start("--address", addr, "--resources", `{"accel":1}`)

	// A second head on the same port: a clear error and its exit code.
	out, errOut, code = run(t, time.Minute, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", t.TempDir())
	if code != 3 || !strings.Contains(out+errOut, strconv.Itoa(port)) {
		t.Fatalf("a second head on port %d: exit %d (want 3)\n%s\n%s", port, code, out, errOut)
	}

	var st status
	out, errOut, code = run(t, time.Minute, tok, rayctl, "status", "--address", addr, "-o", "json")
	if code != 0 {
		t.Fatalf("rayctl status: exit %d\n%s", code, errOut)
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("rayctl status -o json: %v\n%s", err, out)
	}
	alive := 0
	for _, n := range st.Nodes {
		if n.Alive {
			alive++
		}
	}
	if alive != 3 {
		t.Fatalf("rayctl status reports %d alive nodes, want 3:\n%s", alive, out)
	}

	// The driver: tasks over the nodes, locality, a 200 MiB object across nodes, an actor
	// that needs a custom resource.
	env := append([]string{"RAY_ADDRESS=" + addr}, tok...)
	out, errOut, code = run(t, 3*time.Minute, env, driver, "-check", "all", "-big-mib", "200")
	var rep report
	if err := json.Unmarshal([]byte(lastLine(out)), &rep); err != nil || code != 0 {
		t.Fatalf("driver: exit %d, %v\nstdout: %s\nstderr: %s", code, err, out, tail(errOut))
	}
	if len(rep.Nodes) != 3 {
		t.Fatalf("the job has %d nodes, want one per agent (3): %+v", len(rep.Nodes), rep.Nodes)
	}
	if rep.Sum != 5050 {
		t.Errorf("sum of 100 tasks = %d, want 5050", rep.Sum)
	}
	if len(rep.Spread) < 2 {
		t.Errorf("spread tasks ran on %d node(s): %v", len(rep.Spread), rep.Spread)
	}
	for _, n := range rep.Locality.Ran {
		if n != rep.Locality.Target {
			t.Errorf("a task given an 8 MiB ref on %s ran on %s", rep.Locality.Target, n)
		}
	}
	b := rep.Bigobject
	if b.On.Node == b.Read.Node || b.On.Size != 200<<20 || b.Read.Size != 200<<20 || b.On.SHA256 != b.Read.SHA256 {
		t.Errorf("200 MiB object: made %+v, read %+v", b.On, b.Read)
	}
	t.Logf("200 MiB object read on another node in %.2f s (task included)", b.RemoteSeconds)
	accel := ""
	for _, n := range rep.Nodes {
		if n.Resources["accel"] > 0 {
			accel = n.ID
		}
	}
	if rep.Actor.Node != accel || rep.Actor.Sum != 1275 {
		t.Errorf("actor needing accel ran on %s (accel node %s), sum %d (want 1275)", rep.Actor.Node, accel, rep.Actor.Sum)
	}

	// A worker process killed while tasks run on it: they are retried on the other nodes,
	// every result is right, the job's node list has the node dead (Alive false, with why),
	// and an object that lived only there is recreated from lineage with the same bytes.
	out, errOut, code = run(t, 2*time.Minute, env, driver, "-check", "nodedeath")
	var death struct {
		Nodedeath struct {
			Victim            string
			Tasks, Wrong      int
			Seconds           float64
			VictimListedAfter bool   `json:"victim_listed_after"`
			VictimDeadReason  string `json:"victim_dead_reason"`
			RecreatedSame     bool   `json:"recreated_same"`
			RecreatedOn       string `json:"recreated_on"`
		}
	}
	if err := json.Unmarshal([]byte(lastLine(out)), &death); err != nil || code != 0 {
		t.Fatalf("driver -check nodedeath: exit %d, %v\nstdout: %s\nstderr: %s", code, err, out, tail(errOut))
	}
	if d := death.Nodedeath; d.Tasks == 0 || d.Wrong != 0 || d.VictimListedAfter || d.VictimDeadReason == "" {
		t.Errorf("after killing node %s: %d of %d results wrong, still listed alive: %v, listed dead because %q (want a reason)",
			d.Victim, d.Wrong, d.Tasks, d.VictimListedAfter, d.VictimDeadReason)
	}
	if d := death.Nodedeath; !d.RecreatedSame || d.RecreatedOn == d.Victim {
		t.Errorf("an 8 MiB object that lived only on the killed node: recreated identical %v, on %s", d.RecreatedSame, d.RecreatedOn)
	}
	t.Logf("a worker process killed under %d one-second tasks: all done %.2f s after the kill", death.Nodedeath.Tasks, death.Nodedeath.Seconds)

	// The process that owns objects the driver borrows is killed: the driver adopts them
	// and recreates the lost one from the lineage the dead owner left in the GCS (two
	// tasks deep); the small one it had resolved stays readable.
	out, errOut, code = run(t, 2*time.Minute, env, driver, "-check", "ownerdeath")
	var od struct {
		Ownerdeath struct {
			Victim   string
			Seconds  float64
			Same     bool
			Small    int
			TaskSame bool `json:"task_same"`
		}
	}
	if err := json.Unmarshal([]byte(lastLine(out)), &od); err != nil || code != 0 {
		t.Fatalf("driver -check ownerdeath: exit %d, %v\nstdout: %s\nstderr: %s", code, err, out, tail(errOut))
	}
	if d := od.Ownerdeath; !d.Same || d.Small != 3 || !d.TaskSame {
		t.Errorf("objects borrowed from a dead owner: big identical %v, small %d (want 3), identical in a task %v", d.Same, d.Small, d.TaskSame)
	}
	t.Logf("owner killed: its 8 MiB object (two tasks deep) read again %.2f s after the kill", od.Ownerdeath.Seconds)

	// The process hosting an actor is killed under 30 pipelined calls: the actor restarts on
	// another process from its checkpoint and method log, every call completes exactly once.
	out, errOut, code = run(t, 2*time.Minute, env, driver, "-check", "actordeath")
	var ad struct {
		Actordeath struct {
			Victim       string
			Calls, Wrong int
			Seconds      float64
			RestartedOn  string `json:"restarted_on"`
			Final        int
		}
	}
	if err := json.Unmarshal([]byte(lastLine(out)), &ad); err != nil || code != 0 {
		t.Fatalf("driver -check actordeath: exit %d, %v\nstdout: %s\nstderr: %s", code, err, out, tail(errOut))
	}
	if d := ad.Actordeath; d.Calls != 30 || d.Wrong != 0 || d.Final != 1275 || d.RestartedOn == d.Victim {
		t.Errorf("actor whose host was killed: %d of %d calls wrong, final sum %d (want 1275), restarted on %s (victim %s)",
			d.Wrong, d.Calls, d.Final, d.RestartedOn, d.Victim)
	}
	t.Logf("actor host killed under %d pipelined calls: all answered exactly once %.2f s after the kill", ad.Actordeath.Calls, ad.Actordeath.Seconds)

	// rayctl job submit runs a driver on the cluster and streams its output.
	out, errOut, code = run(t, 2*time.Minute, tok, rayctl, "job", "submit", "--address", addr, "--", driver, "-check", "sum")
	if code != 0 || !strings.Contains(out, `"sum":5050`) {
		t.Fatalf("rayctl job submit: exit %d\nstdout: %s\nstderr: %s", code, out, tail(errOut))
	}

	// rayctl job stop: the driver gets SIGTERM and dies without calling ray.Shutdown. The
	// submission and the job table say STOPPED alike, with one message, as soon as the stop
	// returns; the job stays STOPPED once its lease lapses (checked again below, after
	// the killed driver's job failed, which happens later than that lapse).
	out, errOut, code = run(t, time.Minute, tok, rayctl, "job", "submit", "--no-wait", "--address", addr, "--", driver, "-check", "hang")
	subID := strings.TrimSpace(out)
	if code != 0 || subID == "" {
		t.Fatalf("rayctl job submit --no-wait: exit %d\nstdout: %s\nstderr: %s", code, out, tail(errOut))
	}
	var subView struct {
		State   string `json:"state"`
		JobID   string `json:"job_id"`
		Message string `json:"message"`
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		logs, _, _ := run(t, time.Minute, tok, rayctl, "job", "logs", "--address", addr, subID)
		out, _, _ = run(t, time.Minute, tok, rayctl, "job", "status", "--address", addr, "-o", "json", subID)
		subView.JobID = ""
		_ = json.Unmarshal([]byte(out), &subView)
		if strings.Contains(logs, "hanging") && subView.JobID != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the submitted hanging driver did not start, or its job is not linked:\n%s\n%s", out, logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	stoppedJob := subView.JobID
	out, errOut, code = run(t, time.Minute, tok, rayctl, "job", "stop", "--address", addr, subID)
	if code != 0 || !strings.Contains(out, subID+" STOPPED") {
		t.Fatalf("rayctl job stop: exit %d\nstdout: %s\nstderr: %s", code, out, tail(errOut))
	}
	out, _, _ = run(t, time.Minute, tok, rayctl, "job", "status", "--address", addr, "-o", "json", subID)
	if err := json.Unmarshal([]byte(out), &subView); err != nil || subView.State != "STOPPED" {
		t.Fatalf("rayctl job status after stop: %v\n%s", err, out)
	}
	jobState := func() (string, string) {
		t.Helper()
		out, errOut, code := run(t, time.Minute, tok, rayctl, "status", "--address", addr, "-o", "json")
		var st status
		if err := json.Unmarshal([]byte(out), &st); err != nil || code != 0 {
			t.Fatalf("rayctl status: exit %d, %v\n%s", code, err, tail(errOut))
		}
		for _, j := range st.Jobs {
			if j.JobID == stoppedJob {
				return j.State, j.Message
			}
		}
		t.Fatalf("job %s is not in rayctl status:\n%s", stoppedJob, out)
		return "", ""
	}
	if state, msg := jobState(); state != "STOPPED" || msg != subView.Message {
		t.Fatalf("submission %s STOPPED (%q), its job %s %s (%q): want one truth", subID, subView.Message, stoppedJob, state, msg)
	}

	// A driver killed mid-run: its job is marked failed and its worker processes stop.
	cmd := startReady(t, driver, "hang", env, "hanging\n")
	// rayctl memory shows the 16 MiB object the driver holds, on a node of its job.
	deadline = time.Now().Add(20 * time.Second)
	for {
		out, errOut, code = run(t, time.Minute, tok, rayctl, "memory", "--address", addr, "-o", "json")
		var mem struct {
			Nodes []struct {
				Objects int64 `json:"objects"`
				Largest []struct {
					Size  int64  `json:"size"`
					Owner string `json:"owner"`
				} `json:"largest"`
			} `json:"nodes"`
		}
		_ = json.Unmarshal([]byte(out), &mem)
		found := false
		for _, n := range mem.Nodes {
			for _, o := range n.Largest {
				found = found || o.Size >= 16<<20 && o.Owner != "" && n.Objects > 0
			}
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rayctl memory does not show the 16 MiB object: exit %d\n%s\n%s", code, out, errOut)
		}
		time.Sleep(200 * time.Millisecond)
	}
	checkTaskState(t, tok, addr, stoppedJob)
	cmd.Process.Kill()
	cmd.Wait()
	deadline = time.Now().Add(30 * time.Second)
	for {
		out, _, _ = run(t, time.Minute, tok, rayctl, "status", "--address", addr, "-o", "json")
		st = status{}
		_ = json.Unmarshal([]byte(out), &st)
		failed := 0
		for _, j := range st.Jobs {
			if j.State == "FAILED" {
				failed++
			}
		}
		workers := 0
		for _, p := range ourProcesses(t) {
			if strings.Contains(p, "-check hang") {
				workers++
			}
		}
		if failed == 1 && workers == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after killing a driver: %d failed jobs (want 1), %d of its worker processes left\n%s", failed, workers, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if state, msg := jobState(); state != "STOPPED" || msg != subView.Message {
		t.Fatalf("the stopped submission's job %s became %s (%q) once its lease lapsed", stoppedJob, state, msg)
	}

	// A wrong address: a clear error within seconds.
	wrongAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	t0 := time.Now()
	_, errOut, code = run(t, time.Minute, append([]string{"RAY_ADDRESS=" + wrongAddr}, tok...), driver, "-check", "sum")
	if code == 0 || !strings.Contains(errOut, "unreachable") || !strings.Contains(errOut, wrongAddr) || time.Since(t0) > 15*time.Second {
		t.Errorf("driver at a wrong address: exit %d after %v\n%s", code, time.Since(t0), tail(errOut))
	}

	// rayctl stop stops everything; then the old address gives a clear error.
	out, errOut, code = run(t, 2*time.Minute, nil, rayctl, "stop", "--session-dir", sess)
	stopped = true
	if code != 0 {
		t.Fatalf("rayctl stop: exit %d\n%s\n%s", code, out, errOut)
	}
	t0 = time.Now()
	_, errOut, code = run(t, time.Minute, env, driver, "-check", "sum")
	if code == 0 || !strings.Contains(errOut, "unreachable") || time.Since(t0) > 15*time.Second {
		t.Errorf("driver after rayctl stop: exit %d after %v\n%s", code, time.Since(t0), tail(errOut))
	}
	_, errOut, code = run(t, time.Minute, tok, rayctl, "status", "--address", addr)
	if code != 4 {
		t.Errorf("rayctl status after stop: exit %d (want 4, GCS unreachable)\n%s", code, errOut)
	}
}

// printedToken finds the join token in the output of `rayctl start --head`.
func printedToken(t *testing.T, out string) string {
	t.Helper()
	tok := cli.PrintedToken(out)
	if tok == "" {
		t.Fatalf("no join token in:\n%s", out)
	}
	return tok
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// checkTaskState checks the state API's tasks against the hanging driver's job: the tasks
// its driver and a worker process submitted, a failed task with its error, one task by ID,
// the summary, and a timeline file that parses as a Chrome trace with spans and arrows.
// The job stopped before (the same check, submitted, then rayctl job stop) still lists its
// failed task and the long one it was running, FAILED with its driver gone: rayctl job
// stop had the driver archive its records first.
func checkTaskState(t *testing.T, tok []string, addr, stopped string) {
	t.Helper()
	type task struct {
		TaskID, Name, State, Error, Node, JobID, OwnerNode string
	}
	list := func(args ...string) []task {
		t.Helper()
		out, errOut, code := run(t, time.Minute, tok, rayctl, append([]string{"list", "tasks", "--address", addr, "-o", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("rayctl list tasks %v: exit %d\n%s\n%s", args, code, out, errOut)
		}
		var raw []map[string]any
		if err := json.Unmarshal([]byte(out), &raw); err != nil {
			t.Fatalf("rayctl list tasks %v -o json: %v\n%s", args, err, out)
		}
		var ts []task
		for _, r := range raw {
			s := func(k string) string { v, _ := r[k].(string); return v }
			ts = append(ts, task{TaskID: s("task_id"), Name: s("name"), State: s("state"), Error: s("error"), Node: s("node"), JobID: s("job_id"), OwnerNode: s("owner_node")})
		}
		return ts
	}
	var failed, stoppedFailed []task
	for _, tk := range list("--filter", "state=FAILED") {
		if tk.JobID == stopped {
			stoppedFailed = append(stoppedFailed, tk)
		} else {
			failed = append(failed, tk)
		}
	}
	names := map[string]bool{}
	for _, tk := range stoppedFailed {
		names[tk.Name] = true
	}
	if len(stoppedFailed) != 2 || !names["e2e.Fail"] || !names["e2e.Busy"] {
		t.Errorf("rayctl list tasks --filter state=FAILED: the stopped job %s's failed tasks are %+v, want its e2e.Fail and e2e.Busy", stopped, stoppedFailed)
	}
	if len(failed) != 1 || failed[0].Name != "e2e.Fail" || !strings.Contains(failed[0].Error, "this task fails on purpose") || failed[0].Node == "" {
		t.Fatalf("rayctl list tasks --filter state=FAILED: %+v", failed)
	}
	adds := list("--filter", "name=e2e.Add", "--filter", "state=FINISHED", "--limit", "5")
	if len(adds) != 5 {
		t.Fatalf("rayctl list tasks --filter name=e2e.Add --limit 5: %d tasks: %+v", len(adds), adds)
	}
	owners := map[string]bool{}
	for _, tk := range list("--filter", "job_id="+failed[0].JobID, "--limit", "0") {
		owners[tk.OwnerNode] = true
	}
	if len(owners) < 2 { // the driver's tasks and makeOwned's, submitted by a worker process
		t.Errorf("tasks owned by %d process(es), want the driver and a worker process: %v", len(owners), owners)
	}
	out, errOut, code := run(t, time.Minute, tok, rayctl, "get", "task", failed[0].TaskID[:12], "--address", addr, "-o", "json")
	if code != 0 || !strings.Contains(out, failed[0].TaskID) || !strings.Contains(out, "APPLICATION") {
		t.Errorf("rayctl get task: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = run(t, time.Minute, tok, rayctl, "summary", "tasks", "--address", addr)
	if code != 0 || !strings.Contains(out, "e2e.Add") || !strings.Contains(out, "FAILED") {
		t.Errorf("rayctl summary tasks: exit %d\n%s\n%s", code, out, errOut)
	}
	file := filepath.Join(t.TempDir(), "timeline.json")
	out, errOut, code = run(t, time.Minute, tok, rayctl, "timeline", "--job", failed[0].JobID, "--output", file, "--address", addr)
	if code != 0 {
		t.Fatalf("rayctl timeline: exit %d\n%s\n%s", code, out, errOut)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var trace struct {
		TraceEvents []struct {
			Name, Ph string
			ID       int
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &trace); err != nil {
		t.Fatalf("the timeline does not parse: %v\n%.300s", err, b)
	}
	spans, flows := map[string]int{}, map[int]string{}
	for _, e := range trace.TraceEvents {
		switch e.Ph {
		case "X":
			spans[e.Name]++
		case "s", "f":
			flows[e.ID] += e.Ph
		}
	}
	pairs := 0
	for _, f := range flows {
		if f == "sf" {
			pairs++
		}
	}
	if spans["e2e.Add"] < 10 || spans["e2e.Fail"] != 1 || spans["e2e.MakeBlob"] < 1 || pairs < 9 {
		t.Errorf("timeline: spans %v, %d flows (want the chain's 9 at least)", spans, pairs)
	}
}

// piped is a test driver process whose stdin and stdout the test holds: a check that
// prints lines and waits for commands.
type piped struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *lockedBuf
}

// startPiped starts the test driver with -check check and the environment env (all of
// it); the test's cleanup kills it if it still runs.
func startPiped(t *testing.T, check string, env []string) *piped {
	t.Helper()
	p := &piped{cmd: exec.Command(driver, "-check", check), stderr: &lockedBuf{}}
	p.cmd.Env = append(env, testTag(t))
	p.cmd.Stderr = p.stderr
	var err error
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.out = bufio.NewReader(out)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() })
	return p
}

// line reads the process's next line (without its newline); it fails the test, with the
// process's stderr and the session's logs, when none comes in 3 minutes.
func (p *piped) line(t *testing.T, what, sess string) string {
	t.Helper()
	done := make(chan struct{})
	var line string
	var err error
	go func() { line, err = p.out.ReadString('\n'); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		t.Fatalf("%s: nothing in 3 minutes\n%s\n%s", what, tail(p.stderr.String()), sessionLogs(sess, 30))
	}
	if err != nil {
		t.Fatalf("%s: %v\n%s\n%s", what, err, tail(p.stderr.String()), sessionLogs(sess, 30))
	}
	return strings.TrimSuffix(line, "\n")
}
