package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestAdoptionAcrossJobs: job A hands a detached actor of job B objects A owns (a 512 KiB
// task result and the end of a three-task chain, made on A's worker processes), then A's
// driver is killed with SIGKILL, and its worker processes end with its job. The actor
// reads them: the objects are adopted by the process that holds them and made again from
// A's lineage, with the same bytes.
func TestAdoptionAcrossJobs(t *testing.T) {
	port, addr, sess := newSession(t)
	env := append(os.Environ(), startTwoNodes(t, port, addr, sess)...)
	start := func(check string) (*exec.Cmd, io.WriteCloser, *bufio.Reader, *bytes.Buffer) {
		cmd := exec.Command(driver, "-check", check)
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		pipe, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd, stdin, bufio.NewReader(pipe), &stderr
	}
	readLine := func(r *bufio.Reader, what string, stderr *bytes.Buffer) string {
		t.Helper()
		done := make(chan struct{})
		var line string
		var err error
		go func() { line, err = r.ReadString('\n'); close(done) }()
		select {
		case <-done:
		case <-time.After(3 * time.Minute):
			t.Fatalf("%s: nothing in 3 minutes\n%s\n%s", what, tail(stderr.String()), sessionLogs(sess, 30))
		}
		if err != nil {
			t.Fatalf("%s: %v\n%s\n%s", what, err, tail(stderr.String()), sessionLogs(sess, 30))
		}
		return strings.TrimSpace(line)
	}
	_, keeperIn, keeperOut, keeperErr := start("adopt-keeper")
	if l := readLine(keeperOut, "job B", keeperErr); l != "vault ready" {
		t.Fatalf("job B: %q", l)
	}
	owner, _, ownerOut, ownerErr := start("adopt-owner")
	l := readLine(ownerOut, "job A", ownerErr)
	var want []string
	f := strings.SplitN(l, " ", 4)
	if len(f) != 4 || f[0]+" "+f[1] != "owner ready" || json.Unmarshal([]byte(f[3]), &want) != nil || len(want) != 2 {
		t.Fatalf("job A: %q\n%s", l, tail(ownerErr.String()))
	}
	jobA := f[2]
	if err := owner.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = owner.Wait()
	// Job A's worker processes end with it (its jobalive key goes with the driver's lease).
	deadline := time.Now().Add(time.Minute)
	for len(jobProcesses(jobA)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("job A's worker processes still run a minute after its driver was killed: %v", jobProcesses(jobA))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := io.WriteString(keeperIn, "read\n"); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Sums  []string
		Error string
	}
	l = readLine(keeperOut, "job B's read", keeperErr)
	if err := json.Unmarshal([]byte(l), &rep); err != nil || rep.Error != "" || len(rep.Sums) != 2 {
		t.Fatalf("job B's read: %q (%v)\n%s\n%s", l, err, tail(keeperErr.String()), sessionLogs(sess, 40))
	}
	for i := range want {
		if rep.Sums[i] != want[i] {
			t.Fatalf("object %d read %s after its owner died, want %s", i, rep.Sums[i], want[i])
		}
	}
}
