package cli

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/assembly/agent"
	"github.com/ray-go/ray/internal/base/eventually"
)

// TestAgentsComeBackAsThemselves: an agent or a head restarted on its session dir comes
// back as the same node (the cluster runtime, item 5): the same agent ID, no dead twin in
// the status, and for the head the same CA and token and the GCS's data (the certificates
// it issued), so the agent that kept running finds its cluster again.
func TestAgentsComeBackAsThemselves(t *testing.T) {
	t.Parallel() // its own agents (processes), ports and session dirs; it mostly waits for them
	sess, sess2 := t.TempDir(), t.TempDir()
	t.Cleanup(func() {
		run(t, nil, "stop", "--force", "--session-dir", sess2)
		run(t, nil, "stop", "--force", "--session-dir", sess)
	})
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	startHead := func() result {
		t.Helper()
		r := run(t, nil, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess, "--num-cpus", "1", "--metrics-port", "-1", "--dashboard-port", "-1")
		if r.code != 0 {
			t.Fatalf("start --head: %+v", r)
		}
		return r
	}
	token := PrintedToken(startHead().stdout)
	tok := []string{"RAY_GO_TOKEN=" + token}
	startAgent := func() result {
		t.Helper()
		r := run(t, tok, "start", "--address", addr, "--session-dir", sess2, "--num-cpus", "1", "--metrics-port", "-1")
		if r.code != 0 {
			t.Fatalf("start --address: %+v", r)
		}
		return r
	}
	startAgent()
	ids := func() []string {
		t.Helper()
		st, r := status(t, "--session-dir", sess)
		if r.code != 0 {
			t.Fatalf("status: %+v", r)
		}
		var out []string
		for _, n := range st.Nodes {
			s := n.AgentID
			if !n.Alive {
				s += "(dead)"
			}
			out = append(out, s)
		}
		slices.Sort(out)
		return out
	}
	before := ids()
	if len(before) != 2 {
		t.Fatalf("nodes after start: %v", before)
	}
	serials := func() []string {
		t.Helper()
		r := run(t, nil, "cert", "list", "--session-dir", sess)
		if r.code != 0 {
			t.Fatalf("cert list: %+v", r)
		}
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n")[1:] {
			out = append(out, strings.Fields(l)[0])
		}
		slices.Sort(out)
		return out
	}
	certs := serials()

	// The agent, stopped and started again.
	if r := run(t, nil, "stop", "--session-dir", sess2); r.code != 0 {
		t.Fatalf("stop the agent: %+v", r)
	}
	if r := startAgent(); !strings.Contains(r.stderr, "restarting agent") {
		t.Errorf("the agent's restart did not say it restarts the earlier one: %+v", r)
	}
	eventually.True(t, 30*time.Second, "the same two nodes, alive", func() bool { return slices.Equal(ids(), before) })

	// The head, stopped and started again while the agent runs on.
	if r := run(t, nil, "stop", "--session-dir", sess); r.code != 0 {
		t.Fatalf("stop the head: %+v", r)
	}
	if r := startHead(); !strings.Contains(r.stderr, "restarting agent") {
		t.Errorf("the head's restart did not say it restarts the earlier one: %+v", r)
	}
	if r := run(t, nil, "token", "show", "--session-dir", sess); r.code != 0 || strings.TrimSpace(r.stdout) != token {
		t.Errorf("the token after the head's restart: %+v, want the same", r)
	}
	got := serials()
	for _, c := range certs {
		if !slices.Contains(got, c) {
			t.Errorf("certificates issued, after the head's restart: %v, want all of %v among them (the GCS's data kept)", got, certs)
			break
		}
	}
	eventually.True(t, 60*time.Second, "the agent that ran on is back in the cluster", func() bool { return slices.Equal(ids(), before) })
}

