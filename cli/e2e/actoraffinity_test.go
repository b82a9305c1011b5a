package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestActorNodeAffinity: ray.NodeAffinity is honoured for actors on a real cluster of two
// nodes (tester's D2: it was dropped, and actors landed wherever the default placement put
// them, with no error). A hard or soft affinity to each of the job's nodes runs the actor
// there; a hard one to a node that does not exist, or to the driver's node (which runs no
// actors), fails with an error saying so, and a soft one to a missing node runs anyway.
func TestActorNodeAffinity(t *testing.T) {
	port, addr, sess := newSession(t)
	env := startTwoNodes(t, port, addr, sess)
	out, errOut, code := run(t, 3*time.Minute, env, driver, "-check", "actoraffinity")
	var res struct {
		Nodes       []string
		Hard, Soft  map[string]string
		HardMissing string `json:"hard_missing"`
		SoftMissing string `json:"soft_missing"`
		HardDriver  string `json:"hard_driver"`
		Error       string
	}
	if err := json.Unmarshal([]byte(lastLine(out)), &res); err != nil || code != 0 || res.Error != "" {
		t.Fatalf("driver -check actoraffinity: exit %d, %v\n%s\n%s\n%s", code, err, out, tail(errOut), sessionLogs(sess, 30))
	}
	if len(res.Nodes) != 2 {
		t.Fatalf("the job has nodes %v, want its two worker processes", res.Nodes)
	}
	for what, got := range map[string]map[string]string{"hard": res.Hard, "soft": res.Soft} {
		if len(got) != 6 {
			t.Errorf("%s affinity: %d actors reported, want 6: %v", what, len(got), got)
		}
		for key, ran := range got {
			if want := strings.Split(key, "/")[0]; ran != want {
				t.Errorf("an actor with %s affinity to %s ran on %q", what, want, ran)
			}
		}
	}
	if !strings.HasPrefix(res.HardMissing, "error: ") || !strings.Contains(res.HardMissing, "no-such-node") {
		t.Errorf("hard affinity to a missing node: %q, want an error naming the node", res.HardMissing)
	}
	if res.SoftMissing != res.Nodes[0] && res.SoftMissing != res.Nodes[1] {
		t.Errorf("soft affinity to a missing node ran on %q, want one of the job's nodes %v", res.SoftMissing, res.Nodes)
	}
	if !strings.HasPrefix(res.HardDriver, "error: ") || !strings.Contains(res.HardDriver, "runs no actors") {
		t.Errorf("hard affinity to the driver's node: %q, want an error saying it runs no actors", res.HardDriver)
	}
	t.Logf("hard missing: %s; hard to the driver: %s", res.HardMissing, res.HardDriver)
}
