package e2e

import (
	"encoding/json"
	"io"
	"os"
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
	t.Parallel() // mostly idle: it waits for a killed driver's job to end
	port, addr, sess := newSession(t)
	env := append(os.Environ(), startTwoNodes(t, port, addr, sess)...)
	keeper := startPiped(t, "adopt-keeper", env)
	if l := keeper.line(t, "job B", sess); l != "vault ready" {
		t.Fatalf("job B: %q", l)
	}
	owner := startPiped(t, "adopt-owner", env)
	l := owner.line(t, "job A", sess)
	var want []string
	f := strings.SplitN(l, " ", 4)
	if len(f) != 4 || f[0]+" "+f[1] != "owner ready" || json.Unmarshal([]byte(f[3]), &want) != nil || len(want) != 2 {
		t.Fatalf("job A: %q\n%s", l, tail(owner.stderr.String()))
	}
	jobA := f[2]
	if err := owner.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = owner.cmd.Wait()
	// Job A's worker processes end with it (its jobalive key goes with the driver's lease).
	deadline := time.Now().Add(time.Minute)
	for len(jobProcesses(t, jobA)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("job A's worker processes still run a minute after its driver was killed: %v", jobProcesses(t, jobA))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := io.WriteString(keeper.in, "read\n"); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Sums  []string
		Error string
	}
	l = keeper.line(t, "job B's read", sess)
	if err := json.Unmarshal([]byte(l), &rep); err != nil || rep.Error != "" || len(rep.Sums) != 2 {
		t.Fatalf("job B's read: %q (%v)\n%s\n%s", l, err, tail(keeper.stderr.String()), sessionLogs(sess, 40))
	}
	for i := range want {
		if rep.Sums[i] != want[i] {
			t.Fatalf("object %d read %s after its owner died, want %s", i, rep.Sums[i], want[i])
		}
	}
}
