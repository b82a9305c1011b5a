package e2e

import (
	"encoding/json"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSubmittedDriverActorsDie: a non-detached actor dies with its owner when the owner is
// a driver run by `rayctl job submit`, whether the job is stopped (`rayctl job stop`: the
// driver gets SIGTERM and does not call ray.Shutdown) or its driver is killed with SIGKILL:
// the actor is DEAD, "owner died", as for a driver run directly (TestActorOwnerDeath).
// Before, the job ended (STOPPED, FAILED) the moment the head saw its driver exit, its
// worker processes were stopped at once, and with them the only actor managers that would
// have stepped the actor when the driver's lease lapsed: the actor stayed ALIVE for ever
// (rayctl list and summary actors, ray_actors). Now the head ends the actors of an ended
// job's driver (internal/assembly/agent, ownerdeath.go).
func TestSubmittedDriverActorsDie(t *testing.T) {
	port, addr, sess := newSession(t)
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess,
		"--num-cpus", "2", "--object-store-memory", "256MiB", "--dashboard-port", "-1", "--metrics-port", "-1")
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	env := []string{"RAY_GO_TOKEN=" + printedToken(t, out)}

	type actorRow struct {
		Name, State, Detail string
		JobID               string `json:"job_id"`
	}
	actor := func(name string) actorRow {
		t.Helper()
		out, errOut, code := run(t, time.Minute, env, rayctl, "list", "actors", "--address", addr, "-o", "json")
		var rows []actorRow
		if err := json.Unmarshal([]byte(out), &rows); err != nil || code != 0 {
			t.Fatalf("rayctl list actors: exit %d, %v\n%s\n%s", code, err, out, errOut)
		}
		for _, r := range rows {
			if r.Name == name {
				return r
			}
		}
		return actorRow{}
	}
	type subView struct {
		State string `json:"state"`
		JobID string `json:"job_id"`
		Pid   int    `json:"pid"`
	}
	submission := func(id string) subView {
		t.Helper()
		out, errOut, code := run(t, time.Minute, env, rayctl, "job", "status", "--address", addr, "-o", "json", id)
		var v subView
		if err := json.Unmarshal([]byte(out), &v); err != nil || code != 0 {
			t.Fatalf("rayctl job status %s: exit %d, %v\n%s\n%s", id, code, err, out, errOut)
		}
		return v
	}

	for _, how := range []string{"stop", "kill"} {
		name := "oj-" + how
		out, errOut, code := run(t, time.Minute, env, rayctl, "job", "submit", "--no-wait", "--address", addr, "--", driver, "-check", "ownerjob", "-actor", name)
		sub := strings.TrimSpace(out)
		if code != 0 || sub == "" {
			t.Fatalf("rayctl job submit --no-wait: exit %d\nstdout: %s\nstderr: %s", code, out, tail(errOut))
		}
		// Ready: it printed "owner ready", its job is linked and its actor is ALIVE.
		var v subView
		deadline := time.Now().Add(90 * time.Second)
		for {
			logs, _, _ := run(t, time.Minute, env, rayctl, "job", "logs", "--address", addr, sub)
			v = submission(sub)
			if strings.Contains(logs, "owner ready") && v.JobID != "" && v.Pid > 0 && actor(name).State == "ALIVE" {
				break
			}
			if v.State != "PENDING" && v.State != "RUNNING" || time.Now().After(deadline) {
				t.Fatalf("the submitted driver (%s) did not get ready: %+v, actor %+v\n%s", how, v, actor(name), logs)
			}
			time.Sleep(200 * time.Millisecond)
		}
		if r := actor(name); r.JobID != v.JobID {
			t.Fatalf("actor %s is of job %q, want the submission's job %q", name, r.JobID, v.JobID)
		}
		want := "STOPPED"
		if how == "stop" {
			out, errOut, code = run(t, time.Minute, env, rayctl, "job", "stop", "--address", addr, sub)
			if code != 0 || !strings.Contains(out, sub+" STOPPED") {
				t.Fatalf("rayctl job stop: exit %d\nstdout: %s\nstderr: %s", code, out, tail(errOut))
			}
		} else {
			want = "FAILED"
			if err := syscall.Kill(v.Pid, syscall.SIGKILL); err != nil {
				t.Fatalf("kill the driver (pid %d): %v", v.Pid, err)
			}
		}
		killed := time.Now()
		// The driver's death is sure at once (the head saw its process exit); a bound of
		// 30 s leaves room for a slow machine, and for the membership's path (a lease and
		// its confirmation), had the job's worker processes lived that long.
		r := actor(name)
		for ; r.State != "DEAD"; r = actor(name) {
			if time.Since(killed) > 30*time.Second {
				t.Fatalf("%s: the submitted driver's actor is %+v %v after (job %s: %+v), want DEAD, owner died", how, r, time.Since(killed).Round(time.Second), v.JobID, submission(sub))
			}
			time.Sleep(200 * time.Millisecond)
		}
		if !strings.Contains(r.Detail, "owner died") {
			t.Errorf("%s: the submitted driver's actor is DEAD with %q, want owner died", how, r.Detail)
		}
		t.Logf("%s: the submitted driver's actor was DEAD (%s) %.2f s after", how, r.Detail, time.Since(killed).Seconds())
		for deadline := time.Now().Add(time.Minute); submission(sub).State != want; time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the submission is %+v, want %s", how, submission(sub), want)
			}
		}
	}
	out, errOut, code = run(t, time.Minute, env, rayctl, "summary", "actors", "--address", addr)
	if code != 0 || strings.Contains(out, "ALIVE") {
		t.Errorf("rayctl summary actors after both drivers died: exit %d, want no ALIVE actor\n%s\n%s", code, out, errOut)
	}
}
