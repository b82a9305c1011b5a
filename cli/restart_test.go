package cli

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/eventually"
)

// TestAgentsComeBackAsThemselves: an agent or a head restarted on its session dir comes
// back as the same node (the cluster runtime, item 5): the same agent ID, no dead twin in
// the status, and for the head the same CA and token and the GCS's data (the certificates
// it issued), so the agent that kept running finds its cluster again.
func TestAgentsComeBackAsThemselves(t *testing.T) {
	sess, sess2 := t.TempDir(), t.TempDir()
	t.Cleanup(func() {
		run(t, nil, "stop", "--force", "--session-dir", sess2)
		run(t, nil, "stop", "--force", "--session-dir", sess)
	})
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	startHead := func() result {
		t.Helper()
		r := run(t, nil, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess, "--num-cpus", "1", "--metrics-port", "-1", "--dashboard-port", "-1")
		if r.code != 0 {
			t.Fatalf("start --head: %+v", r)
		}
		return r
	}
	token := PrintedToken(startHead().stdout)
	tok := []string{"RAY_GO_TOKEN=" + token}
	startAgent := func() result {
		t.Helper()
		r := run(t, tok, "start", "--address", addr, "--session-dir", sess2, "--num-cpus", "1", "--metrics-port", "-1")
		if r.code != 0 {
			t.Fatalf("start --address: %+v", r)
		}
		return r
	}
	startAgent()
	ids := func() []string {
		t.Helper()
		st, r := status(t, "--session-dir", sess)
		if r.code != 0 {
			t.Fatalf("status: %+v", r)
		}
		var out []string
		for _, n := range st.Nodes {
			s := n.AgentID
			if !n.Alive {
				s += "(dead)"
			}
			out = append(out, s)
		}
		slices.Sort(out)
		return out
	}
	before := ids()
	if len(before) != 2 {
		t.Fatalf("nodes after start: %v", before)
	}
	serials := func() []string {
		t.Helper()
		r := run(t, nil, "cert", "list", "--session-dir", sess)
		if r.code != 0 {
			t.Fatalf("cert list: %+v", r)
		}
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n")[1:] {
			out = append(out, strings.Fields(l)[0])
		}
		slices.Sort(out)
		return out
	}
	certs := serials()

	// The agent, stopped and started again.
	if r := run(t, nil, "stop", "--session-dir", sess2); r.code != 0 {
		t.Fatalf("stop the agent: %+v", r)
	}
	if r := startAgent(); !strings.Contains(r.stderr, "restarting agent") {
		t.Errorf("the agent's restart did not say it restarts the earlier one: %+v", r)
	}
	eventually.True(t, 30*time.Second, "the same two nodes, alive", func() bool { return slices.Equal(ids(), before) })

	// The head, stopped and started again while the agent runs on.
	if r := run(t, nil, "stop", "--session-dir", sess); r.code != 0 {
		t.Fatalf("stop the head: %+v", r)
	}
	if r := startHead(); !strings.Contains(r.stderr, "restarting agent") {
		t.Errorf("the head's restart did not say it restarts the earlier one: %+v", r)
	}
	if r := run(t, nil, "token", "show", "--session-dir", sess); r.code != 0 || strings.TrimSpace(r.stdout) != token {
		t.Errorf("the token after the head's restart: %+v, want the same", r)
	}
	got := serials()
	for _, c := range certs {
		if !slices.Contains(got, c) {
			t.Errorf("certificates issued, after the head's restart: %v, want all of %v among them (the GCS's data kept)", got, certs)
			break
		}
	}
	eventually.True(t, 60*time.Second, "the agent that ran on is back in the cluster", func() bool { return slices.Equal(ids(), before) })
}
