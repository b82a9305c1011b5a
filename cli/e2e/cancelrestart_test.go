package e2e

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"
)

// TestCancelQueuedActorCallWorkerKilled: ray.Cancel of a call waiting at an AtMostOnce
// actor (MaxTaskRetries(-1), so the calls in flight are sent again after a restart)
// behind a running call, across processes: Get of it says ErrCancelled while the running
// call still runs; the actor's worker process is then SIGKILLed, and the restarted actor
// (in another worker process) never runs the cancelled call, while the running call
// (sent again) and the call after the cancelled one complete. The same with the Cancel
// made right after the kill, while the actor restarts.
func TestCancelQueuedActorCallWorkerKilled(t *testing.T) {
	port, addr, sess := newSession(t)
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess, "--num-cpus", "2", "--object-store-memory", "256MiB")
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	tok := []string{"RAY_GO_TOKEN=" + printedToken(t, out)}
	out, errOut, code = run(t, 90*time.Second, tok, rayctl, "start", "--address", addr, "--session-dir", sess, "--num-cpus", "2", "--object-store-memory", "256MiB", "--resources", `{"spare":1}`)
	if code != 0 {
		t.Fatalf("rayctl start --address: exit %d\n%s\n%s", code, out, errOut)
	}
	env := append([]string{"RAY_ADDRESS=" + addr}, tok...)
	out, errOut, code = run(t, 4*time.Minute, env, driver, "-check", "cancelrestart")
	type round struct {
		PID             int
		QueuedCancelled bool   `json:"queued_cancelled"`
		QueuedError     string `json:"queued_error"`
		QueuedRan       int    `json:"queued_ran"`
		HoldRunning     *bool  `json:"hold_running"`
		HoldError       string `json:"hold_error"`
		After           string
	}
	var rep struct {
		Cancelrestart map[string]round
	}
	if err := json.Unmarshal([]byte(lastLine(out)), &rep); err != nil || code != 0 {
		t.Fatalf("driver -check cancelrestart: exit %d, %v\nstdout: %s\nstderr: %s\n%s", code, err, out, tail(errOut), sessionLogs(sess, 30))
	}
	for _, when := range []string{"before", "during"} {
		r, ok := rep.Cancelrestart[when]
		if !ok {
			t.Fatalf("no round %q in %s", when, lastLine(out))
		}
		if !r.QueuedCancelled || r.QueuedRan != 0 {
			t.Errorf("%s the kill: Get of the cancelled call said %q (want ErrCancelled), and it ran %d times (want 0)", when, r.QueuedError, r.QueuedRan)
		}
		if r.HoldRunning != nil && !*r.HoldRunning {
			t.Errorf("%s the kill: the cancelled call was answered only once the call ahead of it had ended", when)
		}
		if r.HoldError != "" || r.After != when+"-after" {
			t.Errorf("%s the kill: the running call (sent again) gave %q, the call after the cancelled one %q (want %q)", when, r.HoldError, r.After, when+"-after")
		}
		t.Logf("%s the kill (worker process %d): cancelled call %q, ran %d times; the call after it %q", when, r.PID, r.QueuedError, r.QueuedRan, r.After)
	}
}
