package e2e

import (
	"encoding/json"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPlacementGroupOfAnotherJob: a job cannot place work in another job's placement
// group. The group's bundles are reserved in its own job's worker processes, so job B's
// task in job A's group ran in job A's worker process (with A's binary and runtime
// context: "workers of different jobs never mix" broken) and B's actor waited forever for
// a node B's view does not have. Now both are refused with an error that names the group,
// its job and the rule; B can still read the group with GetPlacementGroup.
func TestPlacementGroupOfAnotherJob(t *testing.T) {
	port, addr, sess := newSession(t)
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess,
		"--num-cpus", "2", "--object-store-memory", "256MiB", "--dashboard-port", "-1", "--metrics-port", "-1")
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	env := append(os.Environ(), "RAY_ADDRESS="+addr, "RAY_GO_TOKEN="+printedToken(t, out))
	holder := startPiped(t, "pg-holder", env)
	f := strings.Fields(holder.line(t, "pg-holder", sess))
	if len(f) != 4 || f[0]+" "+f[1] != "pg ready" {
		t.Fatalf("pg-holder printed %q, want pg ready ID JOB\n%s", f, tail(holder.stderr.String()))
	}
	group, jobA := f[2], f[3]
	out, errOut, code = run(t, 3*time.Minute, append(env, "E2E_PG="+group), driver, "-check", "pg-other")
	var rep struct {
		Job          string
		TaskJob      string `json:"task_job"`
		TaskErr      string `json:"task_err"`
		ActorErr     string `json:"actor_err"`
		ActorCallErr string `json:"actor_call_err"`
		Error        string
	}
	if err := json.Unmarshal([]byte(lastLine(out)), &rep); err != nil || code != 0 || rep.Error != "" {
		t.Fatalf("pg-other: exit %d, %v, %+v\n%s\n%s", code, err, rep, out, tail(errOut))
	}
	for what, msg := range map[string]string{"task": rep.TaskErr, "actor": rep.ActorErr} {
		if !strings.Contains(msg, group) || !strings.Contains(msg, "job "+jobA) || !strings.Contains(msg, "only in its own placement groups") {
			t.Errorf("job %s's %s in job %s's group %s: error %q; want it refused, naming the group, its job and the rule (task ran in job %q; actor call: %q)",
				rep.Job, what, jobA, group, msg, rep.TaskJob, rep.ActorCallErr)
		}
	}
	_, _ = io.WriteString(holder.in, "done\n")
	_ = holder.in.Close()
	if l := holder.line(t, "pg-holder's end", sess); !strings.HasPrefix(l, "{") || strings.Contains(l, "error") {
		t.Fatalf("pg-holder: %q\n%s", l, tail(holder.stderr.String()))
	}
}
