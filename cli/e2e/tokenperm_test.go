package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ray-go/ray/cli"
)

// TestTokenShowOtherUser: `rayctl token show` run by a user who may not read the head's
// files (its session dir is the head's user's alone, 0700) says that only the head's user
// can read the token, names what it could not read, and how to get the token (run it as
// that user, or ask). Before, it said that no secure head agent ran there, or only
// "permission denied". Run as root, the test runs rayctl as nobody (uid 65534); run as
// another user, it makes the token file unreadable (mode 000) instead, and rayctl must say
// which file and to chmod it.
func TestTokenShowOtherUser(t *testing.T) {
	port, _, sess := newSession(t)
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess, "--num-cpus", "1")
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	if os.Getuid() != 0 {
		tokens, _ := filepath.Glob(filepath.Join(sess, "agent-*", "ca", "token"))
		if len(tokens) != 1 {
			t.Fatalf("token files under %s: %v", sess, tokens)
		}
		if err := os.Chmod(tokens[0], 0); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(tokens[0], 0o600)
		out, errOut, code = run(t, time.Minute, nil, rayctl, "token", "show", "--session-dir", sess)
		t.Logf("rayctl token show, the token file mode 000: exit %d: %s", code, errOut)
		if code == 0 || !strings.Contains(errOut, tokens[0]) || !strings.Contains(errOut, "chmod 600") || strings.Contains(out, ".") {
			t.Fatalf("rayctl token show with the token file mode 000: exit %d, want a message naming %s and saying to chmod 600 it:\n%s\n%s", code, tokens[0], out, errOut)
		}
		return
	}

	// nobody must be able to run the binary: a copy in a directory anyone may enter.
	binDir, err := os.MkdirTemp("", "ray-go-e2e-nobody-") // t.TempDir's parent is 0700
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(binDir) })
	if err := os.Chmod(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(binDir, "rayctl")
	src, err := os.ReadFile(rayctl)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, src, 0o755); err != nil {
		t.Fatal(err)
	}
	showAsNobody := func() (string, string, int) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "token", "show", "--session-dir", sess)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/"}
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("run rayctl token show as nobody: %v", err)
		}
		return stdout.String(), stderr.String(), code
	}
	// First the directory above the session dir hides it (t.TempDir's, 0700), then the
	// head's agent directory (0700) once the ones above let anyone through.
	agentDirs, _ := filepath.Glob(filepath.Join(sess, "agent-*"))
	if len(agentDirs) != 1 {
		t.Fatalf("agent directories under %s: %v", sess, agentDirs)
	}
	for _, hidden := range []string{filepath.Dir(sess), agentDirs[0]} {
		if hidden != filepath.Dir(sess) {
			if err := os.Chmod(filepath.Dir(sess), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		out, msg, code := showAsNobody()
		t.Logf("rayctl token show as nobody: exit %d: %s", code, msg)
		if code != cli.ExitCredentials {
			t.Errorf("exit %d, want %d (ExitCredentials)", code, cli.ExitCredentials)
		}
		if out != "" {
			t.Errorf("it printed %q", out)
		}
		for _, want := range []string{hidden + " belongs to user root (mode 0700)", "only the user that started the head",
			"sudo -u root rayctl token show --session-dir " + sess, "ask"} {
			if !strings.Contains(msg, want) {
				t.Errorf("the message does not say %q: %s", want, msg)
			}
		}
		if strings.Contains(msg, "no secure head agent") {
			t.Errorf("the message says no head runs, but one does: %s", msg)
		}
	}
}
