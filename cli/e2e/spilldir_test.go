package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSpillDir: `rayctl start --head --spill-dir DIR` with a 16 MiB store; a driver whose
// task results (32 MiB) go past the worker process's store. The spill files appear under
// DIR, in the agent's directory there (ray-go-agent-<id>) and its worker process's
// (ray-go-spill-<node>), and not under the session directory; the results read back
// whole; `rayctl stop` leaves nothing of the cluster in DIR, and what else was there
// (a file of the user's) is kept.
func TestSpillDir(t *testing.T) {
	port, addr, sess := newSession(t)
	spill := filepath.Join(t.TempDir(), "scratch")
	if err := os.MkdirAll(spill, 0o700); err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(spill, "keep.txt")
	if err := os.WriteFile(keep, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess,
		"--num-cpus", "1", "--object-store-memory", "16MiB", "--spill-dir", spill, "--dashboard-port", "-1", "--metrics-port", "-1")
	if code != 0 {
		t.Fatalf("rayctl start --head --spill-dir: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "Its object stores spill to: "+filepath.Join(spill, "ray-go-agent-")) {
		t.Errorf("rayctl start does not say where the stores spill:\n%s", out)
	}
	env := append(os.Environ(), "RAY_ADDRESS="+addr, "RAY_GO_TOKEN="+printedToken(t, out))
	p := startPiped(t, "spill", env)
	if l := p.line(t, "spill", sess); l != "spill ready" {
		t.Fatalf("driver -check spill printed %q, want spill ready\n%s", l, tail(p.stderr.String()))
	}
	files, _ := filepath.Glob(filepath.Join(spill, "ray-go-agent-*", "ray-go-spill-*", "spill", "*.zst"))
	if len(files) == 0 {
		t.Fatalf("no spill files under %s\n%s", spill, sessionLogs(sess, 30))
	}
	t.Logf("%d spill files, e.g. %s", len(files), files[0])
	var inSession []string
	filepath.WalkDir(sess, func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".zst") {
			inSession = append(inSession, path)
		}
		return nil
	})
	if len(inSession) > 0 {
		t.Errorf("spill files under the session directory too: %v", inSession)
	}
	if _, err := p.in.Write([]byte("check\n")); err != nil {
		t.Fatal(err)
	}
	if l := p.line(t, "spill check", sess); l != "spill ok" {
		t.Fatalf("driver -check spill: %s\n%s", l, tail(p.stderr.String()))
	}
	p.in.Close()
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("driver -check spill: %v\n%s", err, tail(p.stderr.String()))
	}
	if out, errOut, code := run(t, time.Minute, nil, rayctl, "stop", "--session-dir", sess); code != 0 {
		t.Fatalf("rayctl stop: exit %d\n%s\n%s", code, out, errOut)
	}
	entries, err := os.ReadDir(spill)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "keep.txt" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("after rayctl stop the spill directory holds %v, want only keep.txt", names)
	}
}

// TestSpillDirRefused: `rayctl start --spill-dir` refuses a file, saying so and what to do.
func TestSpillDirRefused(t *testing.T) {
	port, _, sess := newSession(t)
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess,
		"--spill-dir", file, "--dashboard-port", "-1", "--metrics-port", "-1")
	if code == 0 || !strings.Contains(errOut, "--spill-dir: spill directory "+file+" is a file, not a directory: give a directory") {
		t.Fatalf("rayctl start --spill-dir FILE: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestSubmittedDriverSpillDir: the driver `rayctl job submit` starts on a head given
// --spill-dir spills there too (its agent gives it RAY_GO_SPILL_DIR, its own directory in
// DIR, as to its worker processes), not under a temporary directory of its own; a job
// whose --env sets RAY_GO_SPILL_DIR keeps its choice. The driver puts more than its
// 16 MiB store holds and counts the spill files under the directory it is told to look in.
func TestSubmittedDriverSpillDir(t *testing.T) {
	t.Parallel()
	port, addr, sess := newSession(t)
	spill, own := filepath.Join(t.TempDir(), "scratch"), filepath.Join(t.TempDir(), "mine")
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess,
		"--num-cpus", "1", "--object-store-memory", "64MiB", "--spill-dir", spill, "--dashboard-port", "-1", "--metrics-port", "-1")
	if code != 0 {
		t.Fatalf("rayctl start --head --spill-dir: exit %d\n%s\n%s", code, out, errOut)
	}
	tok := []string{"RAY_GO_TOKEN=" + printedToken(t, out)}
	submit := func(env ...string) (files int) {
		t.Helper()
		args := []string{"job", "submit", "--address", addr}
		for _, kv := range env {
			args = append(args, "--env", kv)
		}
		out, errOut, code := run(t, 3*time.Minute, tok, rayctl, append(args, "--", driver, "-check", "driverspill")...)
		var got struct {
			Files int  `json:"spill_files"`
			OK    bool `json:"spill_ok"`
		}
		if err := json.Unmarshal([]byte(lastLine(out)), &got); err != nil || code != 0 || !got.OK {
			t.Fatalf("rayctl job submit %v -- driver -check driverspill: exit %d, %v\nstdout: %s\nstderr: %s", env, code, err, out, tail(errOut))
		}
		return got.Files
	}
	if n := submit("E2E_SPILL_ROOT=" + spill); n == 0 {
		t.Errorf("the submitted driver's spill files: none under the head's --spill-dir %s", spill)
	}
	if n := submit("E2E_SPILL_ROOT="+own, "RAY_GO_SPILL_DIR="+own); n == 0 {
		t.Errorf("the submitted driver given RAY_GO_SPILL_DIR=%s in its --env: no spill files there", own)
	}
}
