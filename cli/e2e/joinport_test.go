package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/cli"
)

// TestJoinPortGivenAsGCS: rayctl given the head's join port (the GCS port + 1) as the
// cluster's address says that it is the join endpoint and which address to pass instead,
// with or without a token, and so does an agent started with it. Before, rayctl said "no
// credentials for the cluster" (no token), or that the join endpoint did not answer at the
// port after it (with a token), and the agent that it could not reach the GCS.
func TestJoinPortGivenAsGCS(t *testing.T) {
	port, addr, sess := newSession(t)
	other := t.TempDir()
	t.Cleanup(func() { run(t, time.Minute, nil, rayctl, "stop", "--force", "--session-dir", other) })
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess, "--num-cpus", "1")
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	tok := []string{"RAY_GO_TOKEN=" + printedToken(t, out)}
	joinAddr := "127.0.0.1:" + strconv.Itoa(port+1)
	for _, c := range []struct {
		name string
		env  []string
		args []string
	}{
		{"status, no token", nil, []string{"status", "--address", joinAddr, "--session-dir", other}},
		{"status, the head's session dir", nil, []string{"status", "--address", joinAddr, "--session-dir", sess}},
		{"status, a token", tok, []string{"status", "--address", joinAddr, "--session-dir", other}},
		{"job list, a token and that join address", tok, []string{"job", "list", "--address", joinAddr, "--join-address", joinAddr, "--session-dir", other}},
		{"start an agent, a token", tok, []string{"start", "--address", joinAddr, "--session-dir", other, "--num-cpus", "1"}},
	} {
		out, errOut, code := run(t, 90*time.Second, c.env, rayctl, c.args...)
		t.Logf("%s: exit %d: %s", c.name, code, strings.TrimSpace(errOut))
		if code != cli.ExitGCSUnreachable {
			t.Errorf("%s: exit %d, want %d\n%s", c.name, code, cli.ExitGCSUnreachable, out)
		}
		for _, want := range []string{joinAddr + " is the head's join endpoint", "not the cluster's GCS", "pass the GCS address", addr} {
			if !strings.Contains(errOut, want) {
				t.Errorf("%s: the error does not say %q: %s", c.name, want, errOut)
			}
		}
	}
}
