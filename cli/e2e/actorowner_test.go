package e2e

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"
)

// defaultLeaseTTL is node.DefaultNodeLeaseTTL (the test's processes run with it).
const defaultLeaseTTL = 6 * time.Second

// TestActorOwnerDeath: a non-detached actor fate-shares with its owner, the process that
// created it (Ray's OWNER_DIED), here a worker process whose task created it, killed with
// SIGKILL while the driver still holds the actor's handle. The actor ends Dead with an
// owner-died cause (in its state, in the errors of its calls, in rayctl list actors), and
// GetActor of its name answers with an error (not after the 10 s a registration with the
// dead owner used to take); the detached actor the same task created lives on with its
// state, reached by name and through the handle the dead owner returned. Then a driver
// that created a named non-detached actor is killed with SIGKILL: the actor is DEAD,
// owner died, too.
func TestActorOwnerDeath(t *testing.T) {
	t.Parallel() // mostly idle: it waits out a stopped driver's lease, twice
	port, addr, sess := newSession(t)
	env := startTwoNodes(t, port, addr, sess)
	out, errOut, code := run(t, 4*time.Minute, env, driver, "-check", "actorowner")
	var rep struct {
		Actorowner struct {
			Victim             string
			Seconds            float64
			CallErr            string `json:"call_err"`
			CallActorDied      bool   `json:"call_actor_died"`
			State, Detail      string
			GetactorErr        string  `json:"getactor_err"`
			GetactorSeconds    float64 `json:"getactor_seconds"`
			GetactorDetSeconds float64 `json:"getactor_det_seconds"`
			DetSum             int     `json:"det_sum"`
		}
	}
	if err := json.Unmarshal([]byte(lastLine(out)), &rep); err != nil || code != 0 {
		t.Fatalf("driver -check actorowner: exit %d, %v\nstdout: %s\nstderr: %s\n%s", code, err, out, tail(errOut), sessionLogs(sess, 30))
	}
	r := rep.Actorowner
	if !r.CallActorDied || !strings.Contains(r.CallErr, "owner died") {
		t.Errorf("a call to the actor of a dead owner failed with %q (ErrActorDied: %v), want ErrActorDied saying the owner died", r.CallErr, r.CallActorDied)
	}
	if r.State != "Dead" || !strings.Contains(r.Detail, "owner died") {
		t.Errorf("the actor of a dead owner is %s (%q), want Dead, owner died", r.State, r.Detail)
	}
	if !strings.Contains(r.GetactorErr, "od-nondet") && !strings.Contains(r.GetactorErr, "owner died") {
		t.Errorf("GetActor of the dead owner's actor: %q, want an error naming it or saying its owner died", r.GetactorErr)
	}
	if r.DetSum != 101 {
		t.Errorf("the detached actor of a dead owner: sum %d after adding 100, want 101 (its state lived on)", r.DetSum)
	}
	type row struct {
		Name, State, Detail string
	}
	actors := func() map[string]row {
		t.Helper()
		out, errOut, code := run(t, time.Minute, env, rayctl, "list", "actors", "--address", addr, "-o", "json")
		var rows []row
		if err := json.Unmarshal([]byte(out), &rows); err != nil || code != 0 {
			t.Fatalf("rayctl list actors: exit %d, %v\n%s\n%s", code, err, out, errOut)
		}
		m := map[string]row{}
		for _, r := range rows {
			m[r.Name] = r
		}
		return m
	}
	if r := actors()["od-nondet"]; r.State != "DEAD" || !strings.Contains(r.Detail, "owner died") {
		t.Errorf("rayctl list actors: od-nondet is %+v, want DEAD, owner died", r)
	}

	// The owner is a driver. First it is stopped (SIGSTOP) for longer than the membership
	// takes to report it gone (its lease's TTL, then as long again for it to register
	// anew), and continued: a process that was only starved or cut off is not dead, and
	// its named actor must live on (the owner's death is final, so it is confirmed: its
	// address accepts connections, and its node registers again).
	cmd := startReady(t, driver, "actorowner-driver", env, "owner ready\n")
	waited := false
	defer func() {
		if !waited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2*defaultLeaseTTL + 3*time.Second)
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second) // it notices its lost lease and registers again
	if r := actors()["odd-nondet"]; r.State != "ALIVE" {
		t.Fatalf("a driver stopped %v and continued: its named actor is %+v, want ALIVE (its owner lives)\n%s", 2*defaultLeaseTTL+3*time.Second, r, sessionLogs(sess, 30))
	}
	// Then it is killed with SIGKILL while its named actor lives.
	cmd.Process.Kill()
	cmd.Wait()
	waited = true
	deadline := time.Now().Add(time.Minute)
	for r := actors()["odd-nondet"]; r.State != "DEAD"; r = actors()["odd-nondet"] {
		if time.Now().After(deadline) {
			t.Fatalf("a killed driver's named actor is %+v a minute after, want DEAD\n%s", r, sessionLogs(sess, 30))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if r := actors()["odd-nondet"]; !strings.Contains(r.Detail, "owner died") {
		t.Errorf("a killed driver's named actor is DEAD with %q, want owner died", r.Detail)
	}
	t.Logf("owner (worker process on %s) killed: its actor's calls failed %.2f s later; GetActor answered in %.3f s (%q), of the detached actor in %.3f s",
		r.Victim, r.Seconds, r.GetactorSeconds, r.GetactorErr, r.GetactorDetSeconds)
}
