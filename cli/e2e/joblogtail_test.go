package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLongJobLogKeepsItsEnd: a submitted driver prints more than the 32 MiB of output the
// GCS keeps, then its error on stderr, and fails. The stream of `rayctl job submit`, `rayctl
// job logs` and `rayctl logs job --tail 2` all end with that error; the stored log has its
// first line and a note of how much was omitted. Before, the published output stopped at
// 32 MiB, so the error was in none of them (and --tail printed lines from the middle).
func TestLongJobLogKeepsItsEnd(t *testing.T) {
	port, addr, sess := newSession(t)
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess,
		"--num-cpus", "1", "--dashboard-port", "-1", "--metrics-port", "-1")
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	tok := []string{"RAY_GO_TOKEN=" + printedToken(t, out)}
	const script = `echo FIRSTLINE; head -c 36000000 /dev/zero | tr '\0' x | fold -w 99; echo; echo "FATAL: the real reason" >&2; exit 9`
	out, errOut, code = run(t, 5*time.Minute, tok, rayctl, "job", "submit", "--address", addr, "--", "/bin/sh", "-c", script)
	if code == 0 || !strings.Contains(errOut, "FAILED") {
		t.Fatalf("rayctl job submit: exit %d, want the job FAILED\nstderr: %s", code, tail(errOut))
	}
	if !strings.HasPrefix(out, "FIRSTLINE\n") || lastLine(out) != "FATAL: the real reason" || len(out) < 36000000 {
		t.Errorf("rayctl job submit streamed %d bytes ending %q, want all of the output and the error last", len(out), end(out))
	}
	out, errOut, code = run(t, time.Minute, tok, rayctl, "job", "list", "--address", addr)
	fields := strings.Fields(lastLine(out))
	if code != 0 || len(fields) == 0 {
		t.Fatalf("rayctl job list: exit %d\n%s\n%s", code, out, errOut)
	}
	id := fields[0]
	out, errOut, code = run(t, 2*time.Minute, tok, rayctl, "job", "logs", id, "--address", addr)
	if code != 0 || !strings.HasPrefix(out, "FIRSTLINE\n") || lastLine(out) != "FATAL: the real reason" ||
		!strings.Contains(out, " bytes omitted ...; the whole log is ") || len(out) > 33<<20 {
		t.Errorf("rayctl job logs %s: exit %d, %d bytes ending %q, want the first line, a note of what was omitted and the error last\n%s",
			id, code, len(out), end(out), tail(errOut))
	}
	out, errOut, code = run(t, 2*time.Minute, tok, rayctl, "logs", "job", id, "--tail", "2", "--address", addr)
	if lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); code != 0 || len(lines) != 2 || lines[1] != "FATAL: the real reason" {
		t.Errorf("rayctl logs job %s --tail 2: exit %d\n%q\n%s", id, code, end(out), errOut)
	}
}

// end is the last 300 bytes of s.
func end(s string) string { return s[max(0, len(s)-300):] }
