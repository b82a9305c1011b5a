package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/fuzzing"

	"github.com/ray-go/ray/internal/base/identity"
	"github.com/ray-go/ray/internal/base/netx"
)

// rayctl is the binary built for the tests that run real processes.
var rayctl string

func TestMain(m *testing.M) {
	if os.Getenv(peerNodeEnv) != "" { // TestCertRevocation's node process
		os.Exit(peerNodeMain())
	}
	if fuzzing.OnlyFuzzing() { // the fuzz targets need no helper binary
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "rayctl-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	rayctl = filepath.Join(dir, "rayctl")
	// go test puts its Go's bin directory first in PATH (Go 1.19 and later).
	cmd := exec.Command("go", "build", "-o", rayctl, "./rayctl")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build rayctl:", err)
		os.Exit(1)
	}
	// rayctl keeps the client certificates of tokens in the user's cache directory
	// (clientcert.go): the tests' go to theirs. Set after the build: go keeps its build
	// cache there too (GOCACHE defaults to $XDG_CACHE_HOME/go-build), and the build ran
	// with an empty one, compiling the standard library and every dependency again (ten
	// of this package's eleven minutes on a loaded 2-CPU machine, one without that).
	os.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

// run runs rayctl with args (and extra environment), bounded by 90 s.
func run(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, rayctl, args...)
	cmd.Env = append(cleanEnv(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("rayctl %v: %v", args, err)
	}
	t.Logf("rayctl %s -> %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	return r
}

// cleanEnv is the test's environment without variables rayctl reads.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RAY_") {
			env = append(env, kv)
		}
	}
	return env
}

// freePort is a port for a head agent (its GCS port; the join endpoint takes the next
// one), outside the ephemeral range other processes' connections draw from.
func freePort(t *testing.T) int {
	t.Helper()
	p, err := netx.FreePorts("127.0.0.1", 2)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func status(t *testing.T, args ...string) (Status, result) {
	t.Helper()
	r := run(t, nil, append([]string{"status", "-o", "json"}, args...)...)
	var st Status
	if r.code == 0 {
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
			t.Fatalf("status output: %v\n%s", err, r.stdout)
		}
	}
	return st, r
}

