package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestNestedPutOwnerKilled: a task's worker process puts 1 MiB and returns the ref
// nested in its result; the driver SIGKILLs that process, the object's owner and holder,
// and reads the object at once: before the driver had the object's value from its owner,
// and (with another task) after ray.Wait found it ready. Each Get fails, within the
// driver's 2 minutes, saying the object's owner died (its process has exited, or the
// adoption of its objects found a Put, which nothing can make again), matching
// ray.ErrOwnerDied and ray.ErrObjectLost. It read "ray: object lost: ...: node N does not
// answer (its process is gone): transfer: fetch object ... dial tcp ...: connection
// refused": transport detail, no word of the owner, and not ErrOwnerDied; then it hung:
// the adoption of the dead owner's objects left a Put not resolved yet pending for good,
// and a resolved one was asked of the dead owner again, for 5 minutes.
func TestNestedPutOwnerKilled(t *testing.T) {
	t.Parallel()
	port, addr, sess := newSession(t)
	env := startTwoNodes(t, port, addr, sess)
	out, errOut, code := run(t, 5*time.Minute, env, driver, "-check", "nestedput")
	if code != 0 {
		t.Fatalf("driver -check nestedput: exit %d\n%s\n%s", code, out, tail(errOut))
	}
	type report struct {
		Error              string
		OwnerDied, LostToo bool
	}
	var rep struct{ Unresolved, Resolved report }
	line := ""
	for _, l := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(l, "nestedput "); ok {
			line = rest
		}
	}
	if err := json.Unmarshal([]byte(line), &rep); err != nil {
		t.Fatalf("driver -check nestedput printed %q (%v)\n%s", out, err, tail(errOut))
	}
	for _, r := range []struct {
		what string
		report
	}{{"before the driver had its value", rep.Unresolved}, {"after ray.Wait found it ready", rep.Resolved}} {
		t.Logf("Get of a Put whose owner was SIGKILLed %s: %s", r.what, r.Error)
		if r.Error == "" || !r.OwnerDied || !r.LostToo || !strings.Contains(r.Error, "its owner died") ||
			!strings.Contains(r.Error, "has exited") && !strings.Contains(r.Error, "made by Put") {
			t.Errorf("Get of a Put whose owner was SIGKILLed %s: %+v, want lost because its owner died (ErrOwnerDied, ErrObjectLost)",
				r.what, r.report)
		}
	}
	if t.Failed() {
		t.Fatalf("the driver's log:\n%s\n%s", tail(errOut), sessionLogs(sess, 60))
	}
}
