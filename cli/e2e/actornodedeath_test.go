package e2e

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestActorNodeDeath: a whole node (its agent and its worker process, SIGKILL) dies under
// pipelined calls to exactly-once actors: the actors it hosted restart on the other nodes
// as soon as the membership reports it gone, and every call completes exactly once. A
// restart used to wait ~30 s (the actor manager's sweep) whenever the watch brought the
// Restarting record before the step that wrote it returned; the restarts must come
// within the bound, far below that, and their Restarting transitions say why.
func TestActorNodeDeath(t *testing.T) {
	port, addr, sess := newSession(t)
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess, "--num-cpus", "2", "--object-store-memory", "256MiB")
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	tok := []string{"RAY_GO_TOKEN=" + printedToken(t, out)}
	for range 2 { // two agents, "spare": the victim is one of their worker processes
		out, errOut, code = run(t, 90*time.Second, tok, rayctl, "start", "--address", addr, "--session-dir", sess, "--num-cpus", "2", "--object-store-memory", "256MiB", "--resources", `{"spare":1}`)
		if code != 0 {
			t.Fatalf("rayctl start --address: exit %d\n%s\n%s", code, out, errOut)
		}
	}
	env := append([]string{"RAY_ADDRESS=" + addr}, tok...)
	out, errOut, code = run(t, 4*time.Minute, env, driver, "-check", "actornodedeath")
	var rep struct {
		Actornodedeath struct {
			Victim      string
			OnVictim    int `json:"on_victim"`
			Calls       int
			Wrong       int
			Seconds     float64
			Finals      []int
			RestartedOn []string `json:"restarted_on"`
			Details     []string
		}
	}
	if err := json.Unmarshal([]byte(lastLine(out)), &rep); err != nil || code != 0 {
		t.Fatalf("driver -check actornodedeath: exit %d, %v\nstdout: %s\nstderr: %s\n%s", code, err, out, tail(errOut), sessionLogs(sess, 30))
	}
	r := rep.Actornodedeath
	const bound = 10 * time.Second
	if r.Wrong != 0 || r.Seconds > bound.Seconds() {
		t.Errorf("node %s (hosting %d of the actors) killed: %d of %d calls wrong, the last answered %.2f s after the kill (want at most %v)",
			r.Victim, r.OnVictim, r.Wrong, r.Calls, r.Seconds, bound)
	}
	for k, f := range r.Finals {
		if f != 1275 {
			t.Errorf("actor %d: final sum %d, want 1275 (1+...+50, each call once)", k, f)
		}
	}
	for _, n := range r.RestartedOn {
		if n == r.Victim || n == "" {
			t.Errorf("an actor of the dead node %s is on %q after its restart", r.Victim, n)
		}
	}
	if len(r.Details) != r.OnVictim {
		t.Errorf("%d Restarting transitions placing nowhere yet, want one per actor of the dead node (%d)", len(r.Details), r.OnVictim)
	}
	for _, d := range r.Details {
		if !strings.Contains(d, r.Victim) || !strings.Contains(d, "died") || !strings.Contains(d, "restarting") {
			t.Errorf("a restarted actor's Restarting transition says %q, want why: its node %s died", d, r.Victim)
		}
	}
	t.Logf("node %s killed (agent and worker process) under %d pipelined calls to 24 actors (%d on it): all answered exactly once %.2f s after the kill; restarts: %q",
		r.Victim, r.Calls, r.OnVictim, r.Seconds, r.Details)
}
