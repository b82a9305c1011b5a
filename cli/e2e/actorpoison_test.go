package e2e

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestActorPoisonCall: a call to an exactly-once actor whose method exits its worker
// process. The call was running when its host died, so the restart replays it once (the
// log cannot tell it from a call that merely waited), which kills that host too; the next
// restart takes it as the cause: it fails with ErrActorDied saying so, is not run again,
// and the actor serves on with the calls around it applied exactly once, having used one
// restart per host death. It used to be replayed on every restart, killing a worker
// process of the job on every machine (and the actors in them) until the restarts were
// used up, and then the actor died with "no restart left" and no word of the call.
func TestActorPoisonCall(t *testing.T) {
	port, addr, sess := newSession(t)
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess, "--num-cpus", "2", "--object-store-memory", "256MiB")
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	tok := []string{"RAY_GO_TOKEN=" + printedToken(t, out)}
	for range 2 {
		out, errOut, code = run(t, 90*time.Second, tok, rayctl, "start", "--address", addr, "--session-dir", sess, "--num-cpus", "2", "--object-store-memory", "256MiB")
		if code != 0 {
			t.Fatalf("rayctl start --address: exit %d\n%s\n%s", code, out, errOut)
		}
	}
	env := append([]string{"RAY_ADDRESS=" + addr}, tok...)
	out, errOut, code = run(t, 5*time.Minute, env, driver, "-check", "actorpoison")
	var rep struct {
		Actorpoison struct {
			Add2, Add3, Add4 int
			Add2Err          string `json:"add2_err"`
			Add3Err          string `json:"add3_err"`
			Add4Err          string `json:"add4_err"`
			Exit             int
			ExitErr          string `json:"exit_err"`
			ExitDied         bool   `json:"exit_died"`
			Phase            string
			Restarts         int
			Detail           string
			BystandersDead   int `json:"bystanders_dead"`
		}
	}
	if err := json.Unmarshal([]byte(lastLine(out)), &rep); err != nil || code != 0 {
		t.Fatalf("driver -check actorpoison: exit %d, %v\nstdout: %s\nstderr: %s\n%s", code, err, out, tail(errOut), sessionLogs(sess, 30))
	}
	r := rep.Actorpoison
	t.Logf("victim: %s, %d restarts (%s); Exit: %q; Add(2,3,4) = %d, %d, %d (%q %q %q); bystanders dead: %d of 6",
		r.Phase, r.Restarts, r.Detail, r.ExitErr, r.Add2, r.Add3, r.Add4, r.Add2Err, r.Add3Err, r.Add4Err, r.BystandersDead)
	if !r.ExitDied || !strings.Contains(r.ExitErr, "was running when the actor's host died") || !strings.Contains(r.ExitErr, "not run again") {
		t.Errorf("the call that exits its process: %q (ErrActorDied %v), want ErrActorDied saying it was running when its host died and is not run again", r.ExitErr, r.ExitDied)
	}
	if r.Add2 != 3 || r.Add3 != 6 || r.Add4 != 10 {
		t.Errorf("the calls around it: Add(2) %d, Add(3) %d, Add(4) %d (errors %q %q %q), want 3, 6, 10 (each once)", r.Add2, r.Add3, r.Add4, r.Add2Err, r.Add3Err, r.Add4Err)
	}
	if r.Phase != "Alive" || r.Restarts != 2 {
		t.Errorf("the victim is %s after %d restarts (%s), want Alive after 2 (its first run's host death and its replay's)", r.Phase, r.Restarts, r.Detail)
	}
}
