package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/internal/base/identity"
)

// The GCS stays bounded however many drivers and rayctl commands come and go: a driver's
// certificate is short-lived (renewed while it runs: a driver outliving its first
// certificate still works), and the head collects the records and users of expired ones;
// rayctl with the token on a machine without the head's credentials keeps its client
// certificate in the user's cache directory and uses it again.
func TestCertsBounded(t *testing.T) {
	port, addr, sess := newSession(t)
	const validity = 12 * time.Second
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess,
		"--num-cpus", "2", "--object-store-memory", "256MiB",
		"--driver-cert-validity", validity.String(), "--cert-collect-every", "1s", "--cert-retention", "1s")
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	token := printedToken(t, out)
	byRole := func() map[string]int {
		t.Helper()
		out, errOut, code := run(t, 30*time.Second, nil, rayctl, "cert", "list", "--session-dir", sess, "-o", "json")
		var raw []map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &raw) != nil {
			t.Fatalf("cert list: exit %d\n%s\n%s", code, out, errOut)
		}
		n := map[string]int{}
		for _, m := range raw {
			role, _ := m["role"].(string)
			n[role]++
		}
		return n
	}
	base := byRole()

	// rayctl with the token, from a machine without the head's credentials, 8 times: one
	// certificate, kept private.
	cache, empty := t.TempDir(), t.TempDir()
	env := []string{"RAY_GO_TOKEN=" + token, "XDG_CACHE_HOME=" + cache}
	for range 8 {
		if out, errOut, code := run(t, 30*time.Second, env, rayctl, "status", "--address", addr, "--session-dir", empty); code != 0 {
			t.Fatalf("status with the token: exit %d\n%s\n%s", code, out, errOut)
		}
	}
	if got := byRole(); got[identity.RoleClient] != base[identity.RoleClient]+1 {
		t.Errorf("client certificates after 8 commands: %d, want %d", got[identity.RoleClient], base[identity.RoleClient]+1)
	}
	if bad, files, err := identity.NotPrivate(filepath.Join(cache, "ray-go")); err != nil || len(bad) > 0 || files != 3 {
		t.Errorf("the cached client certificate: %d files, not private: %v (%v)", files, bad, err)
	}

	// Drivers: one that outlives its first certificate, and three short ones.
	denv := []string{"RAY_ADDRESS=" + addr, "RAY_GO_TOKEN=" + token}
	long := exec.Command(driver, "-check", "hold-sum")
	long.Env = append(os.Environ(), append(denv, "E2E_HOLD="+(validity+4*time.Second).String())...)
	var longOut strings.Builder
	long.Stdout, long.Stderr = &longOut, &longOut
	if err := long.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = long.Process.Kill(); _ = long.Wait() })
	for range 3 {
		if out, errOut, code := run(t, 60*time.Second, denv, driver, "-check", "hold-sum"); code != 0 || !strings.Contains(out, `"sum":5`) {
			t.Errorf("a driver: exit %d\n%s\n%s", code, out, tail(errOut))
		}
	}
	if got := byRole(); got[identity.RoleDriver] < base[identity.RoleDriver]+4 {
		t.Errorf("driver certificates while 4 drivers ran: %d, base %d", got[identity.RoleDriver], base[identity.RoleDriver])
	}
	done := make(chan error, 1)
	go func() { done <- long.Wait() }()
	select {
	case err := <-done:
		if err != nil || !strings.Contains(longOut.String(), `"sum":5`) {
			t.Errorf("the driver that outlived its first certificate: %v\n%s", err, tail(longOut.String()))
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("the driver that outlived its first certificate did not end\n%s", tail(longOut.String()))
	}
	eventually.True(t, validity+30*time.Second, "the drivers' certificates to be collected", func() bool {
		got := byRole()
		return got[identity.RoleDriver] == base[identity.RoleDriver] && got[identity.RoleClient] == base[identity.RoleClient]+1
	})
}
