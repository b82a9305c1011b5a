package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/identity"
)

// TestGCSFailover: a cluster whose GCS is an external three-member etcd cluster
// (`rayctl start --head --gcs-endpoints`; each member its own process, ./etcdmember), a
// driver running rounds of tasks and exactly-once actor calls, and the raft leader killed
// (SIGKILL) in the middle: nothing fails, every result is right, and the longest round
// after the kill is logged (the stall callers see).
func TestGCSFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var ports []int
	for range 6 {
		ports = append(ports, freePort(t))
	}
	var peers []string
	for i := range 3 {
		peers = append(peers, fmt.Sprintf("m%d=https://127.0.0.1:%d", i, ports[3+i]))
	}
	// The external etcd has its own PKI, as an operator's would: a CA, a certificate per
	// member, and one certificate for the ray-go cluster (agents, drivers, workers: their
	// GCS client and their node-to-node TLS; not a client-role one, which nodes refuse).
	dir := t.TempDir()
	ca, err := identity.NewCA("external etcd", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	issue := func(name, role string) identity.Files {
		c, err := ca.Issue(identity.Request{Name: name, Role: role})
		if err != nil {
			t.Fatal(err)
		}
		f, err := c.Save(filepath.Join(dir, "pki", name))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	client := issue("ray", identity.RoleNode)
	// Three etcd members, each its own process (so that one can be killed for real).
	type member struct {
		cmd *exec.Cmd
		in  io.WriteCloser
		out *bufio.Scanner
	}
	members := make([]*member, 3)
	for i := range 3 {
		f := issue(fmt.Sprintf("m%d", i), identity.RoleNode)
		cmd := exec.Command(etcdmember, "-name", fmt.Sprintf("m%d", i), "-dir", filepath.Join(dir, fmt.Sprintf("m%d", i)),
			"-client-port", fmt.Sprint(ports[i]), "-peer-port", fmt.Sprint(ports[3+i]), "-initial-cluster", strings.Join(peers, ","),
			"-ca", f.CA, "-cert", f.Cert, "-key", f.Key)
		cmd.Env = tagEnv(t)
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		members[i] = &member{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	}
	defer func() {
		for _, m := range members {
			m.cmd.Process.Kill()
			m.cmd.Wait()
		}
	}()
	for i, m := range members {
		if !m.out.Scan() || m.out.Text() != "ready" {
			t.Fatalf("etcd member %d did not start", i)
		}
	}
	isLeader := func(m *member) bool {
		fmt.Fprintln(m.in)
		return m.out.Scan() && m.out.Text() == "leader"
	}
	var eps []string
	for i := range 3 {
		eps = append(eps, fmt.Sprintf("127.0.0.1:%d", ports[i]))
	}
	addr := strings.Join(eps, ",")
	sess := t.TempDir()
	t.Cleanup(func() { run(t, time.Minute, nil, rayctl, "stop", "--force", "--session-dir", sess) })
	creds := []string{"--gcs-ca", client.CA, "--gcs-cert", client.Cert, "--gcs-key", client.Key}
	// Without the etcd's credentials the head refuses to start, saying what to pass.
	if _, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--session-dir", t.TempDir(), "--head", "--gcs-endpoints", addr); code != 8 || !strings.Contains(errOut, "--gcs-ca") {
		t.Fatalf("head on an external etcd without its credentials: exit %d (want 8)\n%s", code, errOut)
	}
	for _, args := range [][]string{append([]string{"--head", "--gcs-endpoints", addr}, creds...), append([]string{"--address", addr}, creds...)} {
		out, errOut, code := run(t, 90*time.Second, nil, rayctl, append([]string{"start", "--session-dir", sess, "--num-cpus", "2", "--object-store-memory", "1GiB"}, args...)...)
		if code != 0 {
			t.Fatalf("rayctl start %v: exit %d\n%s\n%s", args, code, out, errOut)
		}
	}

	// On this machine, rayctl uses the local agents' credentials (here: the external etcd's files).
	if out, errOut, code := run(t, time.Minute, nil, rayctl, "status", "--session-dir", sess); code != 0 || !strings.Contains(out, "2 node(s) alive") {
		t.Fatalf("rayctl status with the local agents' credentials: exit %d\n%s\n%s", code, out, errOut)
	}

	cmd := exec.CommandContext(ctx, driver, "-check", "gcsfailover")
	cmd.Env = tagEnv(t, "RAY_ADDRESS="+addr, "RAY_GO_GCS_CA="+client.CA, "RAY_GO_GCS_CERT="+client.Cert, "RAY_GO_GCS_KEY="+client.Key)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var last string
	killed := -1
	for sc.Scan() {
		last = sc.Text()
		if last == "ready" {
			leader := 0
			for k, m := range members {
				if isLeader(m) {
					leader = k
				}
			}
			members[leader].cmd.Process.Kill()
			killed = leader
			t.Logf("killed etcd member m%d (SIGKILL), the raft leader", leader)
		}
	}
	err = cmd.Wait()
	var rep struct {
		Gcsfailover struct {
			Rounds        int
			Before, After struct {
				MedianMS float64 `json:"median_ms"`
				MaxMS    float64 `json:"max_ms"`
			}
		}
		Error string
	}
	if jerr := json.Unmarshal([]byte(last), &rep); jerr != nil || err != nil || killed < 0 {
		t.Fatalf("driver: %v, %v; last line %q\n%s", err, jerr, last, tail(stderr.String()))
	}
	if testing.Verbose() {
		t.Logf("driver stderr: %s", tail(stderr.String()))
	}
	g := rep.Gcsfailover
	t.Logf("%d rounds (20 tasks + 1 exactly-once actor call each): median %.1f ms before the stop, %.1f ms after; longest %.1f ms before, %.1f ms after",
		g.Rounds, g.Before.MedianMS, g.After.MedianMS, g.Before.MaxMS, g.After.MaxMS)

	// Quorum lost for longer than the nodes' lease TTL (6 s): one of the two members left
	// is stopped (SIGSTOP) for 10 s. Every lease expires when the GCS is back; the nodes
	// and the driver register again, so the head does not fail the running job, its
	// worker processes stay, and every round comes back right.
	var alive []*member
	for k, m := range members {
		if k != killed {
			alive = append(alive, m)
		}
	}
	cmd = exec.CommandContext(ctx, driver, "-check", "gcsoutage")
	cmd.Env = tagEnv(t, "RAY_ADDRESS="+addr, "RAY_GO_GCS_CA="+client.CA, "RAY_GO_GCS_CERT="+client.Cert, "RAY_GO_GCS_KEY="+client.Key)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if stdout, err = cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc = bufio.NewScanner(stdout)
	stopped := false
	for sc.Scan() {
		last = sc.Text()
		if last == "ready" {
			stopped = true
			victim := alive[len(alive)-1]
			if err := victim.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			t.Logf("stopped etcd member (pid %d): quorum lost for 10 s", victim.cmd.Process.Pid)
			time.Sleep(10 * time.Second)
			if err := victim.cmd.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(stdin, "resumed")
		}
	}
	err = cmd.Wait()
	var out struct {
		Gcsoutage struct {
			Rounds, During int
			LongestMS      int64 `json:"longest_ms"`
		}
	}
	if jerr := json.Unmarshal([]byte(last), &out); jerr != nil || err != nil || !stopped {
		t.Fatalf("driver across a quorum loss longer than the lease TTL: %v, %v; last line %q\n%s\nsession logs:\n%s", err, jerr, last, tail(stderr.String()), sessionLogs(sess, 12))
	}
	t.Logf("quorum loss: %d rounds, %d during the outage, the longest %d ms", out.Gcsoutage.Rounds, out.Gcsoutage.During, out.Gcsoutage.LongestMS)
}