// TestFailedStartKeepsTheAgent: a restart that fails (a port taken) leaves the agent's
// directory (for a head: the cluster's CA, token and GCS data) as it was: it deleted it. A
// start after the agent was killed with SIGKILL waits for the new agent: it took the dead
// one's ready file (and said it started, with the dead pid), or its error file (and waited
// for ever). A second head in one session directory is refused; a token exported for the
// cluster's drivers does not stop the head's restart; a taken join port is named.
func TestFailedStartKeepsTheAgent(t *testing.T) {
	t.Parallel() // its own agents (processes), ports and session dirs; it mostly waits for them
	sess := t.TempDir()
	t.Cleanup(func() { run(t, nil, "stop", "--force", "--session-dir", sess) })
	port := freePort(t)
	head := []string{"start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess, "--num-cpus", "1", "--dashboard-port", "-1"}
	r := run(t, nil, append(head, "--metrics-port", "-1")...)
	if r.code != 0 {
		t.Fatalf("start --head: %+v", r)
	}
	token := PrintedToken(r.stdout)
	tok := []string{"RAY_GO_TOKEN=" + token} // exported, as the README shows
	if !strings.Contains(r.stdout, "rayctl stop --session-dir "+sess+"\n") {
		t.Errorf("start does not say how to stop agents of its --session-dir: %+v", r)
	}
	if r := run(t, nil, "stop", "--session-dir", t.TempDir()); r.code != ExitNothingRunning || !strings.Contains(r.stderr, sess) {
		t.Errorf("stop where no agent runs does not name the session dir where one does: %+v", r)
	}
	agentDirs, _ := filepath.Glob(filepath.Join(sess, "agent-*"))
	if len(agentDirs) != 1 {
		t.Fatalf("agent directories: %v", agentDirs)
	}
	dir := agentDirs[0]

	if r := run(t, nil, "start", "--head", "--port", strconv.Itoa(freePort(t)), "--session-dir", sess, "--metrics-port", "-1", "--dashboard-port", "-1"); r.code == 0 || !strings.Contains(r.stderr, "a head agent already runs") {
		t.Errorf("a second head in the session dir: %+v, want it refused", r)
	}

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := strconv.Itoa(taken.Addr().(*net.TCPAddr).Port)
	startTaken := func(what string) {
		t.Helper()
		r := run(t, tok, append(head, "--metrics-port", takenPort)...)
		if r.code != ExitPortInUse || !strings.Contains(r.stderr, "metrics port "+takenPort) || strings.Contains(r.stderr, "GCS port") {
			t.Fatalf("%s, the metrics port taken: %+v, want exit %d naming the metrics port", what, r, ExitPortInUse)
		}
		for _, f := range []string{identityFileName, filepath.Join("tls"), agent.TokenPath(dir)} {
			if !filepath.IsAbs(f) {
				f = filepath.Join(dir, f)
			}
			if _, err := os.Stat(f); err != nil {
				t.Fatalf("%s: after a failed restart: %v (the agent's directory must stay)", what, err)
			}
		}
	}
	restart := func(what string) int {
		t.Helper()
		r := run(t, tok, append(head, "--metrics-port", "-1")...)
		if r.code != 0 || !strings.Contains(r.stderr, "restarting agent") {
			t.Fatalf("%s: %+v", what, r)
		}
		if r := run(t, nil, "token", "--session-dir", sess); strings.TrimSpace(r.stdout) != token {
			t.Fatalf("%s: the token is %q, want the cluster's %q", what, r.stdout, token)
		}
		info, err := readAgentFile(dir, strings.TrimPrefix(filepath.Base(dir), agentDirPref))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return info.Pid
	}

	if r := run(t, nil, "stop", "--session-dir", sess); r.code != 0 {
		t.Fatalf("stop: %+v", r)
	}
	startTaken("stopped")
	pid := restart("after a failed restart")

	// Killed: its ready file stays behind.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 10*time.Second, "the agent is gone", func() bool { return !isAgentProcess(pid, strings.TrimPrefix(filepath.Base(dir), agentDirPref)) })
	startTaken("killed")
	if pid2 := restart("after a kill and a failed restart"); pid2 == pid {
		t.Fatalf("the restart reported the killed agent's pid %d", pid)
	}

	// The join endpoint's port taken: named as such.
	sess2 := t.TempDir()
	t.Cleanup(func() { run(t, nil, "stop", "--force", "--session-dir", sess2) })
	port2 := freePort(t)
	join, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port2+1))
	if err != nil {
		t.Fatal(err)
	}
	defer join.Close()
	r = run(t, nil, "start", "--head", "--port", strconv.Itoa(port2), "--session-dir", sess2, "--metrics-port", "-1", "--dashboard-port", "-1")
	if r.code != ExitPortInUse || !strings.Contains(r.stderr, "join endpoint") || !strings.Contains(r.stderr, strconv.Itoa(port2+1)) {
		t.Errorf("the join port taken: %+v, want exit %d naming the join endpoint's port %d", r, ExitPortInUse, port2+1)
	}
}
