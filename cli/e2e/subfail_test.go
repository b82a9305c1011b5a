package e2e

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSubmitFailuresListed: a driver on a rayctl head calls a function no one registered
// and asks for 1000 CPUs; `rayctl list tasks --filter state=failed` lists both, FAILED,
// with their error's kind and message, and `rayctl summary tasks` counts them. Before,
// tasks that failed as they were submitted were in no list, summary or metric.
func TestSubmitFailuresListed(t *testing.T) {
	port, addr, sess := newSession(t)
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess,
		"--num-cpus", "2", "--object-store-memory", "256MiB", "--dashboard-port", "-1", "--metrics-port", "-1")
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	tok := []string{"RAY_GO_TOKEN=" + printedToken(t, out)}
	cmd := startReady(t, driver, "subfail", append([]string{"RAY_ADDRESS=" + addr}, tok...), "subfail ready\n")
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	out, errOut, code = run(t, time.Minute, tok, rayctl, "list", "tasks", "--address", addr, "--filter", "state=failed", "-o", "json")
	if code != 0 {
		t.Fatalf("rayctl list tasks --filter state=failed: exit %d\n%s\n%s", code, out, errOut)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("rayctl list tasks -o json: %v\n%s", err, out)
	}
	want := map[string][2]string{ // name: error type, what the error says
		"e2e.NoSuchFunction": {"UNKNOWN_FUNCTION", "e2e.NoSuchFunction"},
		"e2e.Add":            {"INFEASIBLE", "CPU=1000"},
	}
	for _, r := range rows {
		name, _ := r["name"].(string)
		w, ok := want[name]
		if !ok {
			t.Errorf("an unexpected FAILED task: %v", r)
			continue
		}
		delete(want, name)
		msg, _ := r["error"].(string)
		if r["state"] != "FAILED" || r["error_type"] != w[0] || !strings.Contains(msg, w[1]) || r["job_id"] == "" || r["submitted"] == "" {
			t.Errorf("%s: %v, want FAILED with error type %s and an error saying %q", name, r, w[0], w[1])
		}
	}
	if len(want) > 0 {
		t.Errorf("rayctl list tasks --filter state=failed lacks %v:\n%s", want, out)
	}
	out, errOut, code = run(t, time.Minute, tok, rayctl, "summary", "tasks", "--address", addr, "-o", "json")
	if code != 0 || !strings.Contains(out, "e2e.NoSuchFunction") || !strings.Contains(out, "FAILED") {
		t.Errorf("rayctl summary tasks: exit %d\n%s\n%s", code, out, errOut)
	}
}
