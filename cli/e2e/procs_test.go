package e2e

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Every process the tests start carries two variables in its environment, and passes them
// on to what it starts (an agent gives its own environment to its worker processes and
// submitted drivers, a daemonized agent gets that of `rayctl start`):
//   - ownerEnv, the test binary's pid, set in the binary's own environment by TestMain,
//     so every exec inherits it: the reaper finds by it whatever the binary left;
//   - testEnv, the top-level test that started it (tagged by run, startReady, startPiped
//     and tagEnv): a test's checks (checkNothingLeft, ourProcesses) see only its own
//     processes, so tests can run in parallel.
const (
	ownerEnv  = "RAY_GO_E2E_OWNER"
	testEnv   = "RAY_GO_E2E_TEST"
	reaperEnv = "RAY_GO_E2E_REAPER" // set for the reaper: the pid of the binary it reaps for
)

// testTag is the testEnv entry of t's top-level test.
func testTag(t testing.TB) string {
	name, _, _ := strings.Cut(t.Name(), "/")
	return testEnv + "=" + name
}

// tagEnv is the environment for a process t starts: this binary's, then env, then t's tag.
func tagEnv(t testing.TB, env ...string) []string {
	return append(append(os.Environ(), env...), testTag(t))
}

// proc is a live process seen in /proc.
type proc struct {
	pid     int
	exe     string
	cmdline string
	environ []byte // NUL-separated, with a NUL before the first entry and after the last
}

func (p proc) String() string { return fmt.Sprintf("%d %s", p.pid, p.cmdline) }

// hasEnv reports whether the process was started with the entry kv ("NAME=value").
func (p proc) hasEnv(kv string) bool {
	return bytes.Contains(p.environ, []byte("\x00"+kv+"\x00"))
}

// processes lists the live processes (not zombies, not this one) of this user that keep
// matches.
func processes(keep func(proc) bool) []proc {
	var out []proc
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		environ, err := os.ReadFile(filepath.Join(dir, "environ"))
		if err != nil {
			continue // another user's, or gone
		}
		stat, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err == nil {
			if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				continue // a zombie has exited; only its parent's wait is missing
			}
		}
		exe, _ := os.Readlink(filepath.Join(dir, "exe"))
		cmdline, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
		p := proc{pid: pid, exe: exe, environ: append(append([]byte{0}, environ...), 0),
			cmdline: string(bytes.TrimRight(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}), " "))}
		if keep(p) {
			out = append(out, p)
		}
	}
	return out
}

// ourBinary reports whether the process runs one of the binaries TestMain built.
func ourBinary(p proc) bool {
	return p.exe == rayctl || p.exe == driver || p.exe == etcdmember
}

// ourProcesses lists the live processes running one of the test's binaries that t's
// top-level test started (directly or through them).
func ourProcesses(t testing.TB) []string {
	tag := testTag(t)
	var out []string
	for _, p := range processes(func(p proc) bool { return ourBinary(p) && p.hasEnv(tag) }) {
		out = append(out, p.String())
	}
	return out
}

// anyOfOurProcesses lists the live processes running one of the test's binaries that
// this test binary started, whichever test did (or none: a process that missed its tag).
// Not those of another binary running the same ones (TestTimeoutLeavesNothing's).
func anyOfOurProcesses() []proc {
	owner := ownerEnv + "=" + strconv.Itoa(os.Getpid())
	return processes(func(p proc) bool { return ourBinary(p) && p.hasEnv(owner) })
}

// checkNothingLeft fails t if any process the test started (agents, worker processes,
// drivers) is still alive 15 s after the cluster was stopped, and kills those.
func checkNothingLeft(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for len(ourProcesses(t)) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if left := ourProcesses(t); len(left) > 0 {
		t.Errorf("processes left behind: %v", left)
		for _, p := range left {
			if pid, err := strconv.Atoi(strings.Fields(p)[0]); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// startReaper starts this binary again as the reaper of this process: it waits until
// this process has exited, however (the end of the tests, the panic of -timeout, which
// runs no cleanup, a crash or a SIGKILL: it sees its end of a pipe close), then kills
// every process started with ownerEnv set to this process's pid and still alive. The
// agents `rayctl start` daemonizes have no other tie to the tests: they would run on.
// Call it before setting ownerEnv in this process's environment.
func startReaper() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, ownerEnv+"=") && !strings.HasPrefix(kv, testEnv+"=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, reaperEnv+"="+strconv.Itoa(os.Getpid()))
	w, err := cmd.StdinPipe() // this process holds the only write end
	if err != nil {
		return err
	}
	cmd.Stderr = os.Stderr
	// Its own session: a signal to this process's group (^C) does not end it first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	// Neither waited for nor closed: the write end closes when this process exits, and the
	// reaper, reparented, is reaped by init.
	_ = cmd.Process.Release()
	reaperPipe = w
	return nil
}

// reaperPipe keeps the write end of the reaper's stdin open for this process's lifetime.
var reaperPipe io.WriteCloser

// reap is the reaper's work (TestMain runs it when reaperEnv is set): once stdin is at
// its end, it kills the processes started with ownerEnv=owner, until none is seen for a
// while (an agent killed meanwhile may just have started a worker process), for at most a
// minute.
func reap(owner string) {
	_, _ = io.Copy(io.Discard, os.Stdin)
	tag := ownerEnv + "=" + owner
	var killed []string
	quiet := 0
	for deadline := time.Now().Add(time.Minute); quiet < 10 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		left := processes(func(p proc) bool { return p.hasEnv(tag) })
		if len(left) == 0 {
			quiet++
			continue
		}
		quiet = 0
		for _, p := range left {
			if syscall.Kill(p.pid, syscall.SIGKILL) == nil {
				killed = append(killed, p.String())
			}
		}
	}
	if len(killed) > 0 {
		fmt.Fprintf(os.Stderr, "e2e reaper: killed %d process(es) the test binary (pid %s) left running:\n  %s\n", len(killed), owner, strings.Join(killed, "\n  "))
	}
}
