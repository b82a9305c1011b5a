package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAgentRejoinsRestartedHead: the head is killed (SIGKILL) and, after 80 s down,
// restarted on its session dir; the agent that ran on through it (the same process) is
// back within seconds, as Ray's raylets are after a GCS restart: a driver's task that
// needs its resource lands on it within 15 s of the restart (or 10 s more than before the
// kill, on a loaded machine), and `rayctl list nodes` shows it ALIVE within 15 s, past the
// 6 s the lease restored from before the kill lasts. Its GCS client used to wait out gRPC's
// reconnect backoff, which grows to 120 s: after 80 s down the next attempt came ~20-45 s
// after the head was back.
func TestAgentRejoinsRestartedHead(t *testing.T) {
	t.Parallel() // mostly idle: it waits out the head's 80 s down
	const down = 80 * time.Second
	port, addr, sess := newSession(t)
	head := []string{"start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess, "--num-cpus", "1", "--object-store-memory", "256MiB",
		"--metrics-port", "-1", "--dashboard-port", "-1"}
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, head...)
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	tok := "RAY_GO_TOKEN=" + printedToken(t, out)
	if out, errOut, code := run(t, 90*time.Second, []string{tok}, rayctl, "start", "--address", addr, "--session-dir", sess, "--num-cpus", "1",
		"--object-store-memory", "256MiB", "--metrics-port", "-1", "--resources", `{"rejoin":1}`); code != 0 {
		t.Fatalf("rayctl start --address: exit %d\n%s\n%s", code, out, errOut)
	}
	pids := map[bool]int{} // head or not: the agent's pid
	agentID := ""
	ids, _ := filepath.Glob(filepath.Join(sess, "agent-*", "identity.json"))
	for _, f := range ids {
		b, _ := os.ReadFile(f)
		var who struct{ Head bool }
		if json.Unmarshal(b, &who) == nil {
			p, _ := os.ReadFile(filepath.Join(filepath.Dir(f), "agent.pid"))
			pids[who.Head], _ = strconv.Atoi(strings.TrimSpace(string(p)))
			if !who.Head {
				agentID = strings.TrimPrefix(filepath.Base(filepath.Dir(f)), "agent-")
			}
		}
	}
	if pids[true] == 0 || pids[false] == 0 || agentID == "" {
		t.Fatalf("agents' pids under %s: %v (agent %q), want a head's and another's", sess, pids, agentID)
	}
	env := []string{"RAY_ADDRESS=" + addr, tok}
	rejoin := func(what string) float64 {
		t.Helper()
		out, errOut, code := run(t, 2*time.Minute, env, driver, "-check", "rejoin")
		var rep struct {
			Rejoin struct {
				Node     string
				Attempts int
				Seconds  float64
			}
		}
		if err := json.Unmarshal([]byte(lastLine(out)), &rep); err != nil || code != 0 {
			t.Fatalf("%s: driver -check rejoin: exit %d, %v\nstdout: %s\nstderr: %s", what, code, err, out, tail(errOut))
		}
		t.Logf("%s: the task needing the agent's resource ran on %s after %d attempt(s), %.1f s after the driver's start", what, rep.Rejoin.Node, rep.Rejoin.Attempts, rep.Rejoin.Seconds)
		return rep.Rejoin.Seconds
	}
	// The bound: 15 s from the restart, or 10 s more than the driver took before it (on a
	// loaded machine a driver's start alone can take several seconds).
	bound := max(15*time.Second, time.Duration(rejoin("before the head's restart")*float64(time.Second))+10*time.Second)

	if err := syscall.Kill(pids[true], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed the head (pid %d, SIGKILL); restarting it in %v", pids[true], down)
	time.Sleep(down)
	if out, errOut, code := run(t, 90*time.Second, nil, rayctl, head...); code != 0 {
		t.Fatalf("restart the head: exit %d\n%s\n%s", code, out, errOut)
	}
	restarted := time.Now()

	// A driver started now: its task lands on the agent within the bound.
	ran := time.Since(restarted) + time.Duration(rejoin("after the head's restart")*float64(time.Second))
	if ran > bound {
		t.Errorf("after the head's restart, a task needing the agent's resource ran there %.1f s later, want at most %v", ran.Seconds(), bound)
	}

	// rayctl lists the agent ALIVE past the lease restored from before the kill (it lasts
	// AliveTTL, 6 s, from the restart): alive because it registered again.
	if d := time.Until(restarted.Add(7 * time.Second)); d > 0 {
		time.Sleep(d)
	}
	var alive time.Duration
	for {
		if state := nodeState(t, sess, agentID); state == "ALIVE" {
			alive = time.Since(restarted)
			break
		} else if time.Since(restarted) > 15*time.Second {
			t.Errorf("after the head's restart, the agent %s is %s in `rayctl list nodes` %.1f s later, want ALIVE within 15 s", agentID, state, time.Since(restarted).Seconds())
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("after the head's restart: the task ran on the agent after %.1f s, the agent listed ALIVE (checked from 7 s on) after %.1f s", ran.Seconds(), alive.Seconds())
	if err := syscall.Kill(pids[false], 0); err != nil {
		t.Errorf("the agent (pid %d) is gone: %v; it must have run on through the head's restart", pids[false], err)
	}
}

// nodeState is the state `rayctl list nodes` gives the node id ("" when not listed).
func nodeState(t *testing.T, sess, id string) string {
	t.Helper()
	out, errOut, code := run(t, time.Minute, nil, rayctl, "list", "nodes", "-o", "json", "--session-dir", sess)
	if code != 0 {
		t.Fatalf("rayctl list nodes: exit %d\n%s\n%s", code, out, errOut)
	}
	var nodes []struct {
		NodeID string `json:"node_id"`
		State  string
	}
	if err := json.Unmarshal([]byte(out), &nodes); err != nil {
		t.Fatalf("rayctl list nodes -o json: %v\n%s", err, out)
	}
	for _, n := range nodes {
		if n.NodeID == id {
			return n.State
		}
	}
	return ""
}
