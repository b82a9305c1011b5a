package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	binDirEnv       = "RAY_GO_E2E_BIN_DIR"       // the binaries TestMain would build, built already
	timedOutDirEnv  = "RAY_GO_E2E_TIMED_OUT_DIR" // where TestTimedOutSession says it is set up
	timedOutTimeout = 45 * time.Second           // the -timeout TestTimeoutLeavesNothing runs it with
)

// TestTimeoutLeavesNothing runs this test binary again, with only TestTimedOutSession and
// a -timeout that ends it while its cluster (a head and another agent, daemonized by
// `rayctl start`, and a driver) runs: the timeout's panic runs no cleanup, and nothing of
// that cluster may outlive the binary (CI once found an agent running on after a
// package's timeout).
func TestTimeoutLeavesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), timedOutTimeout+3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run", "^TestTimedOutSession$", "-test.v", "-test.timeout", timedOutTimeout.String())
	cmd.Env = tagEnv(t, binDirEnv+"="+filepath.Dir(rayctl), timedOutDirEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the test binary did not end within %v of its -timeout:\n%s", 3*time.Minute, tail(string(out)))
	}
	if err == nil || !strings.Contains(string(out), "panic: test timed out") {
		t.Fatalf("the test binary was to be ended by its -timeout, it exited with %v:\n%s", err, tail(string(out)))
	}
	ready, err := os.ReadFile(filepath.Join(dir, "ready"))
	if err != nil {
		t.Fatalf("TestTimedOutSession did not set up its cluster before the timeout: %v\n%s", err, tail(string(out)))
	}
	fields := strings.Fields(string(ready)) // the binary's pid, its session dir
	if len(fields) != 2 {
		t.Fatalf("ready file: %q", ready)
	}
	defer os.RemoveAll(filepath.Dir(fields[1])) // its t.TempDir, which no cleanup removed
	owner := ownerEnv + "=" + fields[0]
	left := func() []proc { return processes(func(p proc) bool { return p.hasEnv(owner) }) }
	deadline := time.Now().Add(30 * time.Second)
	for len(left()) > 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if l := left(); len(l) > 0 {
		t.Errorf("processes of the timed-out test binary (pid %s) still run 30 s after it ended: %v\n%s", fields[0], l, tail(string(out)))
		for _, p := range l {
			syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
}

// TestTimedOutSession is TestTimeoutLeavesNothing's helper, run by it in another test
// binary (otherwise it returns at once): it starts a cluster and a driver, says so in
// $RAY_GO_E2E_TIMED_OUT_DIR/ready and waits for the binary's -timeout.
func TestTimedOutSession(t *testing.T) {
	dir := os.Getenv(timedOutDirEnv)
	if dir == "" {
		return
	}
	port, addr, sess := newSession(t)
	env := startTwoNodes(t, port, addr, sess)
	startReady(t, driver, "hang", env, "hanging\n")
	if err := os.WriteFile(filepath.Join(dir, "ready"), []byte(strconv.Itoa(os.Getpid())+" "+sess), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * timedOutTimeout)
}
