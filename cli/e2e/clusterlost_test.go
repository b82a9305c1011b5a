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

// TestClusterLost: a driver whose whole cluster is stopped (every agent, the head's GCS
// with them) while its tasks run fails, within a bound, with errors that say the cluster
// is lost (ray.ErrClusterLost) and where its GCS was: every pending Get, a later task's
// Get and a later Wait, and a later actor call (not as the actor's death);
// a result ready before stays ready (Wait) and readable (Get); and its Shutdown does not
// wait on the GCS. Before, it waited for
// ever in a Get, retrying the GCS every second. The bound is lowered for the test
// (RAY_GCS_RECONNECT_TIMEOUT=3s after the driver's 6 s lease lapsed; the default, as
// Ray's, is 60 s).
func TestClusterLost(t *testing.T) {
	t.Parallel() // mostly idle: it waits out a lease and the reconnect timeout
	port, addr, sess := newSession(t)
	env := append(startTwoNodes(t, port, addr, sess), "RAY_GCS_RECONNECT_TIMEOUT=3s")
	p := startPiped(t, "clusterlost", append(os.Environ(), env...))
	if l := p.line(t, `"lost ready"`, sess); l != "lost ready" {
		t.Fatalf("the driver said %q, want \"lost ready\"\n%s", l, tail(p.stderr.String()))
	}
	stopped := time.Now()
	if out, errOut, code := run(t, time.Minute, nil, rayctl, "stop", "--session-dir", sess); code != 0 {
		t.Fatalf("rayctl stop: exit %d\n%s\n%s", code, out, errOut)
	}
	// The lease lapses 6 s after the GCS's last answer, the driver gives up 3 s later: well
	// within a minute, with its Shutdown.
	last := p.line(t, "the driver's report", sess)
	took := time.Since(stopped)
	var rep struct {
		Clusterlost struct {
			Errors        []string
			Lost          int
			Seconds       float64
			ActorErrors   []string `json:"actor_errors"`
			LaterCallLost bool     `json:"later_call_lost"`
			LaterCallDied bool     `json:"later_call_died"`
			ReadyWait     string   `json:"ready_wait"`
			ReadyGet      string   `json:"ready_get"`
		}
		Shutdown float64 `json:"shutdown_seconds"`
		Error    string
	}
	if err := json.Unmarshal([]byte(last), &rep); err != nil || rep.Error != "" {
		t.Fatalf("driver: %v, %s; last line %q\n%s", err, rep.Error, last, tail(p.stderr.String()))
	}
	c := rep.Clusterlost
	t.Logf("the driver reported %.1f s after the stop (its calls failed after %.1f s, Shutdown took %.1f s); first error: %s",
		took.Seconds(), c.Seconds, rep.Shutdown, c.Errors[0])
	if c.Lost != 8 || len(c.Errors) != 8 {
		t.Errorf("%d of %d errors match ray.ErrClusterLost, want 8 of 8 (6 pending Gets, a later task, a later Wait):\n%s", c.Lost, len(c.Errors), strings.Join(c.Errors, "\n"))
	}
	for _, e := range c.Errors {
		if !strings.Contains(e, "GCS at "+addr+" has not answered") {
			t.Errorf("error does not say which GCS did not answer: %s", e)
			break
		}
	}
	// The running call's actor really died with its host (the agents were stopped); a
	// call made after the loss cannot know, and says the cluster is lost.
	if !c.LaterCallLost || c.LaterCallDied || strings.Contains(c.ActorErrors[1], "died") {
		t.Errorf("an actor call made after the loss: %s (matches ray.ErrClusterLost: %v, ray.ErrActorDied: %v); want the loss, not the actor's death",
			c.ActorErrors[1], c.LaterCallLost, c.LaterCallDied)
	}
	if c.ReadyWait != "ok" || c.ReadyGet != "ok" {
		t.Errorf("a result ready before the loss: Wait %s, Get %s; want it ready and readable", c.ReadyWait, c.ReadyGet)
	}
	if rep.Shutdown > 5 {
		t.Errorf("Shutdown of the driver that lost its cluster took %.1f s, want at most 5", rep.Shutdown)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("driver: %v\n%s", err, tail(p.stderr.String()))
	}
}

// TestClusterLostActorLivesOn: a driver whose GCS goes away while its actor's host lives
// on (the head, GCS and all, is killed; the actor runs on the other agent) takes its
// cluster for lost, and the actor call it was waiting for, and one made after, fail with
// errors that match ray.ErrClusterLost, not ray.ErrActorDied, and do not say the actor
// died: it may well live on. A result read before stays readable. Before, the running
// call failed as the actor's death (Lose failed the callers as a death would).
func TestClusterLostActorLivesOn(t *testing.T) {
	t.Parallel() // mostly idle: it waits out a lease and the reconnect timeout
	port, addr, sess := newSession(t)
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess, "--num-cpus", "2", "--object-store-memory", "256MiB")
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	tok := "RAY_GO_TOKEN=" + printedToken(t, out)
	if out, errOut, code := run(t, 90*time.Second, []string{tok}, rayctl, "start", "--address", addr, "--session-dir", sess, "--num-cpus", "1",
		"--object-store-memory", "256MiB", "--resources", `{"accel":1}`); code != 0 {
		t.Fatalf("rayctl start --address: exit %d\n%s\n%s", code, out, errOut)
	}
	headPID := 0
	ids, _ := filepath.Glob(filepath.Join(sess, "agent-*", "identity.json"))
	for _, f := range ids {
		b, _ := os.ReadFile(f)
		var who struct{ Head bool }
		if json.Unmarshal(b, &who) == nil && who.Head {
			p, _ := os.ReadFile(filepath.Join(filepath.Dir(f), "agent.pid"))
			headPID, _ = strconv.Atoi(strings.TrimSpace(string(p)))
		}
	}
	if headPID == 0 {
		t.Fatalf("no head agent's pid under %s", sess)
	}
	p := startPiped(t, "clusterlost-actor", append(os.Environ(), "RAY_ADDRESS="+addr, tok, "RAY_GCS_RECONNECT_TIMEOUT=3s"))
	if l := p.line(t, `"lost ready"`, sess); l != "lost ready" {
		t.Fatalf("the driver said %q, want \"lost ready\"\n%s", l, tail(p.stderr.String()))
	}
	if err := syscall.Kill(headPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	last := p.line(t, "the driver's report", sess)
	var rep struct {
		C struct {
			Errors  []string
			Lost    []bool
			Died    []bool
			FirstOK bool `json:"first_ok"`
		} `json:"clusterlost_actor"`
		Error string
	}
	if err := json.Unmarshal([]byte(last), &rep); err != nil || rep.Error != "" || len(rep.C.Errors) != 2 {
		t.Fatalf("driver: %v, %s; last line %q\n%s", err, rep.Error, last, tail(p.stderr.String()))
	}
	for i, what := range []string{"the call running when the GCS went", "a call made after the loss"} {
		e := rep.C.Errors[i]
		t.Logf("%s: %s", what, e)
		if !rep.C.Lost[i] || rep.C.Died[i] || strings.Contains(e, "died") {
			t.Errorf("%s: matches ray.ErrClusterLost %v, ray.ErrActorDied %v; want the loss, not the actor's death: %s", what, rep.C.Lost[i], rep.C.Died[i], e)
		}
	}
	if !rep.C.FirstOK {
		t.Error("a call's result read before the loss is not readable after it")
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("driver: %v\n%s", err, tail(p.stderr.String()))
	}
}
