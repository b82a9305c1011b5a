package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// maxPeerWarns bounds the WARN lines one log may hold about one dead peer: node's peerLog
// writes one per peer and minute (this test runs for less than a minute), one more is
// slack for a peer seen first through another of the endpoint writer's messages.
const maxPeerWarns = 2

// peerWarnMsgs are the messages node's peerLog writes, at WARN, in place of protoactor's
// endpoint writer's ERRORs about a peer it cannot reach (internal/assembly/node/peerlog.go).
var peerWarnMsgs = []string{`msg="node: lost the connection to a peer`, `msg="node: a peer refused`}

var (
	logLevel   = regexp.MustCompile(`(?:^|\s)level=(\w+)`)
	logAddress = regexp.MustCompile(`(?:^|\s)address=(\S+)`)
)

// TestPeerDeathLogsQuiet: issue 19's log hygiene, end to end. A head and two more agents
// (RAY_NODE_LEASE_TTL=2s, so that a dead node is noticed soon) run a submitted job (the
// driver's peerchurn check) that spreads tasks over its three worker processes and
// SIGKILLs one of them three times, one after the other, each time running on until the
// agent's replacement has joined. The job succeeds with every result right; its log
// (`rayctl job logs`) and every worker process's log hold no ERROR line of protoactor's
// endpoint writer ("EndpointWriter lost connection / failed to connect"; before peerLog
// every process wrote five per dead peer, 2 s apart) and at most maxPeerWarns WARN lines
// about any one peer; and the job's log holds such a WARN about a victim, so the test has
// seen the deaths whose logging it checks.
func TestPeerDeathLogsQuiet(t *testing.T) {
	port, addr, sess := newSession(t)
	env := []string{"RAY_NODE_LEASE_TTL=2s"}
	start := func(args ...string) string {
		t.Helper()
		out, errOut, code := run(t, 90*time.Second, env, rayctl, append([]string{"start", "--session-dir", sess, "--num-cpus", "2",
			"--object-store-memory", "256MiB", "--metrics-port", "-1"}, args...)...)
		if code != 0 {
			t.Fatalf("rayctl start %v: exit %d\n%s\n%s", args, code, out, errOut)
		}
		return out
	}
	env = append(env, "RAY_GO_TOKEN="+printedToken(t, start("--head", "--port", strconv.Itoa(port), "--dashboard-port", "-1")))
	start("--address", addr)
	start("--address", addr)

	out, errOut, code := run(t, time.Minute, env, rayctl, "job", "submit", "--no-wait", "--address", addr, "--", driver, "-check", "peerchurn")
	sub := strings.TrimSpace(out)
	if code != 0 || sub == "" {
		t.Fatalf("rayctl job submit --no-wait: exit %d\n%s\n%s", code, out, errOut)
	}
	// The job's log, followed to its end.
	jobLog, errOut, code := run(t, 3*time.Minute, env, rayctl, "logs", "--address", addr, "job", sub, "--follow")
	if code != 0 {
		t.Fatalf("rayctl logs job %s --follow: exit %d\n%s\n%s", sub, code, tail(jobLog), errOut)
	}
	out, _, _ = run(t, time.Minute, env, rayctl, "job", "status", "--address", addr, "-o", "json", sub)
	var st struct {
		State string `json:"state"`
	}
	_ = json.Unmarshal([]byte(out), &st)
	var rep struct {
		Nodes     []node
		Peerchurn struct {
			Victims []struct {
				ID      string
				PID     int
				Address string
			}
			Rounds, Tasks, Wrong int
		}
		Error string
	}
	if err := json.Unmarshal([]byte(lastLine(jobLog)), &rep); err != nil || st.State != "SUCCEEDED" || rep.Error != "" {
		t.Fatalf("the peerchurn job: %s, %v, %q\njob log:\n%s\nlogs:\n%s", st.State, err, rep.Error, tail(jobLog), sessionLogs(sess, 30))
	}
	pc := rep.Peerchurn
	if len(rep.Nodes) != 3 || len(pc.Victims) != 3 || pc.Wrong != 0 || pc.Tasks == 0 {
		t.Fatalf("the peerchurn job ran on %d nodes, killed %d (want 3 and 3), %d of %d results wrong", len(rep.Nodes), len(pc.Victims), pc.Wrong, pc.Tasks)
	}
	victims := map[string]bool{}
	for _, v := range pc.Victims {
		victims[v.Address] = true
	}

	logs := map[string]string{"job " + sub: jobLog}
	files, _ := filepath.Glob(filepath.Join(sess, "*", "logs", "worker-*.log"))
	if len(files) != 3 {
		t.Errorf("%d worker process logs, want one per agent (3; a replacement writes on its predecessor's): %v", len(files), files)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		logs[strings.TrimPrefix(f, sess+"/")] = string(b)
	}
	names := make([]string, 0, len(logs))
	for name := range logs {
		names = append(names, name)
	}
	sort.Strings(names)
	aboutVictims := map[string]int{} // log -> WARN lines about a victim
	otherErrors := map[string]int{}  // log -> other ERROR lines (reported, not checked)
	for _, name := range names {
		warns := map[string]int{} // peer address -> WARN lines about it
		var errs []string
		for _, l := range strings.Split(logs[name], "\n") {
			m := logLevel.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			switch {
			case m[1] == "ERROR" && strings.Contains(l, "EndpointWriter"):
				errs = append(errs, l)
			case m[1] == "ERROR":
				otherErrors[name]++
				t.Logf("%s: %s", name, l)
			case m[1] == "WARN" && (strings.Contains(l, peerWarnMsgs[0]) || strings.Contains(l, peerWarnMsgs[1])):
				a := ""
				if am := logAddress.FindStringSubmatch(l); am != nil {
					a = am[1]
				}
				warns[a]++
				if victims[a] {
					aboutVictims[name]++
				}
			}
		}
		if len(errs) > 0 {
			t.Errorf("%s: %d ERROR lines of the endpoint writer, want none; the first: %s", name, len(errs), errs[0])
		}
		for a, n := range warns {
			if n > maxPeerWarns {
				t.Errorf("%s: %d WARN lines about the peer %s, want at most %d", name, n, a, maxPeerWarns)
			}
		}
	}
	if aboutVictims["job "+sub] == 0 {
		t.Errorf("the job's log has no WARN about a killed worker process (%v): the deaths were not seen, or not logged\n%s", pc.Victims, tail(jobLog))
	}
	t.Logf("%d rounds, %d tasks over 3 kills; WARN lines about the victims per log: %v; other ERROR lines per log: %v", pc.Rounds, pc.Tasks, aboutVictims, otherErrors)
}