func TestCluster(t *testing.T) {
	// Its own agents (processes), ports and session dir: it mostly waits for them.
	t.Parallel()
	sess := filepath.Join(t.TempDir(), "session") // made by the agent
	// Whatever happens, no agent outlives the test (cleanups run before TempDir's).
	t.Cleanup(func() { run(t, nil, "stop", "--force", "--session-dir", sess) })
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)

	r := run(t, nil, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess, "--num-cpus", "2", "--resources", `{"accel":1}`)
	if r.code != 0 || !strings.Contains(r.stdout, "export RAY_ADDRESS="+addr+"\n") {
		t.Fatalf("start --head: %+v", r)
	}
	token := PrintedToken(r.stdout)
	if token == "" {
		t.Fatalf("no join token in:\n%s", r.stdout)
	}
	tok := []string{"RAY_GO_TOKEN=" + token}

	// Security: without the token (and not on the head's session dir) status is refused
	// with its own exit code and says what to pass; a wrong token is refused; the token,
	// or the head's session dir, work.
	if _, r := status(t, "--address", addr); r.code != ExitCredentials || !strings.Contains(r.stderr, "--token") {
		t.Errorf("status without the token: %+v", r)
	}
	bad := []byte(token)
	// Another hex digit (flipping a bit of one can make a non-hex character: a malformed
	// token, not a wrong one).
	if bad[0] == '0' {
		bad[0] = '1'
	} else {
		bad[0] = '0'
	}
	if _, r := status(t, "--address", addr, "--token", string(bad)); r.code != ExitCredentials || !strings.Contains(r.stderr, "refused") {
		t.Errorf("status with a wrong token: %+v", r)
	}
	if _, r := status(t, "--address", addr, "--insecure"); r.code != ExitCredentials || !strings.Contains(r.stderr, "secure") {
		t.Errorf("status --insecure on a secure cluster: %+v", r)
	}
	if r := run(t, nil, "job", "submit", "--address", addr, "--", "/bin/sh", "-c", "id"); r.code != ExitCredentials || !strings.Contains(r.stderr, "--token") {
		t.Errorf("job submit without the token: %+v", r)
	}
	if _, r := status(t, "--session-dir", sess); r.code != 0 {
		t.Errorf("status with the head's session dir: %+v", r)
	}
	if r := run(t, nil, "start", "--address", addr, "--session-dir", t.TempDir()); r.code != ExitCredentials || !strings.Contains(r.stderr, "--token") {
		t.Errorf("an agent without the token: %+v", r)
	}
	if r := run(t, nil, "token", "show", "--session-dir", sess); r.code != 0 || strings.TrimSpace(r.stdout) != token {
		t.Errorf("token show: %+v", r)
	}
	if r := run(t, nil, "token", "--session-dir", sess); r.code != 0 || strings.TrimSpace(r.stdout) != token {
		t.Errorf("token alone (as token show): %+v", r)
	}
	st, r := status(t, "--address", addr, "--token", token)
	if r.code != 0 || len(st.Nodes) != 1 || !st.Nodes[0].Alive || !st.Nodes[0].Head ||
		st.Nodes[0].Total["CPU"] != 2 || st.Nodes[0].Total["accel"] != 1 || st.Cluster.AliveNodes != 1 {
		t.Fatalf("status after start: %+v", st)
	}

	// A second agent joins through RAY_ADDRESS; status finds the cluster through the
	// session dir.
	r = run(t, []string{"RAY_ADDRESS=" + addr, "RAY_GO_OBJECT_STORE_MEMORY=500MB", "RAY_GO_TOKEN=" + token}, "start", "--session-dir", sess, "--num-cpus", "1")
	if r.code != 0 {
		t.Fatalf("start --address: %+v", r)
	}
	st, r = status(t, "--session-dir", sess)
	if r.code != 0 || st.Cluster.AliveNodes != 2 || st.Cluster.Total["CPU"] != 3 || len(st.Nodes) != 2 ||
		st.Nodes[1].ObjectStoreBudget != 500_000_000 {
		t.Fatalf("status with two agents: %+v", st)
	}
	if r := run(t, tok, "status", "--address", addr); r.code != 0 || !strings.Contains(r.stdout, "2 node(s) alive") {
		t.Errorf("text status: %+v", r)
	}
	// The state API: list and get nodes, filtered; no actors yet.
	var nodes []map[string]any
	if r := run(t, tok, "list", "nodes", "--address", addr, "-o", "json"); r.code != 0 || json.Unmarshal([]byte(r.stdout), &nodes) != nil || len(nodes) != 2 {
		t.Errorf("list nodes: %+v", r)
	}
	var heads []map[string]any
	if r := run(t, tok, "list", "nodes", "--address", addr, "-o", "json", "--filter", "head=true", "--filter", "state=ALIVE"); r.code != 0 ||
		json.Unmarshal([]byte(r.stdout), &heads) != nil || len(heads) != 1 {
		t.Errorf("list nodes --filter head=true: %+v", r)
	} else if r := run(t, tok, "get", "node", heads[0]["node_id"].(string), "--address", addr); r.code != 0 || !strings.Contains(r.stdout, "head: true") {
		t.Errorf("get node: %+v", r)
	}
	if r := run(t, tok, "list", "nodes", "--address", addr, "--filter", "colour=red"); r.code != ExitError || !strings.Contains(r.stderr, "no such field") {
		t.Errorf("list with a filter on no field: %+v", r)
	}
	if r := run(t, tok, "list", "actors", "--address", addr, "-o", "json"); r.code != 0 || strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("list actors of a cluster without any: %+v", r)
	}
	if r := run(t, tok, "summary", "nodes", "--address", addr, "-o", "json"); r.code != 0 || !strings.Contains(r.stdout, `"ALIVE": 2`) {
		t.Errorf("summary nodes: %+v", r)
	}
	if r := run(t, tok, "list", "widgets", "--address", addr); r.code != ExitError || !strings.Contains(r.stderr, "nodes, jobs, actors, placement-groups, workers, tasks, objects") {
		t.Errorf("list of an unknown kind: %+v", r)
	}
	if r := run(t, tok, "list", "placement-groups", "--address", addr, "-o", "json"); r.code != 0 || strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("list placement-groups of a cluster that has none: %+v", r)
	}
	// Objects, of a cluster that has run none (cli/e2e runs a job and checks them).
	if r := run(t, tok, "list", "objects", "--address", addr, "-o", "json"); r.code != 0 || strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("list objects: %+v", r)
	}
	if r := run(t, tok, "list", "objects", "--address", addr, "--filter", "colour=red"); r.code != ExitError || !strings.Contains(r.stderr, "reference_type") {
		t.Errorf("list objects with a filter on a field objects lack: %+v", r)
	}
	if r := run(t, tok, "list", "objects", "--detail", "--address", addr, "--filter", "colour=red"); r.code != ExitError || !strings.Contains(r.stderr, "call_site") {
		t.Errorf("list objects --detail with a filter on a field objects lack (they have call_site): %+v", r)
	}
	if r := run(t, tok, "list", "nodes", "--detail", "--address", addr); r.code != ExitError || !strings.Contains(r.stderr, "--detail is for list objects") {
		t.Errorf("list nodes --detail: %+v", r)
	}
	// Tasks, of a cluster that has run none (cli/e2e runs a job and checks them).
	if r := run(t, tok, "list", "tasks", "--address", addr, "-o", "json"); r.code != 0 || strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("list tasks of a cluster without any: %+v", r)
	}
	if r := run(t, tok, "list", "tasks", "--address", addr, "--filter", "colour=red"); r.code != ExitError || !strings.Contains(r.stderr, "no such field") {
		t.Errorf("list tasks with a filter on no field: %+v", r)
	}
	if r := run(t, tok, "get", "task", "0123456789abcdef", "--address", addr); r.code != ExitError || !strings.Contains(r.stderr, "no task") {
		t.Errorf("get task of an unknown ID: %+v", r)
	}
	tl := filepath.Join(t.TempDir(), "timeline.json")
	if r := run(t, tok, "timeline", "--address", addr, "--job", "nosuch", "--output", tl+".none"); r.code != ExitError || !strings.Contains(r.stderr, `no job "nosuch"`) {
		t.Errorf("timeline of a job that does not exist: %+v, want an error", r)
	}
	if _, err := os.Stat(tl + ".none"); err == nil {
		t.Errorf("timeline of a job that does not exist wrote a file")
	}
	if r := run(t, tok, "timeline", "--address", addr, "--output", tl); r.code != 0 {
		t.Errorf("timeline: %+v", r)
	} else if b, err := os.ReadFile(tl); err != nil || !json.Valid(b) {
		t.Errorf("timeline of no tasks: %v\n%s", err, b)
	}

	// The port is taken (by the head of another session directory: a second head in this
	// one is refused before that, TestFailedStartKeepsTheAgent).
	r = run(t, nil, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", t.TempDir())
	if r.code != ExitPortInUse || !strings.Contains(r.stderr, "port "+strconv.Itoa(port)) || !strings.Contains(r.stderr, "--port") {
		t.Errorf("start on a taken port: %+v", r)
	}

	// Jobs.
	r = run(t, tok, "job", "submit", "--address", addr, "--", "/bin/sh", "-c", "echo hi; echo to-stderr >&2; exit 0")
	if r.code != 0 || !strings.Contains(r.stdout, "hi\n") || !strings.Contains(r.stdout, "to-stderr") || !strings.Contains(r.stderr, "SUCCEEDED") {
		t.Errorf("job submit: %+v", r)
	}
	r = run(t, tok, "job", "submit", "--address", addr, "--env", "GREETING=a,b", "--", "sh", "-c", `echo "$GREETING $RAY_ADDRESS"; exit 3`)
	if r.code != ExitJobFailed || !strings.Contains(r.stdout, "a,b "+addr) || !strings.Contains(r.stderr, "exit code 3") {
		t.Errorf("failing job: %+v", r)
	}
	r = run(t, tok, "job", "submit", "--address", addr, "--", "./no-such-program")
	if r.code != ExitError || !strings.Contains(r.stderr, "does not exist") {
		t.Errorf("missing program: %+v", r)
	}
	r = run(t, tok, "job", "submit", "--no-wait", "--address", addr, "--", "/bin/sh", "-c", "echo started; exec sleep 60")
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || len(id) != 16 {
		t.Fatalf("submit --no-wait: %+v", r)
	}
	// IDs may be cut to 6 characters, as for get job (they were refused: "no submission").
	prefix := id[:6]
	deadline := time.Now().Add(20 * time.Second)
	for {
		r = run(t, tok, "job", "logs", "--address", addr, prefix)
		if strings.Contains(r.stdout, "started") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no output from %s: %+v", id, r)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r = run(t, tok, "logs", "job", prefix, "--address", addr); r.code != 0 || !strings.Contains(r.stdout, "started") {
		t.Errorf("logs job %s: %+v", prefix, r)
	}
	r = run(t, tok, "job", "stop", prefix, "--address", addr)
	if r.code != 0 || !strings.Contains(r.stdout, "STOPPED") {
		t.Errorf("job stop: %+v", r)
	}
	r = run(t, tok, "job", "status", prefix, "--address", addr, "-o", "json")
	var v submissionView
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.State != "STOPPED" || !v.StopRequest {
		t.Errorf("job status: %+v (%v)", r, err)
	}
	r = run(t, tok, "job", "list", "--address", addr, "-o", "json")
	var views []submissionView
	if err := json.Unmarshal([]byte(r.stdout), &views); err != nil || len(views) != 3 {
		t.Errorf("job list: %+v (%v)", r, err)
	}

	// Rotation: the old token is refused from now on, the new one works.
	r = run(t, nil, "token", "rotate", "--session-dir", sess)
	rotated := strings.TrimSpace(r.stdout)
	if r.code != 0 || rotated == token {
		t.Fatalf("token rotate: %+v", r)
	}
	// It says what it does not do, and how to shut out what the old token got.
	for _, want := range []string{"refuses the old one", "revokes no certificate", "rayctl cert list", "rayctl cert revoke SERIAL"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("token rotate does not say %q: %s", want, r.stderr)
		}
	}
	if _, r := status(t, "--address", addr, "--token", token); r.code != ExitCredentials {
		t.Errorf("the old token after a rotation: %+v", r)
	}
	if _, r := status(t, "--address", addr, "--token", rotated); r.code != 0 {
		t.Errorf("the new token: %+v", r)
	}
	// What the agents wrote (their directories, pid files, agent.json, logs, worker
	// directories, the GCS's data) is for this user only: directories 0700, files 0600.
	checkPrivate(t, sess)

	// A stale pid file that names a live process which is not an agent (this test) is
	// removed, and the process is not signalled.
	stale := filepath.Join(sess, "agent-0000000000000000")
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, pidFileName), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r = run(t, nil, "stop", "--session-dir", sess)
	if r.code != 0 || strings.Count(r.stdout, "Stopped") != 2 || !strings.Contains(r.stderr, "stale pid file") {
		t.Errorf("stop: %+v", r)
	}
	t.Logf("stop took %v", time.Since(start))
	if _, err := os.Stat(filepath.Join(stale, pidFileName)); !os.IsNotExist(err) {
		t.Errorf("stale pid file not removed: %v", err)
	}
	if pids, _ := filepath.Glob(filepath.Join(sess, "*", pidFileName)); len(pids) != 0 {
		t.Errorf("pid files left: %v", pids)
	}
	if _, r := status(t, "--address", addr, "--token", rotated); r.code != ExitGCSUnreachable || !strings.Contains(r.stderr, addr) {
		t.Errorf("status after stop: %+v", r)
	}
	if r := run(t, nil, "stop", "--session-dir", sess); r.code != ExitNothingRunning {
		t.Errorf("stop with nothing running: %+v", r)
	}
}

