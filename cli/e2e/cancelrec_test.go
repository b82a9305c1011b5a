package e2e

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"
)

// TestCancelRecursiveAcrossNodes: ray.Cancel of a running task cancels its child, which
// runs on another node, and the child's child, as Ray's ray.cancel (recursive=True by
// default): the process that ran the task owns the child and cancels it, and the child's
// process its own child. Both end CANCELLED and give their resources back (they used to
// run on to their end, FINISHED).
func TestCancelRecursiveAcrossNodes(t *testing.T) {
	port, addr, sess := newSession(t)
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess,
		"--num-cpus", "2", "--object-store-memory", "256MiB", "--resources", `{"near":1}`)
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	tok := []string{"RAY_GO_TOKEN=" + printedToken(t, out)}
	out, errOut, code = run(t, 90*time.Second, tok, rayctl, "start", "--address", addr, "--session-dir", sess,
		"--num-cpus", "2", "--object-store-memory", "256MiB", "--resources", `{"far":1}`)
	if code != 0 {
		t.Fatalf("rayctl start --address: exit %d\n%s\n%s", code, out, errOut)
	}
	env := append([]string{"RAY_ADDRESS=" + addr}, tok...)
	out, errOut, code = run(t, 4*time.Minute, env, driver, "-check", "cancelrec")
	var rep struct {
		Total           map[string]float64
		Available       map[string]float64
		NodesRunning    map[string]string `json:"nodes_running"`
		ParentCancelled bool              `json:"parent_cancelled"`
		ParentError     string            `json:"parent_error"`
		States          map[string]string
		Errors          map[string]string // function -> its task's error, if any
		Seconds         float64
		Error           string
	}
	if err := json.Unmarshal([]byte(lastLine(out)), &rep); err != nil || code != 0 || rep.Error != "" {
		t.Fatalf("driver -check cancelrec: exit %d, %v\nstdout: %s\nstderr: %s", code, err, out, tail(errOut))
	}
	t.Logf("nodes: %v; after the cancellation (%.2f s): %v (errors: %v), available %v of %v", rep.NodesRunning, rep.Seconds, rep.States, rep.Errors, rep.Available, rep.Total)
	if p, m := rep.NodesRunning["e2e.CancelParent"], rep.NodesRunning["e2e.CancelMid"]; p == "" || p == m {
		t.Errorf("the parent ran on %q, its child on %q: want two nodes", p, m)
	}
	if !rep.ParentCancelled {
		t.Errorf("Get of the cancelled parent: %s, want ErrCancelled", rep.ParentError)
	}
	for _, fn := range []string{"e2e.CancelMid", "e2e.CancelLeaf"} {
		if rep.States[fn] != "CANCELLED" {
			t.Errorf("%s (a descendant of the cancelled task): %q (error: %q), want CANCELLED", fn, rep.States[fn], rep.Errors[fn])
		}
	}
	for _, r := range []string{"far", "CPU"} {
		if rep.Available[r] != rep.Total[r] {
			t.Errorf("available %s: %v of %v after the cancellation, want all", r, rep.Available[r], rep.Total[r])
		}
	}
}
