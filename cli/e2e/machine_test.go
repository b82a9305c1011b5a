package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"
)

// twoCPUHead starts a head agent of 2 CPUs in a new session and returns the session
// directory and the environment of a driver that joins it.
func twoCPUHead(t *testing.T) (string, []string) {
	t.Helper()
	port, addr, sess := newSession(t)
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess,
		"--num-cpus", "2", "--object-store-memory", "256MiB")
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	env := append(os.Environ(), "RAY_ADDRESS="+addr, "RAY_GO_TOKEN="+printedToken(t, out))
	return sess, env
}

// TestJobsShareTheMachine: two jobs on one 2-CPU node each run 6 one-CPU tasks of 400 ms
// at once. The machine's agent holds its CPUs for both (package tasks/machine): at no
// moment do more than 2 of the 12 tasks run, and both jobs finish. Before, each job's
// worker process counted the machine's 2 CPUs as its own and 4 ran at once.
func TestJobsShareTheMachine(t *testing.T) {
	sess, env := twoCPUHead(t)
	jobs := []*piped{startPiped(t, "shared", env), startPiped(t, "shared", env)}
	for i, j := range jobs {
		if l := j.line(t, fmt.Sprintf("job %d", i), sess); l != "shared ready" {
			t.Fatalf("job %d did not get ready: %q", i, l)
		}
	}
	for _, j := range jobs {
		if _, err := io.WriteString(j.in, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	type event struct {
		at    int64
		delta int
	}
	var events []event
	pids := map[int64]bool{}
	for i, j := range jobs {
		line := j.line(t, fmt.Sprintf("job %d's result", i), sess)
		var res struct {
			Spans [][3]int64
			Error string
		}
		if json.Unmarshal([]byte(line), &res) != nil || res.Error != "" || len(res.Spans) != 6 {
			t.Fatalf("job %d: %q\n%s", i, line, tail(j.stderr.String()))
		}
		for _, s := range res.Spans {
			events = append(events, event{s[0], +1}, event{s[1], -1})
			pids[s[2]] = true
		}
	}
	if len(pids) != 2 {
		t.Fatalf("the tasks ran in %d processes, want each job's own worker process (2)", len(pids))
	}
	// Ends before starts at the same instant: a task that ends as another starts is not
	// counted twice.
	sort.Slice(events, func(a, b int) bool {
		return events[a].at < events[b].at || events[a].at == events[b].at && events[a].delta < events[b].delta
	})
	running, most := 0, 0
	for _, e := range events {
		running += e.delta
		most = max(most, running)
	}
	if most != 2 {
		t.Fatalf("at most %d of the two jobs' tasks ran at once on a 2-CPU machine, want 2", most)
	}
}

// TestJobsGetAnEvenShare: a job that keeps its 2-CPU machine busy (12 one-CPU tasks of 400
// ms; the second job starts once the first task is done, the machine's 2 CPUs held by the
// first job's next tasks and 9 waiting) does not hold the machine until its queue drains: the
// machine's ledger reclaims the first job's excess over an even share (one CPU) as its
// tasks end, so the second job's tasks start while the first job still has tasks waiting,
// not after them (package tasks/machine, "RECLAIM").
func TestJobsGetAnEvenShare(t *testing.T) {
	sess, env := twoCPUHead(t)
	busy, late := startPiped(t, "shared", env), startPiped(t, "shared", env)
	for name, j := range map[string]*piped{"the busy job": busy, "the late job": late} {
		if l := j.line(t, name, sess); l != "shared ready" {
			t.Fatalf("%s did not get ready: %q", name, l)
		}
	}
	if _, err := io.WriteString(busy.in, "go 12 400ms\n"); err != nil {
		t.Fatal(err)
	}
	if l := busy.line(t, "the busy job's first task", sess); l != "running" {
		t.Fatalf("the busy job: %q, want running", l)
	}
	if _, err := io.WriteString(late.in, "go 2 400ms\n"); err != nil {
		t.Fatal(err)
	}
	spans := func(j *piped, name string, n int) [][3]int64 {
		for {
			line := j.line(t, name+"'s result", sess)
			if line == "running" {
				continue
			}
			var res struct {
				Spans [][3]int64
				Error string
			}
			if json.Unmarshal([]byte(line), &res) != nil || res.Error != "" || len(res.Spans) != n {
				t.Fatalf("%s: %q\n%s", name, line, tail(j.stderr.String()))
			}
			return res.Spans
		}
	}
	bs, ls := spans(busy, "the busy job", 12), spans(late, "the late job", 2)
	lastBusyStart := int64(0)
	for _, s := range bs {
		lastBusyStart = max(lastBusyStart, s[0])
	}
	firstLateStart := min(ls[0][0], ls[1][0])
	t0 := bs[0][0]
	for _, s := range append(bs, ls...) {
		t.Logf("span %v-%v pid %d", time.Duration(s[0]-t0), time.Duration(s[1]-t0), s[2])
	}
	if firstLateStart >= lastBusyStart {
		t.Fatalf("the late job's first task started %v after the busy job's last one: it waited for the busy job's whole queue",
			time.Duration(firstLateStart-lastBusyStart))
	}
}

// TestLargeAskDoesNotBlockSmallerOnes is the tester's case with real processes: on a
// 2-CPU head, job A runs a task that holds one CPU, job B submits a task of 2 CPUs (it
// must wait for A's), and job C's 1-CPU tasks run one after another on the CPU that is
// free, as do those C submits after a 2-CPU task of its own (the same case within one
// job). Before, the machine's ledger served asks strictly in order and C's tasks waited
// behind B's (each Get timed out after 20 s; killing B let them finish in milliseconds).
// Once A's task ends, both 2-CPU tasks run.
func TestLargeAskDoesNotBlockSmallerOnes(t *testing.T) {
	sess, env := twoCPUHead(t)
	jobs := map[string]*piped{}
	for _, name := range []string{"A", "B", "C"} {
		jobs[name] = startPiped(t, "hol", env)
	}
	for name, j := range jobs {
		if l := j.line(t, "job "+name, sess); l != "hol ready" {
			t.Fatalf("job %s did not get ready: %q\n%s", name, l, tail(j.stderr.String()))
		}
	}
	type answer struct {
		Held, Submitted bool
		Ran, Millis     []int64
		Ended           []int64
		Error           string
	}
	do := func(name, cmd string) answer {
		t.Helper()
		j := jobs[name]
		if _, err := io.WriteString(j.in, cmd+"\n"); err != nil {
			t.Fatal(err)
		}
		l := j.line(t, fmt.Sprintf("job %s's answer to %q", name, cmd), sess)
		var a answer
		if err := json.Unmarshal([]byte(l), &a); err != nil || a.Error != "" {
			t.Fatalf("job %s, %q: %q\n%s\n%s", name, cmd, l, tail(j.stderr.String()), sessionLogs(sess, 30))
		}
		return a
	}
	dir := t.TempDir()
	stop := filepath.Join(dir, "stop")
	if a := do("A", "hold "+filepath.Join(dir, "started")+" "+stop); !a.Held {
		t.Fatal("job A's task that holds a CPU did not start")
	}
	do("B", "big")
	// B's 2-CPU task reaches its node and its ask the machine's ledger, where it waits
	// (nothing to poll for: a bounded sleep, as the tester's programs ran).
	time.Sleep(time.Second)
	small := do("C", "small 5")
	mixed := do("C", "mixed 3")
	t.Logf("job C's 1-CPU tasks while B waits for 2 CPUs: %v ms; after a 2-CPU task of its own: %v ms", small.Millis, mixed.Millis)
	stopAt := time.Now().UnixNano()
	if err := os.WriteFile(stop, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"A", "B", "C"} {
		a := do(name, "wait")
		if len(a.Ended) == 0 {
			t.Fatalf("job %s: nothing ended", name)
		}
		if name != "A" && a.Ended[0] < stopAt {
			t.Fatalf("job %s's 2-CPU task ran before A's task gave back its CPU", name)
		}
	}
	for name, j := range jobs {
		_ = j.in.Close()
		l := j.line(t, "job "+name+"'s end", sess)
		var end struct{ Error string }
		if err := json.Unmarshal([]byte(l), &end); err != nil || end.Error != "" {
			t.Fatalf("job %s ended with %q", name, l)
		}
	}
}
