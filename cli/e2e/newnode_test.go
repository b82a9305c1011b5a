package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTaskForAMachineJustStarted: a running driver submits a task needing a resource that
// only a machine started a moment ago has (`rayctl start --address ... --resources
// '{"fresh":1}'` has just returned; the job's worker process there registers after that).
// The task waits for that worker process and runs there. It failed at once as infeasible,
// telling the user to add a node that has the resource: the node they had just added.
func TestTaskForAMachineJustStarted(t *testing.T) {
	port, addr, sess := newSession(t)
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess,
		"--num-cpus", "1", "--object-store-memory", "64MiB", "--dashboard-port", "-1", "--metrics-port", "-1")
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	tok := "RAY_GO_TOKEN=" + printedToken(t, out)
	p := startPiped(t, "newnode", []string{"RAY_ADDRESS=" + addr, tok})
	if l := p.line(t, "newnode", sess); l != "newnode ready" {
		t.Fatalf("driver -check newnode printed %q, want newnode ready\n%s", l, tail(p.stderr.String()))
	}
	out, errOut, code = run(t, 90*time.Second, []string{tok}, rayctl, "start", "--address", addr, "--session-dir", sess,
		"--num-cpus", "1", "--object-store-memory", "64MiB", "--resources", `{"fresh":1}`, "--metrics-port", "-1")
	if code != 0 {
		t.Fatalf("rayctl start --address: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := p.in.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	if l := p.line(t, "newnode result", sess); l != "newnode ok" {
		t.Fatalf("driver -check newnode: %s (want the task to wait for the new machine and run there)\n%s\n%s",
			l, tail(p.stderr.String()), sessionLogs(sess, 20))
	}
	p.in.Close()
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("driver -check newnode: %v\n%s", err, tail(p.stderr.String()))
	}
	if out, errOut, code := run(t, time.Minute, nil, rayctl, "stop", "--session-dir", sess); code != 0 || !strings.Contains(out, "Stopped") {
		t.Fatalf("rayctl stop: exit %d\n%s\n%s", code, out, errOut)
	}
}