// checkPrivate fails t for anything under root (root included) that others may read:
// directories must be 0700 and files 0600.
func checkPrivate(t *testing.T, root string) {
	t.Helper()
	bad, files, err := identity.NotPrivate(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
	if files < 5 {
		t.Errorf("only %d files under %s", files, root)
	}
}

// TestUsageErrors runs Main in this process: each fails before starting anything.
func TestUsageErrors(t *testing.T) {
	sess := t.TempDir()
	// A TLS server that is not a cluster (what rayctl without credentials cannot tell from
	// one), an HTTP server (the dashboard's port given as the GCS's) and an address where
	// nothing listens.
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler())
	defer tlsSrv.Close()
	secure := tlsSrv.Listener.Addr().String()
	httpSrv := httptest.NewServer(http.NotFoundHandler())
	defer httpSrv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nothing := ln.Addr().String()
	ln.Close()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"start", "--session-dir", sess}, ExitError, "--head for a new cluster"},
		{[]string{"start", "--head", "--address", "a:1", "--session-dir", sess}, ExitError, "exclude each other"},
		{[]string{"start", "--head", "--resources", `{"CPU":2}`, "--session-dir", sess}, ExitError, "--num-cpus"},
		{[]string{"start", "--head", "--resources", `{"GPU":2}`, "--session-dir", sess}, ExitError, "--num-gpus"},
		{[]string{"start", "--head", "--resources", `[1]`, "--session-dir", sess}, ExitError, "JSON object"},
		{[]string{"start", "--head", "--object-store-memory", "lots", "--session-dir", sess}, ExitError, "500MB"},
		{[]string{"start", "--address", "a:1", "--gcs-endpoints", "b:2", "--session-dir", sess}, ExitError, "for the head"},
		{[]string{"stop", "--session-dir", sess}, ExitNothingRunning, "no live agent under " + sess}, // (and "no ray-go agent is running" when no other test runs one)
		{[]string{"status", "--session-dir", sess}, ExitNothingRunning, "RAY_ADDRESS"},
		{[]string{"status", "-o", "yaml", "--address", "a:1"}, ExitError, "-o json"},
		{[]string{"job", "submit", "--address", "a:1"}, ExitError, "no program"},
		{[]string{"job", "submit", "--address", "a:1", "--env", "NOEQUALS", "--", "/bin/sh"}, ExitError, "KEY=VALUE"},
		{[]string{"nosuch"}, ExitError, ""},
		{[]string{"start", "--head", "--token", "x", "--session-dir", sess}, ExitCredentials, "malformed"},
		{[]string{"start", "--head", "--token", strings.Repeat("a", 64) + "." + strings.Repeat("b", 64), "--session-dir", sess}, ExitError, "for joining"},
		{[]string{"start", "--address", "a:1", "--insecure", "--gcs-ca", "c", "--gcs-cert", "c", "--gcs-key", "k", "--session-dir", sess}, ExitError, "--insecure excludes"},
		{[]string{"start", "--address", "a:1", "--gcs-ca", "c", "--session-dir", sess}, ExitError, "go together"},
		{[]string{"status", "--address", secure}, ExitCredentials, "--token"},
		{[]string{"status", "--address", "a:1", "--token", "abc.def"}, ExitCredentials, "malformed"},
		{[]string{"job", "list", "--address", secure}, ExitCredentials, "--token"},
		// Nothing there (a stopped cluster) is exit 4, not "no credentials".
		{[]string{"status", "--address", nothing}, ExitGCSUnreachable, "nothing answered at " + nothing},
		{[]string{"list", "nodes", "--address", nothing}, ExitGCSUnreachable, "nothing answered"},
		// The dashboard's port is not the GCS's (it said "speaks plain text ... pass --insecure").
		{[]string{"status", "--address", httpSrv.Listener.Addr().String()}, ExitGCSUnreachable, "is an HTTP server"},
		{[]string{"status", "--insecure", "--address", httpSrv.Listener.Addr().String()}, ExitGCSUnreachable, "is an HTTP server"},
		{[]string{"token", "show", "--session-dir", sess}, ExitNothingRunning, "no secure head"},
		{[]string{"token", "--session-dir", sess}, ExitNothingRunning, "no secure head"},
		{[]string{"token", "shwo", "--session-dir", sess}, ExitError, "show (the default) or rotate"},
		// Enum-valued filter fields: a value the field never has is refused, with the
		// values it has, before any process is asked; any case is the value.
		{[]string{"list", "objects", "--filter", "state=bogus", "--address", "a:1"}, ExitError, "the state of objects is one of PENDING, READY, FAILED, FREED, AT_OWNER"},
		{[]string{"list", "tasks", "-f", "state!=done", "--address", "a:1"}, ExitError, "filter state!=done: the state of tasks is one of PENDING_ARGS_AVAIL,"},
		{[]string{"list", "actors", "-f", "state=alive", "-f", "detached=maybe", "--address", "a:1"}, ExitError, "the detached of actors is one of true, false"},
		{[]string{"list", "nodes", "-f", "state=up", "--address", "a:1"}, ExitError, "one of ALIVE, UNREACHABLE, DEAD"},
		{[]string{"list", "jobs", "-f", "state=done", "--address", "a:1"}, ExitError, "one of PENDING, RUNNING, SUCCEEDED, FAILED, STOPPED"},
		{[]string{"list", "objects", "--filter", "state=ready", "--address", secure}, ExitCredentials, "--token"}, // accepted: on to the cluster
		// A filter on a field the records do not have is refused, naming those they have,
		// before anything is read (a cluster of no placement groups took any field and
		// printed nothing, exit 0).
		{[]string{"list", "placement-groups", "-f", "colour=red", "--address", "a:1"}, ExitError, `filter on "colour": placement-groups have no such field; they have placement_group_id, name,`},
		{[]string{"list", "actors", "-f", "namespace=ns1", "-f", "NAME=c", "--address", "a:1"}, ExitError, `filter on "NAME": actors have no such field; they have actor_id, class, name, namespace,`},
		{[]string{"list", "jobs", "-f", "owner=me", "--address", "a:1"}, ExitError, "jobs have no such field; they have job_id,"},
		{[]string{"list", "nodes", "-f", "zone=a", "--address", "a:1"}, ExitError, "nodes have no such field; they have node_id,"},
		{[]string{"list", "actors", "-f", "namespace=ns1", "-f", "name=c", "--address", secure}, ExitCredentials, "--token"}, // accepted: on to the cluster
	} {
		for _, v := range []string{"RAY_ADDRESS", "RAY_GO_TOKEN", "RAY_GO_TOKEN_FILE", "RAY_GO_INSECURE", "RAY_GO_GCS_CA", "RAY_GO_GCS_CERT", "RAY_GO_GCS_KEY"} {
			t.Setenv(v, "")
		}
		var out, errb bytes.Buffer
		code := Main(append([]string{"rayctl"}, c.args...), &out, &errb)
		if code != c.code || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errb.String(), c.code, c.want)
		}
	}
}

