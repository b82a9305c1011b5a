package e2e

import (
	"encoding/json"
	"testing"
	"time"
)

// TestSentinelsThroughNestingAcrossProcesses: in a cluster of two nodes, a task in a
// worker process returns the error a nested killed actor call's, cancelled task's or
// released object's Get gave it, and a task a level up returns that error wrapped; the
// driver's error is a *TaskError that matches the failure's sentinel (ErrActorDied,
// ErrCancelled, ErrObjectLost) and no other. The causes cross processes in the wire form
// of the error (ErrorInfo.causes), filled by the worker processes, which are the driver's
// binary. So does an error of a type registered with ray.RegisterError, whole.
func TestSentinelsThroughNestingAcrossProcesses(t *testing.T) {
	port, addr, sess := newSession(t)
	env := startTwoNodes(t, port, addr, sess)
	out, errOut, code := run(t, 3*time.Minute, env, driver, "-check", "nestedsentinels")
	type failure struct {
		Error     string
		TaskError bool `json:"task_error"`
		Matches   map[string]bool
	}
	var res struct {
		KilledActor    failure `json:"killed actor"`
		CancelledTask  failure `json:"cancelled task"`
		ReleasedObject failure `json:"released object"`
		Typed          struct {
			Error string
			User  string
			Limit int
		} `json:"typed error"`
		Error string
	}
	if err := json.Unmarshal([]byte(lastLine(out)), &res); err != nil || code != 0 || res.Error != "" {
		t.Fatalf("driver: exit %d, %v\n%s\n%s", code, err, out, tail(errOut))
	}
	// An error type registered with ray.RegisterError comes back whole, through two tasks
	// in worker processes (ErrorInfo.error_type and error_data, filled by the worker).
	if res.Typed.User != "ann" || res.Typed.Limit != 10 {
		t.Errorf("typed error: %+v; want the *quotaErr with User ann and Limit 10", res.Typed)
	}
	for _, c := range []struct {
		how  string
		f    failure
		want string
	}{{"killed actor", res.KilledActor, "actor_died"}, {"cancelled task", res.CancelledTask, "cancelled"},
		{"released object", res.ReleasedObject, "object_lost"}} {
		t.Logf("%s: %s", c.how, c.f.Error)
		if !c.f.TaskError || len(c.f.Matches) == 0 {
			t.Errorf("%s: %+v, want a *TaskError", c.how, c.f)
		}
		for name, got := range c.f.Matches {
			if got != (name == c.want) {
				t.Errorf("%s: errors.Is(err, %s) = %v, want %v (err: %s)", c.how, name, got, name == c.want, c.f.Error)
			}
		}
	}
}
