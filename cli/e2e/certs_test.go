package e2e

import (
	"encoding/json"
	"fmt"
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
// certificate still works) and given up when it ends, and the head collects the records
// and users of expired ones;
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
	long.Env = tagEnv(t, append(denv, "E2E_HOLD="+(validity+4*time.Second).String())...)
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
	// The three that ended gave theirs up (ray.Shutdown); the one running keeps its own.
	if got := byRole(); got[identity.RoleDriver] < base[identity.RoleDriver]+1 {
		t.Errorf("driver certificates while a driver runs: %d, base %d", got[identity.RoleDriver], base[identity.RoleDriver])
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

// A driver's certificate records go with the driver, not an hour or two later: at once
// when it shuts down (ray.Shutdown gives the certificate up), and once the head fails the
// job of a driver killed with SIGKILL; a driver still running keeps its certificate and
// works on.
func TestDriverCertGoesWithItsDriver(t *testing.T) {
	t.Parallel() // mostly idle: it waits out a driver's 90 s hold
	port, addr, sess := newSession(t)
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess,
		"--num-cpus", "2", "--object-store-memory", "256MiB")
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	denv := tagEnv(t, "RAY_ADDRESS="+addr, "RAY_GO_TOKEN="+printedToken(t, out))
	host, _ := os.Hostname()
	// records returns how many certificate records name the driver process pid.
	records := func(pid int) int {
		t.Helper()
		out, errOut, code := run(t, 30*time.Second, nil, rayctl, "cert", "list", "--session-dir", sess, "-o", "json")
		var raw []map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &raw) != nil {
			t.Fatalf("cert list: exit %d\n%s\n%s", code, out, errOut)
		}
		n := 0
		for _, m := range raw {
			if m["name"] == fmt.Sprintf("driver-%s-%d", host, pid) {
				n++
			}
		}
		return n
	}
	// running reports whether the job of the driver process pid is RUNNING.
	running := func(pid int) bool {
		t.Helper()
		out, errOut, code := run(t, 30*time.Second, nil, rayctl, "list", "jobs", "--session-dir", sess, "-o", "json")
		var raw []map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &raw) != nil {
			t.Fatalf("list jobs: exit %d\n%s\n%s", code, out, errOut)
		}
		for _, m := range raw {
			if m["driver"] == fmt.Sprintf("%s:%d", host, pid) && m["state"] == "RUNNING" {
				return true
			}
		}
		return false
	}
	start := func(hold time.Duration) (*exec.Cmd, *strings.Builder) {
		t.Helper()
		cmd := exec.Command(driver, "-check", "hold-sum")
		cmd.Env = append(denv, "E2E_HOLD="+hold.String())
		var b strings.Builder
		cmd.Stdout, cmd.Stderr = &b, &b
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		eventually.True(t, 60*time.Second, "the driver's certificate to be recorded", func() bool { return records(cmd.Process.Pid) > 0 })
		eventually.True(t, 60*time.Second, "the driver's job to run", func() bool { return running(cmd.Process.Pid) })
		return cmd, &b
	}

	live, liveOut := start(90 * time.Second)
	liveDone := make(chan error, 1)
	go func() { liveDone <- live.Wait() }()

	short, shortOut := start(5 * time.Second)
	if err := short.Wait(); err != nil || !strings.Contains(shortOut.String(), `"sum":5`) {
		t.Fatalf("a driver: %v\n%s", err, tail(shortOut.String()))
	}
	eventually.True(t, 20*time.Second, "the ended driver's certificate records to go", func() bool { return records(short.Process.Pid) == 0 })

	killed, _ := start(10 * time.Minute)
	if err := killed.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = killed.Wait()
	eventually.True(t, 60*time.Second, "the killed driver's certificate records to go", func() bool { return records(killed.Process.Pid) == 0 })

	if n := records(live.Process.Pid); n == 0 {
		t.Error("the running driver's certificate records went")
	}
	select {
	case err := <-liveDone:
		if err != nil || !strings.Contains(liveOut.String(), `"sum":5`) {
			t.Errorf("the driver that ran throughout: %v\n%s", err, tail(liveOut.String()))
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("the driver that ran throughout did not end\n%s", tail(liveOut.String()))
	}
	eventually.True(t, 20*time.Second, "its certificate records to go", func() bool { return records(live.Process.Pid) == 0 })
}

// A driver whose ray.Init outlasts its first certificate works on: the renewal starts as
// soon as the certificate is issued, not once Init returns (Init ships the executable and
// waits for the job's worker processes: under load it took longer than TestCertsBounded's
// 12 s certificates, and the renewal that began after it found the certificate lapsed).
// Here the job's worker process waits longer than the certificate lives before it joins,
// so the driver's Init does too.
func TestInitOutlastsItsCertificate(t *testing.T) {
	t.Parallel() // mostly idle: it waits out a worker process's delay and a hold
	port, addr, sess := newSession(t)
	const validity = 12 * time.Second
	out, errOut, code := run(t, 90*time.Second, []string{"E2E_WORKER_DELAY=" + (validity + 6*time.Second).String()}, rayctl, "start", "--head",
		"--port", strconv.Itoa(port), "--session-dir", sess, "--num-cpus", "2", "--object-store-memory", "256MiB", "--resources", `{"accel": 1}`,
		"--driver-cert-validity", validity.String(), "--cert-collect-every", "1s", "--cert-retention", "1s")
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	denv := []string{"RAY_ADDRESS=" + addr, "RAY_GO_TOKEN=" + printedToken(t, out), "E2E_HOLD=" + validity.String()}
	out, errOut, code = run(t, 3*time.Minute, denv, driver, "-check", "hold-sum")
	if code != 0 || !strings.Contains(out, `"sum":5`) {
		t.Fatalf("the driver whose Init outlasted its first certificate: exit %d\n%s\n%s", code, out, tail(errOut))
	}
}
