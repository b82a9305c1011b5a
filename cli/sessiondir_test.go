package cli

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/assembly/agent"
	"github.com/ray-go/ray/internal/base/identity"
)

// nobody plays another local user (the tests run as root, which may chown to it).
const nobody = 65534

// `rayctl start` refuses a session dir that another user made or may write in (a
// pre-created /tmp/ray-go of mode 777): they could swap the head's directory for one with
// a join token of theirs. The error says what is wrong and what to do.
func TestStartRefusesForeignSessionDir(t *testing.T) {
	t.Parallel() // its own session dirs; each start it runs is refused
	if os.Geteuid() != 0 {
		t.Fatal("this test chowns a directory to another user: run it as root")
	}
	for _, c := range []struct {
		name string
		mode os.FileMode
		uid  int
		want string
	}{
		{"open", 0o777, 0, "has mode 0777"},
		{"theirs", 0o700, nobody, "belongs to uid 65534"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sess := filepath.Join(t.TempDir(), "sess")
			if err := os.Mkdir(sess, c.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(sess, c.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(sess, c.uid, c.uid); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = os.Chown(sess, 0, 0)
				_ = os.Chmod(sess, 0o700)
				run(t, nil, "stop", "--force", "--session-dir", sess)
			})
			r := run(t, nil, "start", "--head", "--port", strconv.Itoa(freePort(t)), "--session-dir", sess, "--num-cpus", "1", "--dashboard-port", "-1")
			if r.code == 0 || !strings.Contains(r.stderr, "refusing the session dir "+sess) || !strings.Contains(r.stderr, c.want) ||
				!strings.Contains(r.stderr, "another --session-dir") {
				t.Errorf("start in a session dir %s: exit %d, stderr %q; want a refusal saying %q and what to do", c.name, r.code, r.stderr, c.want)
			}
			if dirs, _ := filepath.Glob(filepath.Join(sess, agentDirPref+"*")); len(dirs) != 0 {
				t.Errorf("an agent directory was made: %v", dirs)
			}
			// rayctl as a client trusts nothing there either.
			if r := run(t, nil, "status", "--session-dir", sess); r.code == 0 || !strings.Contains(r.stderr, "refusing the session dir") {
				t.Errorf("status on that session dir: exit %d, stderr %q", r.code, r.stderr)
			}
		})
	}
}

// The swap of tester report D1: another user who can rename entries of the head's session
// dir moves the head's agent directory away and puts one in its place whose ca/token holds
// a token of their choosing (the CA hash in it is public), links to the real files
// besides. The head reads its token through the directory it opened at start, so the
// fake token gets neither a certificate nor the dashboard, and rayctl on this machine
// refuses the directory.
func TestSwappedAgentDirTokenRefused(t *testing.T) {
	t.Parallel() // its own head (a process), port and session dir; it mostly waits for it
	if os.Geteuid() != 0 {
		t.Fatal("this test chowns a directory to another user: run it as root")
	}
	sess := filepath.Join(t.TempDir(), "sess")
	var realDir, agentPath string
	t.Cleanup(func() {
		// Undo the swap so that stop finds the head.
		_ = os.Chown(sess, 0, 0)
		if realDir != "" {
			_ = os.RemoveAll(agentPath)
			_ = os.Rename(realDir, agentPath)
		}
		run(t, nil, "stop", "--force", "--session-dir", sess)
	})
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	r := run(t, nil, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess, "--num-cpus", "1", "--dashboard-port", "0")
	token := PrintedToken(r.stdout)
	if r.code != 0 || token == "" {
		t.Fatalf("start --head: %+v", r)
	}
	real, err := identity.ParseToken(token)
	if err != nil {
		t.Fatal(err)
	}
	dirs, _ := filepath.Glob(filepath.Join(sess, agentDirPref+"*"))
	if len(dirs) != 1 {
		t.Fatalf("agent directories: %v", dirs)
	}
	agentPath = dirs[0]
	var info agentFile
	if b, err := os.ReadFile(filepath.Join(agentPath, readyFileName)); err != nil || decodeJSONObject(readyFileName, b, &info) != nil {
		t.Fatalf("agent.json: %v", err)
	}

	// The session dir becomes another user's (as if they had made it), and they swap.
	if err := os.Chown(sess, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	realDir = filepath.Join(sess, "real-"+filepath.Base(agentPath))
	if err := os.Rename(agentPath, realDir); err != nil {
		t.Fatal(err)
	}
	fakeCA := agent.CADir(agentPath)
	if err := identity.MkdirPrivate(fakeCA); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(realDir)
	for _, e := range entries {
		if e.Name() != "ca" {
			if err := os.Symlink(filepath.Join(realDir, e.Name()), filepath.Join(agentPath, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, f := range []string{identity.CAFile, identity.CAKeyFile, "ca.crl"} {
		if err := os.Symlink(filepath.Join(agent.CADir(realDir), f), filepath.Join(fakeCA, f)); err != nil {
			t.Fatal(err)
		}
	}
	fake := real
	fake.Secret[0] ^= 0xff
	if err := identity.SaveToken(filepath.Join(fakeCA, identity.TokenFile), fake); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{agentPath, fakeCA, filepath.Join(fakeCA, identity.TokenFile)} {
		if err := os.Lchown(p, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}

	// The fake token is refused by the join endpoint (no client certificate: no job)...
	env := []string{"RAY_GO_TOKEN=" + fake.String(), "XDG_CACHE_HOME=" + t.TempDir()}
	if r := run(t, env, "status", "--address", addr, "--session-dir", t.TempDir()); r.code != ExitCredentials || !strings.Contains(r.stderr, "token") {
		t.Errorf("status with the swapped-in token: exit %d, stderr %q; want it refused (exit %d)", r.code, r.stderr, ExitCredentials)
	}
	// ... and by the dashboard.
	if code := dashboardGet(t, info.DashboardAddress, fake.String()); code != 401 {
		t.Errorf("dashboard with the swapped-in token: HTTP %d, want 401", code)
	}
	// The real token still works.
	env = []string{"RAY_GO_TOKEN=" + token, "XDG_CACHE_HOME=" + t.TempDir()}
	if r := run(t, env, "status", "--address", addr, "--session-dir", t.TempDir()); r.code != 0 {
		t.Errorf("status with the real token: %+v", r)
	}
	if code := dashboardGet(t, info.DashboardAddress, token); code != 200 {
		t.Errorf("dashboard with the real token: HTTP %d, want 200", code)
	}
	// rayctl on this machine refuses the session dir instead of using what it holds.
	if r := run(t, nil, "status", "--session-dir", sess); r.code == 0 || !strings.Contains(r.stderr, "refusing the session dir") {
		t.Errorf("status on the swapped session dir: exit %d, stderr %q", r.code, r.stderr)
	}
}

// dashboardGet asks the dashboard at addr for its cluster summary with token (Bearer) and
// returns the HTTP status.
func dashboardGet(t *testing.T, addr, token string) int {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+addr+"/api/cluster", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