// TestOtherJobsEndQuietly: jobs that start and end (cleanly) while another job runs put
// no WARN about a lost peer into the running job's output or its worker process's log:
// another job's processes are not its concern (node's peerConcern), whereas before each
// ended job put a "lost the connection to a peer" WARN or two into every running job's.
func TestOtherJobsEndQuietly(t *testing.T) {
	t.Parallel()
	port, addr, sess := newSession(t)
	env := startTwoNodes(t, port, addr, sess)
	out, errOut, code := run(t, time.Minute, env, rayctl, "job", "submit", "--no-wait", "--", driver, "-check", "hang")
	sub := strings.TrimSpace(out)
	if code != 0 || sub == "" {
		t.Fatalf("rayctl job submit --no-wait: exit %d\n%s\n%s", code, out, errOut)
	}
	var st struct {
		State string `json:"state"`
		JobID string `json:"job_id"`
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		logs, _, _ := run(t, time.Minute, env, rayctl, "job", "logs", sub)
		out, _, _ = run(t, time.Minute, env, rayctl, "job", "status", "-o", "json", sub)
		_ = json.Unmarshal([]byte(out), &st)
		if strings.Contains(logs, "hanging") && st.JobID != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hanging job did not start:\n%s\n%s", out, logs)
		}
		time.Sleep(300 * time.Millisecond)
	}
	for i := range 3 {
		if out, errOut, code := run(t, 2*time.Minute, env, rayctl, "job", "submit", "--", driver, "-check", "sum"); code != 0 {
			t.Fatalf("short job %d: exit %d\n%s\n%s", i, code, tail(out), tail(errOut))
		}
	}
	time.Sleep(3 * time.Second) // what the running job's processes log about them, written
	jobLog, _, _ := run(t, time.Minute, env, rayctl, "job", "logs", sub)
	var workerLog []byte
	files, _ := filepath.Glob(filepath.Join(sess, "*", "logs", "worker-"+st.JobID+".log"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		workerLog = append(workerLog, b...)
	}
	if len(files) != 2 {
		t.Errorf("the running job's worker process logs: %v, want 2", files)
	}
	for name, log := range map[string]string{"the running job's output": jobLog, "its worker processes' logs": string(workerLog)} {
		if n := strings.Count(log, peerWarnMsgs[0]); n > 0 {
			t.Errorf("%s has %d WARN lines about a lost peer after 3 other jobs ended, want none:\n%s", name, n, tail(log))
		}
	}
	if out, errOut, code := run(t, time.Minute, env, rayctl, "job", "stop", sub); code != 0 {
		t.Fatalf("rayctl job stop: exit %d\n%s\n%s", code, out, errOut)
	}
}
