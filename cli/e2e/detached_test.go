package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

type detachedRep struct {
	Detached struct {
		Sum       int
		Nondet    int
		Node      string
		PID       int
		ID        string
		NondetErr string `json:"nondet_err"`
		DetErr    string `json:"det_err"`
	}
	Error string
}

type actorRow struct {
	ActorID  string `json:"actor_id"`
	Name     string `json:"name"`
	State    string `json:"state"`
	JobID    string `json:"job_id"`
	Detached bool   `json:"detached"`
	Restarts int    `json:"restarts"`
}

// TestDetachedActor: a detached named actor outlives the job that created it (Ray's
// lifetime="detached"). Job A creates it and changes its state, then ends with
// ray.Shutdown; job A is SUCCEEDED while the actor stays ALIVE; job B gets it by name and
// namespace, sees the state A left (after the actor's host was killed with SIGKILL: it
// restarted and replayed its method log), and kills it; job C's GetActor finds no such actor. A
// non-detached named actor of job A is gone once A has ended. Job A's worker processes
// run on while its detached actor lives, and end after it was killed; rayctl stop ends a
// detached actor's processes too.
func TestDetachedActor(t *testing.T) {
	t.Parallel() // mostly idle: it waits for jobs and processes to end
	port, addr, sess := newSession(t)
	env := startTwoNodes(t, port, addr, sess)
	job := func(check string) detachedRep {
		t.Helper()
		out, errOut, code := run(t, 3*time.Minute, env, driver, "-check", check)
		var rep detachedRep
		if err := json.Unmarshal([]byte(lastLine(out)), &rep); err != nil || code != 0 {
			t.Fatalf("driver -check %s: exit %d, %v\nstdout: %s\nstderr: %s\n%s", check, code, err, out, tail(errOut), sessionLogs(sess, 30))
		}
		return rep
	}
	actorRows := func() []actorRow {
		t.Helper()
		out, errOut, code := run(t, time.Minute, env, rayctl, "list", "actors", "--address", addr, "-o", "json")
		var rows []actorRow
		if err := json.Unmarshal([]byte(out), &rows); err != nil || code != 0 {
			t.Fatalf("rayctl list actors: exit %d, %v\n%s\n%s", code, err, out, errOut)
		}
		return rows
	}
	actors := func() map[string]actorRow {
		t.Helper()
		m := map[string]actorRow{}
		for _, r := range actorRows() {
			m[r.Name] = r
		}
		return m
	}
	jobRow := func(id string) (state, entrypoint string) {
		t.Helper()
		out, errOut, code := run(t, time.Minute, env, rayctl, "list", "jobs", "--address", addr, "-o", "json")
		var rows []struct {
			JobID      string `json:"job_id"`
			State      string `json:"state"`
			Entrypoint string `json:"entrypoint"`
		}
		if err := json.Unmarshal([]byte(out), &rows); err != nil || code != 0 {
			t.Fatalf("rayctl list jobs: exit %d, %v\n%s\n%s", code, err, out, errOut)
		}
		for _, r := range rows {
			if r.JobID == id {
				return r.State, r.Entrypoint
			}
		}
		return "", ""
	}
	jobState := func(id string) string { s, _ := jobRow(id); return s }

	a := job("detached-a")
	if a.Detached.Sum != 15 || a.Detached.Nondet != 7 {
		t.Fatalf("job A: detached actor's sum %d (want 15), non-detached's %d (want 7)", a.Detached.Sum, a.Detached.Nondet)
	}
	before := actors()
	jobA := before["det"].JobID
	if !before["det"].Detached || jobA == "" {
		t.Fatalf("rayctl list actors after job A: %+v", before)
	}
	if _, ep := jobRow(jobA); !strings.HasSuffix(ep, "driver -check detached-a") {
		t.Errorf("job A's entrypoint %q, want the driver's command line", ep)
	}
	if s := jobState(jobA); s != "SUCCEEDED" {
		t.Fatalf("job A is %q after it ended, want SUCCEEDED", s)
	}
	// The non-detached actor dies with its job (its last handle went with job A's driver).
	deadline := time.Now().Add(time.Minute)
	for actors()["nondet"].State != "DEAD" {
		if time.Now().After(deadline) {
			t.Fatalf("job A's non-detached actor is not DEAD after the job ended: %+v\n%s", actors(), sessionLogs(sess, 30))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if s := actors()["det"].State; s != "ALIVE" {
		t.Fatalf("the detached actor is %s after job A ended, want ALIVE\n%s", s, sessionLogs(sess, 30))
	}
	if len(jobProcesses(t, jobA)) == 0 {
		t.Fatalf("job A's worker processes ended with the job; its detached actor lives in one\n%s", sessionLogs(sess, 30))
	}
	// Its host is killed after its job ended: the actor restarts (MaxRestarts 3) with the
	// state its method log rebuilds.
	if a.Detached.PID <= 0 {
		t.Fatalf("job A did not report the detached actor's process: %+v", a.Detached)
	}
	if err := syscall.Kill(a.Detached.PID, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 the detached actor's host %d: %v", a.Detached.PID, err)
	}

	b := job("detached-b")
	if b.Detached.Sum != 115 {
		t.Errorf("job B: the detached actor's sum after adding 100 is %d, want 115 (the state job A left)", b.Detached.Sum)
	}
	if b.Detached.Node == a.Detached.Node {
		t.Errorf("job B reached the detached actor on %s, the node whose process was killed", b.Detached.Node)
	}
	if !strings.Contains(b.Detached.NondetErr, "nondet") {
		t.Errorf("job B found job A's non-detached actor (error %q)", b.Detached.NondetErr)
	}
	if s := jobState(jobA); s != "SUCCEEDED" {
		t.Errorf("job A is %q after job B used its detached actor, want SUCCEEDED", s)
	}
	c := job("detached-c")
	if !strings.Contains(c.Detached.DetErr, "det") {
		t.Errorf("job C found the detached actor job B killed (error %q)", c.Detached.DetErr)
	}
	if d := actors()["det"]; d.State != "DEAD" || d.Restarts != 1 {
		t.Errorf("the killed detached actor is %s after %d restarts, want DEAD after 1", d.State, d.Restarts)
	}
	// With its last detached actor dead, job A's worker processes end.
	deadline = time.Now().Add(time.Minute)
	for len(jobProcesses(t, jobA)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("job A's worker processes %v still run after its last detached actor was killed\n%s", jobProcesses(t, jobA), sessionLogs(sess, 30))
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Job E's driver is killed (SIGKILL) after it created a detached actor: the job is
	// FAILED, the actor lives on with its state, and job F uses and kills it.
	cmd := startReady(t, driver, "detached-killed", env, "detached ready\n")
	cmd.Process.Kill()
	cmd.Wait()
	jobE := actors()["detk"].JobID
	deadline = time.Now().Add(time.Minute)
	for jobState(jobE) != "FAILED" {
		if time.Now().After(deadline) {
			t.Fatalf("job E (%q) is %q after its driver was killed, want FAILED", jobE, jobState(jobE))
		}
		time.Sleep(200 * time.Millisecond)
	}
	out, errOut, code := run(t, 3*time.Minute, env, driver, "-check", "detached-b", "-actor", "detk")
	var f detachedRep
	if err := json.Unmarshal([]byte(lastLine(out)), &f); err != nil || code != 0 || f.Detached.Sum != 115 {
		t.Fatalf("job F on the detached actor of a killed driver: exit %d, %v, sum %d (want 115)\nstdout: %s\nstderr: %s\n%s", code, err, f.Detached.Sum, out, tail(errOut), sessionLogs(sess, 30))
	}
	if d := actors()["detk"]; d.State != "DEAD" {
		t.Errorf("the killed detached actor of job E is %s, want DEAD", d.State)
	}

	// Job D leaves a detached actor alive: rayctl stop (the cleanup) stops its worker
	// processes with everything else, and nothing is left behind.
	job("detached-a")
	jobD := ""
	for _, r := range actorRows() {
		if r.Name == "det" && r.State == "ALIVE" {
			jobD = r.JobID
		}
	}
	if jobD == "" || jobD == jobA || len(jobProcesses(t, jobD)) == 0 {
		t.Fatalf("job D's detached actor: job %q, processes %v", jobD, jobProcesses(t, jobD))
	}
}

// jobProcesses lists the live worker processes of job (the test driver's binary started
// by an agent with the job's ID in its environment).
func jobProcesses(t testing.TB, job string) []string {
	var out []string
	for _, p := range ourProcesses(t) {
		pid := strings.Fields(p)[0]
		env, err := os.ReadFile(filepath.Join("/proc", pid, "environ"))
		if err == nil && bytes.Contains(env, []byte("\x00RAY_GO_JOB_ID="+job+"\x00")) {
			out = append(out, p)
		}
	}
	return out
}
