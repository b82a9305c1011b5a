package e2e

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

type nsRep struct {
	NS struct {
		Namespace     string
		ID            string
		CreateErr     string `json:"create_err"`
		Found         string
		TaskFound     string `json:"task_found"`
		TaskNamespace string `json:"task_namespace"`
		OtherFound    string `json:"other_found"`
	}
	Error string
}

// TestJobNamespaces: each job runs in a namespace of named actors, as in Ray. Two jobs
// given none each get an anonymous namespace of their own: both create the detached actor
// "counter", each GetActor by name alone (from the driver, and from a task in the job's
// worker process) finds the job's own, and the second reaches the first's by giving its
// namespace (which `rayctl list actors` shows). Two jobs of the namespace "shared" (one by
// ray.WithNamespace, one submitted with RAY_GO_JOB_NAMESPACE in its environment) share
// the name: the second's creation is refused and its GetActor finds the first's actor.
// Before, every job named its actors in the one namespace "": the second job's "counter"
// was refused whatever it asked for.
func TestJobNamespaces(t *testing.T) {
	port, addr, sess := newSession(t)
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess,
		"--num-cpus", "2", "--object-store-memory", "256MiB", "--dashboard-port", "-1", "--metrics-port", "-1")
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	tok := []string{"RAY_GO_TOKEN=" + printedToken(t, out)}
	env := append([]string{"RAY_ADDRESS=" + addr}, tok...)
	parse := func(what, out, errOut string, code int) nsRep {
		t.Helper()
		var rep nsRep
		if err := json.Unmarshal([]byte(lastLine(out)), &rep); err != nil || code != 0 {
			t.Fatalf("%s: exit %d, %v\nstdout: %s\nstderr: %s", what, code, err, out, tail(errOut))
		}
		return rep
	}
	job := func(args ...string) nsRep {
		t.Helper()
		out, errOut, code := run(t, 3*time.Minute, env, driver, append([]string{"-check", "namespace"}, args...)...)
		return parse("driver -check namespace "+strings.Join(args, " "), out, errOut, code)
	}
	// own checks that a job created its "counter" and found it by name from the driver and
	// from a task running in its namespace.
	own := func(name string, r nsRep) {
		t.Helper()
		if r.NS.CreateErr != "" || r.NS.ID == "" {
			t.Fatalf("job %s could not create its actor \"counter\": %+v", name, r.NS)
		}
		if r.NS.Found != r.NS.ID || r.NS.TaskFound != r.NS.ID || r.NS.TaskNamespace != r.NS.Namespace {
			t.Fatalf("job %s: GetActor(counter) found %s from the driver and %s from a task (in namespace %q), want its own %s (namespace %q)",
				name, r.NS.Found, r.NS.TaskFound, r.NS.TaskNamespace, r.NS.ID, r.NS.Namespace)
		}
	}

	a := job()
	own("A", a)
	if a.NS.Namespace == "" {
		t.Fatalf("job A, given no namespace, reports none; want an anonymous one of its own")
	}
	// rayctl list actors shows the namespace of A's actor.
	out, errOut, code = run(t, time.Minute, tok, rayctl, "list", "actors", "--address", addr, "-o", "json")
	var rows []struct {
		ActorID   string `json:"actor_id"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		State     string `json:"state"`
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil || code != 0 {
		t.Fatalf("rayctl list actors: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	listed := false
	for _, r := range rows {
		if r.ActorID == a.NS.ID {
			listed = r.Namespace == a.NS.Namespace && r.State == "ALIVE"
		}
	}
	if !listed {
		t.Fatalf("rayctl list actors: want job A's actor %s ALIVE in namespace %q; got %+v", a.NS.ID, a.NS.Namespace, rows)
	}
	// rayctl list jobs shows the job's namespace.
	out, errOut, code = run(t, time.Minute, tok, rayctl, "list", "jobs", "--address", addr, "-o", "json")
	var jobs []struct {
		Namespace string `json:"namespace"`
	}
	if err := json.Unmarshal([]byte(out), &jobs); err != nil || code != 0 || len(jobs) != 1 || jobs[0].Namespace != a.NS.Namespace {
		t.Fatalf("rayctl list jobs: exit %d, %v; want job A in namespace %q\n%s\n%s", code, err, a.NS.Namespace, out, errOut)
	}

	b := job("-ns-other", a.NS.Namespace, "-ns-kill")
	own("B", b)
	if b.NS.Namespace == "" || b.NS.Namespace == a.NS.Namespace || b.NS.ID == a.NS.ID {
		t.Fatalf("jobs A and B, given no namespace, share one: A %+v, B %+v", a.NS, b.NS)
	}
	if b.NS.OtherFound != a.NS.ID {
		t.Fatalf("job B's GetActor(counter, %q) found %q, want job A's actor %s", a.NS.Namespace, b.NS.OtherFound, a.NS.ID)
	}

	c := job("-ns", "shared")
	own("C", c)
	if c.NS.Namespace != "shared" {
		t.Fatalf("job C with WithNamespace(shared) is in namespace %q", c.NS.Namespace)
	}
	// Job D: submitted with the namespace in its environment; its name is taken.
	out, errOut, code = run(t, 3*time.Minute, tok, rayctl, "job", "submit", "--address", addr, "--env", "RAY_GO_JOB_NAMESPACE=shared",
		"--", driver, "-check", "namespace", "-ns-kill")
	d := parse("rayctl job submit --env RAY_GO_JOB_NAMESPACE=shared -- driver -check namespace", out, errOut, code)
	if d.NS.Namespace != "shared" {
		t.Fatalf("job D submitted with RAY_GO_JOB_NAMESPACE=shared is in namespace %q", d.NS.Namespace)
	}
	if !strings.Contains(d.NS.CreateErr, "already taken") {
		t.Fatalf("job D's \"counter\" in the namespace of job C's: %q, want it refused (name taken)", d.NS.CreateErr)
	}
	if d.NS.Found != c.NS.ID || d.NS.TaskFound != c.NS.ID || d.NS.TaskNamespace != "shared" {
		t.Fatalf("job D's GetActor(counter) found %s from the driver, %s from a task (namespace %q); want job C's %s in \"shared\"",
			d.NS.Found, d.NS.TaskFound, d.NS.TaskNamespace, c.NS.ID)
	}
}
