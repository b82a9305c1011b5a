package e2e

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"
)

// TestDroppedActorElsewhere: an actor dropped without Kill gives its resources back when
// a garbage collection finds its handles gone, in each process that held one. Here the
// process that dropped the handle is not the one waiting for the resources (one node, one
// "accel"): the driver drops its actor (its automatic collections off) while a task in
// the worker process waits for an actor needing "accel"; then a worker process drops a
// handle a task kept while the driver waits. The process waiting asks the cluster's other
// processes for a collection (internal/assembly/core, collect.go; taskstate.AskCollect):
// without that, the first wait lasts until the driver collects (never here) and the second
// until the idle worker process's periodic collection (2 minutes), past the driver's bound
// of 60 s. A user's program, before: 1m57s for the second actor to answer.
func TestDroppedActorElsewhere(t *testing.T) {
	port, addr, sess := newSession(t)
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess,
		"--num-cpus", "2", "--resources", `{"accel":1}`, "--object-store-memory", "256MiB", "--dashboard-port", "-1", "--metrics-port", "-1")
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	env := []string{"RAY_ADDRESS=" + addr, "RAY_GO_TOKEN=" + printedToken(t, out)}
	out, errOut, code = run(t, 3*time.Minute, env, driver, "-check", "dropped")
	var rep struct {
		Dropped struct {
			Driver float64 `json:"driver_seconds"`
			Worker float64 `json:"worker_seconds"`
		}
		Error string
	}
	if err := json.Unmarshal([]byte(lastLine(out)), &rep); err != nil || code != 0 || rep.Error != "" {
		t.Fatalf("driver -check dropped: exit %d, %v, %s\nstdout: %s\nstderr: %s", code, err, rep.Error, out, tail(errOut))
	}
	t.Logf("the resource came back after %.1f s (dropped by the driver) and %.1f s (dropped by the worker process)", rep.Dropped.Driver, rep.Dropped.Worker)
}

// TestDroppedObjectsElsewhere: objects whose refs were dropped without Release are freed
// when a garbage collection in the process that dropped them finds the refs gone, and
// that process need not be the one whose store holds them: task results stay in the store
// of the worker process that ran the tasks, owned by the driver. The driver (its automatic
// collections off) drops four results, then keeps eight more, which take the worker
// process's 16 MiB store over 70% of its budget; the store asks for a collection in its
// process and the others (internal/assembly/core, collect.go; taskstate.AskCollect), and
// the driver's frees the four. Without that they stay until the driver collects (never
// here), past the driver's bound of 60 s.
func TestDroppedObjectsElsewhere(t *testing.T) {
	port, addr, sess := newSession(t)
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess,
		"--num-cpus", "1", "--object-store-memory", "16MiB", "--dashboard-port", "-1", "--metrics-port", "-1")
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	env := []string{"RAY_ADDRESS=" + addr, "RAY_GO_TOKEN=" + printedToken(t, out)}
	out, errOut, code = run(t, 3*time.Minute, env, driver, "-check", "droppedobjects")
	var rep struct {
		Dropped struct {
			Seconds float64 `json:"seconds"`
		} `json:"dropped_objects"`
		Error string
	}
	if err := json.Unmarshal([]byte(lastLine(out)), &rep); err != nil || code != 0 || rep.Error != "" {
		t.Fatalf("driver -check droppedobjects: exit %d, %v, %s\nstdout: %s\nstderr: %s", code, err, rep.Error, out, tail(errOut))
	}
	t.Logf("the dropped results were freed %.1f s after the kept ones came", rep.Dropped.Seconds)
}

// TestDeadActorFreesBorrowedObjects: the objects only an actor's state kept (borrowed, in
// the job's worker process) are freed once the actor is dead and that process collects
// garbage, whether the actor was killed, its only handle dropped, or it was an at-most-once
// actor killed. Before, a stopped grain kept its instance for the life of the process:
// the driver's objects stayed in its store for good (a tester's run: 301 s after Kill).
func TestDeadActorFreesBorrowedObjects(t *testing.T) {
	port, addr, sess := newSession(t)
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess,
		"--num-cpus", "1", "--object-store-memory", "64MiB", "--dashboard-port", "-1", "--metrics-port", "-1")
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	env := []string{"RAY_ADDRESS=" + addr, "RAY_GO_TOKEN=" + printedToken(t, out)}
	out, errOut, code = run(t, 5*time.Minute, env, driver, "-check", "actorfree")
	var rep struct {
		Free  map[string]float64 `json:"actorfree"`
		Error string
	}
	if err := json.Unmarshal([]byte(lastLine(out)), &rep); err != nil || code != 0 || rep.Error != "" {
		t.Fatalf("driver -check actorfree: exit %d, %v, %s\nstdout: %s\nstderr: %s", code, err, rep.Error, out, tail(errOut))
	}
	t.Logf("the objects were freed after (s): %v", rep.Free)
}
