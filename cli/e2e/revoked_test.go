package e2e

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ray-go/ray/cli"
)

// TestRevokedAgentStops: an agent (a second machine's, real processes) whose node
// certificate is revoked on the head (`rayctl cert revoke`) says so once, clearly (the
// head refuses this node's certificate; `rayctl cert list` on the head; rejoin with
// `rayctl start --address ... --token ...`, which works), and stops, instead of
// logging "context deadline exceeded" at every retry for ever. Before, its log had only
// "agent: register again failed; retrying ... context deadline exceeded", again and again.
func TestRevokedAgentStops(t *testing.T) {
	t.Parallel() // mostly idle: it waits for the revoked agent to stop
	port, addr, sess := newSession(t)
	other := t.TempDir()
	t.Cleanup(func() { run(t, time.Minute, nil, rayctl, "stop", "--force", "--session-dir", other) }) // before newSession's check
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess, "--num-cpus", "1")
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	tok := []string{"RAY_GO_TOKEN=" + printedToken(t, out)}
	if out, errOut, code := run(t, 90*time.Second, tok, rayctl, "start", "--address", addr, "--session-dir", other, "--num-cpus", "1"); code != 0 {
		t.Fatalf("rayctl start --address: exit %d\n%s\n%s", code, out, errOut)
	}
	dirs, _ := filepath.Glob(filepath.Join(other, "agent-*"))
	if len(dirs) != 1 {
		t.Fatalf("agent directories under %s: %v", other, dirs)
	}
	agentID := strings.TrimPrefix(filepath.Base(dirs[0]), "agent-")
	pidText, err := os.ReadFile(filepath.Join(dirs[0], "agent.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(pidText)))

	out, errOut, code = run(t, time.Minute, nil, rayctl, "cert", "list", "--session-dir", sess, "-o", "json")
	var certs []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &certs) != nil {
		t.Fatalf("rayctl cert list: exit %d\n%s\n%s", code, out, errOut)
	}
	serial := ""
	for _, c := range certs {
		if c["agent_id"] == agentID {
			serial, _ = c["serial"].(string)
		}
	}
	if serial == "" {
		t.Fatalf("no certificate of agent %s in cert list:\n%s", agentID, out)
	}
	if out, errOut, code := run(t, time.Minute, nil, rayctl, "cert", "revoke", serial, "--session-dir", sess); code != 0 {
		t.Fatalf("rayctl cert revoke: exit %d\n%s\n%s", code, out, errOut)
	}
	revoked := time.Now()

	logPath := filepath.Join(dirs[0], "logs", "agent.log")
	var log string
	stopped := false
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		b, _ := os.ReadFile(logPath)
		log = string(b)
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			stopped = true
			break
		}
	}
	t.Logf("the agent %s %.1f s after the revocation", map[bool]string{true: "stopped", false: "still ran"}[stopped], time.Since(revoked).Seconds())
	if !stopped {
		t.Errorf("the agent whose certificate was revoked still runs after a minute")
	}
	var refusals []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "refuses this node's certificate") && strings.Contains(l, "level=ERROR") {
			refusals = append(refusals, l)
		}
	}
	if len(refusals) != 1 {
		t.Fatalf("%d ERROR lines say the head refuses this node's certificate, want 1; the agent's log:\n%s", len(refusals), tail(log))
	}
	for _, want := range []string{serial, "revoked", "rayctl cert list", "rayctl start --address " + addr + " --session-dir " + other + " --token"} {
		if !strings.Contains(refusals[0], want) {
			t.Errorf("the refusal does not say %q: %s", want, refusals[0])
		}
	}
	if n := strings.Count(log, "context deadline exceeded"); n > 2 {
		t.Errorf("the agent's log says \"context deadline exceeded\" %d times:\n%s", n, tail(log))
	}
	t.Logf("the agent said: %s", refusals[0])

	// Started again without a token, it says its certificate was revoked and how to
	// rejoin. Before, it said only "no credentials to join the cluster".
	out, errOut, code = run(t, 90*time.Second, nil, rayctl, "start", "--address", addr, "--session-dir", other, "--num-cpus", "1")
	if code != cli.ExitCredentials {
		t.Fatalf("rayctl start of the revoked agent without a token: exit %d, want %d\n%s\n%s", code, cli.ExitCredentials, out, errOut)
	}
	for _, want := range []string{"revoked", serial, "rayctl start --address " + addr + " --session-dir " + other + " --token", "rayctl token show"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("restarted without a token, the revoked agent does not say %q: %s", want, errOut)
		}
	}
	for _, prefix := range []string{"rayctl: agent:", "etcdstore: "} { // each once, not "etcdstore: etcd at X: etcdstore: TLS ..."
		if n := strings.Count(errOut, prefix); n != 1 {
			t.Errorf("restarted without a token, the revoked agent's error says %q %d times, want once: %s", prefix, n, errOut)
		}
	}

	// What it says to do works: the agent joins again, with a new certificate.
	if out, errOut, code := run(t, 90*time.Second, tok, rayctl, "start", "--address", addr, "--session-dir", other, "--num-cpus", "1"); code != 0 {
		t.Fatalf("rayctl start --address --token after the revocation: exit %d\n%s\n%s", code, out, errOut)
	}
}
