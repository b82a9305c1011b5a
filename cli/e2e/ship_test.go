package e2e

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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

// TestShippedCode: nothing has to exist at the same path on another machine. A driver run
// from a copy of its binary that is removed once it registered gets worker processes on an
// agent started afterwards (which fetches the binary from the GCS, verifies and caches
// it), and its tasks run there and answer right; rayctl job submit --working-dir ships a
// directory the program reads a file from.
func TestShippedCode(t *testing.T) {
	port, addr, sess := newSession(t)
	start := func(tok []string, args ...string) string {
		t.Helper()
		out, errOut, code := run(t, 90*time.Second, tok, rayctl, append([]string{"start", "--session-dir", sess, "--num-cpus", "2", "--object-store-memory", "512MiB"}, args...)...)
		if code != 0 {
			t.Fatalf("rayctl start %v: exit %d\n%s\n%s", args, code, out, errOut)
		}
		return out
	}
	tok := []string{"RAY_GO_TOKEN=" + printedToken(t, start(nil, "--head", "--port", strconv.Itoa(port)))}

	// The driver runs from a copy that goes away once the driver has registered its job.
	b, err := os.ReadFile(driver)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	want := hex.EncodeToString(sum[:])
	copyDir := t.TempDir()
	copied := filepath.Join(copyDir, "driver")
	if err := os.WriteFile(copied, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(copied, "-check", "shipped")
	cmd.Env = tagEnv(t, append([]string{"RAY_ADDRESS=" + addr}, tok...)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()
	go func() { exited <- cmd.Wait() }()
	next := func(what string) string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the driver ended before %s\nstderr: %s\n%s", what, tail(stderr.String()), sessionLogs(sess, 30))
			}
			return l
		case <-time.After(3 * time.Minute):
			t.Fatalf("no %s from the driver within 3 minutes\nstderr: %s\n%s", what, tail(stderr.String()), sessionLogs(sess, 30))
		}
		return ""
	}
	if l := next(`"registered"`); l != "registered" {
		t.Fatalf("driver said %q, want registered", l)
	}
	if err := os.RemoveAll(copyDir); err != nil {
		t.Fatal(err)
	}
	start(tok, "--address", addr)
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Shipped struct {
			Node, Exe string
			RanOn     string `json:"ran_on"`
			Sum       int
		}
		Error string
	}
	l := next("report")
	if err := json.Unmarshal([]byte(l), &rep); err != nil || rep.Error != "" {
		t.Fatalf("driver report %q: %v\nstderr: %s\n%s", l, err, tail(stderr.String()), sessionLogs(sess, 30))
	}
	if err := <-exited; err != nil {
		t.Fatalf("driver: %v\nstderr: %s", err, tail(stderr.String()))
	}
	exited <- nil // for the deferred wait
	s := rep.Shipped
	if s.Sum != 380 || s.RanOn != s.Node {
		t.Errorf("20 tasks on the new node %s: sum %d (want 380), ran on %s", s.Node, s.Sum, s.RanOn)
	}
	if filepath.Base(s.Exe) != want || filepath.Base(filepath.Dir(s.Exe)) != "bin" || !strings.HasPrefix(s.Exe, sess+"/") {
		t.Errorf("the new node's worker process runs %s, want <its session>/bin/%s", s.Exe, want)
	}
	if fi, err := os.Stat(s.Exe); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the cached executable: %v, %v (want mode 0700)", fi, err)
	}

	// rayctl job submit --working-dir: the program (a script in the directory) reads a file
	// of the directory, in the head's unpacked copy.
	wd := t.TempDir()
	if err := os.WriteFile(filepath.Join(wd, "input.txt"), []byte("shipped-input-42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(wd, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wd, "bin", "show.sh"), []byte("#!/bin/sh\necho \"dir=$(pwd)\"\ncat input.txt\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, 2*time.Minute, tok, rayctl, "job", "submit", "--address", addr, "--working-dir", wd, "--", "./bin/show.sh")
	if code != 0 || !strings.Contains(out, "shipped-input-42") {
		t.Fatalf("job submit --working-dir: exit %d\nstdout: %s\nstderr: %s", code, out, tail(errOut))
	}
	if strings.Contains(out, "dir="+wd) || !strings.Contains(out, "/submissions/") {
		t.Errorf("the program ran in %q, want the head's unpacked copy, not %s", out, wd)
	}
	// A program from outside the directory (shipped by hash) reads the same file.
	out, errOut, code = run(t, 2*time.Minute, tok, rayctl, "job", "submit", "--address", addr, "--working-dir", wd, "--", "cat", "input.txt")
	if code != 0 || !strings.Contains(out, "shipped-input-42") {
		t.Fatalf("job submit --working-dir -- cat input.txt: exit %d\nstdout: %s\nstderr: %s", code, out, tail(errOut))
	}
	// A symbolic link in the directory, to a file outside it, ships as that file (as
	// Ray's working_dir does).
	outside := filepath.Join(t.TempDir(), "outside.txt")
	if err := os.WriteFile(outside, []byte("linked-input-7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(wd, "link")); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = run(t, 2*time.Minute, tok, rayctl, "job", "submit", "--address", addr, "--working-dir", wd, "--", "cat", "link")
	if code != 0 || !strings.Contains(out, "linked-input-7") {
		t.Fatalf("a working dir with a symlink: exit %d\nstdout: %s\nstderr: %s", code, out, tail(errOut))
	}
	// A named pipe cannot be shipped: refused before anything is submitted, saying what
	// to do.
	if err := syscall.Mkfifo(filepath.Join(wd, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = run(t, time.Minute, tok, rayctl, "job", "submit", "--address", addr, "--working-dir", wd, "--", "cat", "input.txt")
	if code == 0 || !strings.Contains(errOut, "is a named pipe") || !strings.Contains(errOut, "move it out of the directory") {
		t.Fatalf("a working dir with a named pipe: exit %d\n%s", code, errOut)
	}
}