func TestInterspersed(t *testing.T) {
	app := New(nil, nil)
	for _, c := range []struct{ in, want string }{
		{"rayctl job logs ID --follow", "rayctl job logs --follow ID"},
		{"rayctl job status ID -o json --address a:1", "rayctl job status -o json --address a:1 ID"},
		{"rayctl job status ID --output=json", "rayctl job status --output=json ID"},
		{"rayctl job submit -- prog --follow", "rayctl job submit -- prog --follow"},
		{"rayctl status -o json", "rayctl status -o json"},
		// Help: the command's own, without its arguments (urfave/cli took one for a
		// subcommand's name: "No help topic for 'actors'").
		{"rayctl list actors --help", "rayctl list --help"},
		{"rayctl list --help actors", "rayctl list --help"},
		{"rayctl get actor ID -h", "rayctl get -h"},
		{"rayctl job status ID --help", "rayctl job status --help"},
	} {
		got := strings.Join(interspersed(app, strings.Fields(c.in)), " ")
		if got != c.want {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
		}
	}
}

// TestHelpAfterArgument: `rayctl list actors --help` shows list's help, which names the
// kinds it lists, as `rayctl list --help` does (urfave/cli said "No help topic for
// 'actors'").
func TestHelpAfterArgument(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"list", "actors", "--help"}, "nodes|jobs|actors|placement-groups|workers|tasks|objects"},
		{[]string{"list", "--help"}, "nodes|jobs|actors|placement-groups|workers|tasks|objects"},
		{[]string{"list", "tasks", "-h"}, "rayctl list"},
		{[]string{"get", "actor", "--help"}, "rayctl get"},
		{[]string{"summary", "tasks", "--help"}, "rayctl summary"},
		{[]string{"job", "status", "ID", "--help"}, "rayctl job status"},
	} {
		var out, errb bytes.Buffer
		code := Main(append([]string{"rayctl"}, c.args...), &out, &errb)
		if code != ExitOK || !strings.Contains(out.String(), c.want) || errb.Len() != 0 {
			t.Errorf("rayctl %v: exit %d, stdout %q, stderr %q; want the help, with %q", c.args, code, out.String(), errb.String(), c.want)
		}
	}
}

func TestWithoutToken(t *testing.T) {
	in := strings.Fields("start --address a:1 --token T1 --token=T2 -token T3 --token-file F1 --token-file=F2 --num-cpus 2")
	if got := strings.Join(withoutToken(in), " "); got != "start --address a:1 --num-cpus 2" {
		t.Fatalf("got %q", got)
	}
}

func TestPrintedToken(t *testing.T) {
	tok := strings.Repeat("ab", 32) + "." + strings.Repeat("cd", 32)
	out := "ray-go head agent started\n\n" + tokenIndent + tok + "\n\n    RAY_ADDRESS=x\n"
	if got := PrintedToken(out); got != tok {
		t.Fatalf("PrintedToken = %q, want %q", got, tok)
	}
	for _, out := range []string{"", "no token here\n", tok + "\n", tokenIndent + "zz" + tok[2:] + "\n"} {
		if got := PrintedToken(out); got != "" {
			t.Errorf("PrintedToken(%q) = %q, want none", out, got)
		}
	}
}
