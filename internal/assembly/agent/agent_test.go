package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/internal/base/fuzzing"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/identity"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/internal/base/workerenv"
)

// helperPath is the test program (testdata/helper) built once for all tests.
var helperPath, helperSum string

func TestMain(m *testing.M) {
	if fuzzing.OnlyFuzzing() { // the fuzz targets need no helper binary
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "agent-helper-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	helperPath = filepath.Join(dir, "helper")
	// go test puts its Go's bin directory first in PATH (Go 1.19 and later).
	cmd := exec.Command("go", "build", "-o", helperPath, "./testdata/helper")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build the helper:", err)
		os.Exit(1)
	}
	b, err := os.ReadFile(helperPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s := sha256.Sum256(b)
	helperSum = hex.EncodeToString(s[:])
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return quiet()
}

// startAgent starts an agent and stops it when the test ends.
func startAgent(t *testing.T, cfg Config) *Agent {
	t.Helper()
	if cfg.SessionDir == "" {
		cfg.SessionDir = t.TempDir()
	}
	if cfg.Resources == nil {
		cfg.Resources = map[string]float64{"CPU": 2, "accel": 1}
	}
	if cfg.Environ == nil {
		cfg.Environ = os.Environ()
	}
	if cfg.ObjectStoreBytes == 0 {
		cfg.ObjectStoreBytes = 1 << 30
	}
	cfg.Logger = testLogger(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := a.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return a
}

func get[T proto.Message](t *testing.T, s gcs.Store, key string, msg T) (T, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kv, found, err := s.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if !found {
		return msg, false
	}
	if err := proto.Unmarshal(kv.Value, msg); err != nil {
		t.Fatal(err)
	}
	return msg, true
}

func put(t *testing.T, s gcs.Store, key string, msg proto.Message, lease gcs.LeaseID) {
	t.Helper()
	b, err := proto.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.Put(ctx, key, b, lease); err != nil {
		t.Fatal(err)
	}
}

func processGone(pid int) bool {
	err := syscall.Kill(pid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return true
	}
	// A zombie (not yet reaped by its parent) counts as gone.
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] == "Z"
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{SessionDir: "/x"}, "needs GCSEndpoints"},
		{Config{Head: true}, "empty SessionDir"},
		{Config{Head: true, SessionDir: "/x", GCSPort: 70000}, "out of range"},
		{Config{Head: true, SessionDir: "/x", Resources: map[string]float64{"CPU": -1}}, "resource CPU"},
		{Config{Head: true, SessionDir: "/x", ObjectStoreBytes: -1}, "negative"},
		{Config{SessionDir: "/x", GCSEndpoints: []string{"a:1,b:2"}}, "bad GCS endpoint"},
	} {
		err := c.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.cfg, err, c.want)
		}
	}
	if err := (Config{Head: true, SessionDir: "/x"}).Validate(); err != nil {
		t.Error(err)
	}
	cfg, err := Config{Head: true, SessionDir: "/x"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Resources["CPU"] != float64(runtime.NumCPU()) || cfg.ObjectStoreBytes <= 0 {
		t.Errorf("defaults: %v %d", cfg.Resources, cfg.ObjectStoreBytes)
	}
}

func TestRecordsAndLiveness(t *testing.T) {
	head := startAgent(t, Config{Head: true})
	if head.Address() == "" || strings.Contains(head.Address(), "http") {
		t.Fatalf("address %q", head.Address())
	}
	s := head.Store()
	info, ok := get(t, s, gcs.AgentKey(head.ID()), &pb.AgentInfo{})
	if !ok || !info.GetHead() || info.GetPid() != int32(os.Getpid()) || info.GetGoos() != runtime.GOOS ||
		ResourcesFromPB(info.GetTotal())["accel"] != 1 || info.GetObjectStoreBytes() != 1<<30 ||
		strings.Join(info.GetGcsEndpoints(), ",") != head.Address() {
		t.Fatalf("agent record %v (found %v)", info, ok)
	}
	ctx := context.Background()
	kv, found, err := s.Get(ctx, gcs.AgentAliveKey(head.ID()))
	if err != nil || !found || kv.Lease == 0 {
		t.Fatalf("alive key: %v %v %v", kv, found, err)
	}

	// A second agent joins; stopping it revokes its alive key at once, its record stays.
	tok, err := head.Token()
	if err != nil {
		t.Fatal(err)
	}
	other := startAgent(t, Config{GCSEndpoints: strings.Split(head.Address(), ","), Token: &tok, JoinAddress: head.JoinAddress()})
	if other.Address() != head.Address() {
		t.Errorf("joined address %q, head %q", other.Address(), head.Address())
	}
	if _, found, _ := s.Get(ctx, gcs.AgentAliveKey(other.ID())); !found {
		t.Fatal("joined agent not alive")
	}
	if err := other.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.Stop(ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	select {
	case <-other.Done():
	default:
		t.Fatal("Done not closed after Stop")
	}
	if _, found, _ := s.Get(ctx, gcs.AgentAliveKey(other.ID())); found {
		t.Error("alive key still there after Stop")
	}
	if _, found, _ := s.Get(ctx, gcs.AgentKey(other.ID())); !found {
		t.Error("agent record gone after Stop")
	}
}

func TestStartErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	ctx := context.Background()
	_, err = Start(ctx, Config{Head: true, GCSPort: port, SessionDir: t.TempDir(), Logger: quiet()})
	if !errors.Is(err, ErrPortInUse) || !strings.Contains(err.Error(), fmt.Sprint(port)) {
		t.Errorf("port in use: %v", err)
	}
	// Nothing listens at a port we just closed.
	l2, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l2.Addr().String()
	l2.Close()
	start := time.Now()
	_, err = Start(ctx, Config{GCSEndpoints: []string{addr}, GCSDialTimeout: time.Second, SessionDir: t.TempDir(), Logger: quiet(), Insecure: true})
	if !errors.Is(err, ErrGCSUnreachable) || !strings.Contains(err.Error(), addr) {
		t.Errorf("unreachable: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("unreachable GCS took %v to report", d)
	}
}

// job registers a RUNNING job running the helper with args, keeps its jobalive key on a
// lease, and returns a function that ends the lease (the driver died).
func job(t *testing.T, s gcs.Store, id string, edit func(*pb.JobInfo), args ...string) (kill func()) {
	t.Helper()
	info := &pb.JobInfo{
		JobId: id, State: pb.JobInfo_RUNNING, Executable: helperPath, Sha256: helperSum,
		Goos: runtime.GOOS, Goarch: runtime.GOARCH, Args: args, StartUnixMs: time.Now().UnixMilli(),
	}
	if edit != nil {
		edit(info)
	}
	ctx := context.Background()
	lease, err := s.Grant(ctx, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, gcs.JobAliveKey(id), &pb.JobInfo{}, lease)
	put(t, s, gcs.JobKey(id), info, 0)
	return func() {
		if err := s.Revoke(ctx, lease); err != nil {
			t.Fatal(err)
		}
	}
}

type record struct {
	Pid   int               `json:"pid"`
	Args  []string          `json:"args"`
	Env   map[string]string `json:"env"`
	Cwd   string            `json:"cwd"`
	Child int               `json:"child"`
}

// records reads what the helper processes wrote into dir.
func records(t *testing.T, dir string) []record {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	var out []record
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var r record
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func TestWorkerProcess(t *testing.T) {
	head := startAgent(t, Config{Head: true, Namespace: "ns1"})
	s := head.Store()
	rec := t.TempDir()
	kill := job(t, s, "j1", nil, "-record", rec, "-child")

	var r record
	eventually.True(t, 10*time.Second, "the worker process", func() bool {
		rs := records(t, rec)
		if len(rs) > 0 {
			r = rs[0]
		}
		return len(rs) > 0
	})
	wantEnv := map[string]string{
		workerenv.Address:          head.Address(),
		workerenv.Mode:             workerenv.ModeWorker,
		workerenv.Job:              "j1",
		workerenv.Agent:            head.ID(),
		workerenv.Resources:        `{"CPU":2,"accel":1}`,
		workerenv.ObjectStoreBytes: fmt.Sprint(1 << 30),
		workerenv.Dir:              filepath.Join(head.cfg.SessionDir, "workers", "j1"),
		workerenv.Namespace:        "ns1",
		// The head's processes get a driver certificate of their own, not the head's (the
		// GCS's administrator).
		workerenv.GCSCA:   filepath.Join(head.cfg.SessionDir, procTLSDirName, "ca.crt"),
		workerenv.GCSCert: filepath.Join(head.cfg.SessionDir, procTLSDirName, "node.crt"),
		workerenv.GCSKey:  filepath.Join(head.cfg.SessionDir, procTLSDirName, "node.key"),
	}
	for k, v := range wantEnv {
		if r.Env[k] != v {
			t.Errorf("env %s=%q, want %q", k, r.Env[k], v)
		}
	}
	if c, err := identity.Load(identity.FilesIn(filepath.Join(head.cfg.SessionDir, procTLSDirName))); err != nil {
		t.Errorf("the head's processes' certificate: %v", err)
	} else if c.Role() != identity.RoleDriver {
		t.Errorf("the head's processes' certificate has role %q, want %q", c.Role(), identity.RoleDriver)
	}
	if strings.Join(r.Args, " ") != "-record "+rec+" -child" {
		t.Errorf("args %q", r.Args)
	}
	w, _ := get(t, s, gcs.JobWorkerKey("j1", head.ID()), &pb.JobWorker{})
	if w.GetState() != pb.JobWorker_STARTING || int(w.GetPid()) != r.Pid || w.GetLogPath() == "" {
		t.Errorf("worker record %v, pid %d", w, r.Pid)
	}
	if _, err := os.Stat(filepath.Join(head.cfg.SessionDir, "workers", "j1")); err != nil {
		t.Errorf("worker dir: %v", err)
	}
	// The worker's own RUNNING record is not overwritten by anything the agent does while
	// it runs; and a second look finds still exactly one process.
	put(t, s, gcs.JobWorkerKey("j1", head.ID()), &pb.JobWorker{JobId: "j1", AgentId: head.ID(), State: pb.JobWorker_RUNNING, Pid: int32(r.Pid), NodeId: "n1"}, 0)
	// A negative check (nothing overwrites the record, no second process starts): a
	// bounded window of several of the agent's ticks is the honest tool.
	time.Sleep(600 * time.Millisecond)
	if n := len(records(t, rec)); n != 1 {
		t.Fatalf("%d worker processes, want 1", n)
	}
	if w, _ := get(t, s, gcs.JobWorkerKey("j1", head.ID()), &pb.JobWorker{}); w.GetState() != pb.JobWorker_RUNNING {
		t.Errorf("RUNNING overwritten: %v", w)
	}

	// The driver dies: the worker gets SIGTERM (its group, so the child that ignores
	// SIGTERM goes too), its record says EXITED, its directory goes, the head fails the job.
	kill()
	eventually.True(t, 10*time.Second, "the job FAILED", func() bool {
		j, _ := get(t, s, gcs.JobKey("j1"), &pb.JobInfo{})
		return j.GetState() == pb.JobInfo_FAILED && j.GetMessage() == DriverExitedMessage && j.GetEndUnixMs() > 0
	})
	eventually.True(t, 10*time.Second, "the worker EXITED", func() bool {
		w, _ := get(t, s, gcs.JobWorkerKey("j1", head.ID()), &pb.JobWorker{})
		return w.GetState() == pb.JobWorker_EXITED
	})
	if _, err := os.Stat(filepath.Join(rec, fmt.Sprintf("%d.term", r.Pid))); err != nil {
		t.Errorf("worker got no SIGTERM: %v", err)
	}
	eventually.True(t, 5*time.Second, "worker and child gone", func() bool { return processGone(r.Pid) && processGone(r.Child) })
	if _, err := os.Stat(filepath.Join(head.cfg.SessionDir, "workers", "j1")); !os.IsNotExist(err) {
		t.Errorf("worker dir still there: %v", err)
	}
}

func TestWorkerUnsupported(t *testing.T) {
	head := startAgent(t, Config{Head: true})
	s := head.Store()
	job(t, s, "j2", func(j *pb.JobInfo) { j.Sha256 = strings.Repeat("0", 64) })
	job(t, s, "j3", func(j *pb.JobInfo) { j.Goarch = "riscv64x" })
	job(t, s, "j4", func(j *pb.JobInfo) { j.Executable = "/nonexistent/prog" })
	for job, want := range map[string]string{"j2": "sha256", "j3": "riscv64x", "j4": "/nonexistent/prog"} {
		eventually.True(t, 10*time.Second, job+" UNSUPPORTED", func() bool {
			w, _ := get(t, s, gcs.JobWorkerKey(job, head.ID()), &pb.JobWorker{})
			return w.GetState() == pb.JobWorker_UNSUPPORTED && strings.Contains(w.GetMessage(), want)
		})
	}
	// The file at the job's path has other bytes, and the GCS has no blob of the job's
	// hash: the agent says both, and runs nothing.
	w, _ := get(t, s, gcs.JobWorkerKey("j2", head.ID()), &pb.JobWorker{})
	if !strings.Contains(w.GetMessage(), "fetching it from the GCS failed") || !strings.Contains(w.GetMessage(), strings.Repeat("0", 64)) {
		t.Errorf("message %q does not say the fetch of the job's hash failed", w.GetMessage())
	}

	// A binary installed after the job started is picked up.
	later := filepath.Join(t.TempDir(), "later")
	rec := t.TempDir()
	job(t, s, "j7", func(j *pb.JobInfo) { j.Executable = later }, "-record", rec)
	eventually.True(t, 10*time.Second, "j7 UNSUPPORTED", func() bool {
		w, _ := get(t, s, gcs.JobWorkerKey("j7", head.ID()), &pb.JobWorker{})
		return w.GetState() == pb.JobWorker_UNSUPPORTED
	})
	b, err := os.ReadFile(helperPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(later, b, 0o755); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 10*time.Second, "j7's worker", func() bool { return len(records(t, rec)) == 1 })
}

func TestWorkerRestart(t *testing.T) {
	head := startAgent(t, Config{Head: true})
	s := head.Store()
	rec := t.TempDir()
	job(t, s, "j5", nil, "-record", rec, "-exit-after", "50ms", "-code", "7")
	eventually.True(t, 10*time.Second, "an EXITED record", func() bool {
		w, _ := get(t, s, gcs.JobWorkerKey("j5", head.ID()), &pb.JobWorker{})
		return w.GetState() == pb.JobWorker_EXITED && strings.Contains(w.GetMessage(), "exit status 7") &&
			strings.Contains(w.GetMessage(), "restarting")
	})
	eventually.True(t, 10*time.Second, "a restart", func() bool { return len(records(t, rec)) >= 2 })
	// The restart's record keeps the exited process (`rayctl list workers` lists it), as
	// Ray lists dead workers; it replaced the EXITED record, and the process was gone from
	// the list.
	eventually.True(t, 10*time.Second, "the exited process kept in the restart's record", func() bool {
		w, _ := get(t, s, gcs.JobWorkerKey("j5", head.ID()), &pb.JobWorker{})
		ex := w.GetExited()
		return w.GetState() != pb.JobWorker_EXITED && len(ex) >= 1 && ex[0].GetState() == pb.JobWorker_EXITED &&
			ex[0].GetExit() == "exit status 7" && ex[0].GetPid() != w.GetPid() && ex[0].GetPid() != 0 && len(ex[0].GetExited()) == 0
	})
}

// TestKeptExits: a replacing record keeps the last workerExitsKept exited processes.
func TestKeptExits(t *testing.T) {
	var w *pb.JobWorker = &pb.JobWorker{State: pb.JobWorker_EXITED, Pid: 1}
	for pid := int32(2); pid <= 9; pid++ {
		w = &pb.JobWorker{State: pb.JobWorker_EXITED, Pid: pid, Exited: keptExits(w)}
	}
	ex := keptExits(w)
	if len(ex) != workerExitsKept || ex[0].GetPid() != 9-workerExitsKept+1 || ex[len(ex)-1].GetPid() != 9 {
		t.Fatalf("kept %v, want the last %d (pids 5-9)", ex, workerExitsKept)
	}
	if got := keptExits(&pb.JobWorker{State: pb.JobWorker_RUNNING, Pid: 10, Exited: ex}); len(got) != len(ex) {
		t.Fatalf("a RUNNING record adds itself: %d", len(got))
	}
}

func TestStopEndsChildren(t *testing.T) {
	head := startAgent(t, Config{Head: true})
	s := head.Store()
	rec := t.TempDir()
	job(t, s, "j6", nil, "-record", rec, "-child")
	sub := "s1"
	put(t, s, gcs.SubmissionKey(sub), &pb.Submission{SubmissionId: sub, Argv: []string{helperPath, "-record", rec}}, 0)
	eventually.True(t, 10*time.Second, "worker and driver", func() bool { return len(records(t, rec)) == 2 })
	rs := records(t, rec)
	if err := head.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if !processGone(r.Pid) || (r.Child != 0 && !processGone(r.Child)) {
			t.Errorf("process %d (child %d) still runs after Stop", r.Pid, r.Child)
		}
	}
}

func TestSubmissionFailed(t *testing.T) {
	head := startAgent(t, Config{Head: true})
	s := head.Store()
	wd := t.TempDir()
	put(t, s, gcs.SubmissionKey("s2"), &pb.Submission{
		SubmissionId: "s2", Argv: []string{helperPath, "-print", "hello from the driver", "-exit-after", "0s", "-code", "3", "-record", wd},
		WorkingDir: wd, Env: []string{"HELPER_X=y"},
	}, 0)
	var sub *pb.Submission
	eventually.True(t, 10*time.Second, "FAILED", func() bool {
		sub, _ = get(t, s, gcs.SubmissionKey("s2"), &pb.Submission{})
		return sub.GetState() == pb.JobInfo_FAILED
	})
	if sub.GetExitCode() != 3 || sub.GetPid() == 0 || sub.GetStartUnixMs() == 0 || sub.GetEndUnixMs() == 0 ||
		!strings.Contains(sub.GetMessage(), "exit status 3") || sub.GetLogPath() == "" {
		t.Errorf("submission %v", sub)
	}
	var out strings.Builder
	end, err := ReadLog(context.Background(), s, "s2", &out, false)
	if err != nil || end == nil || !strings.Contains(out.String(), "hello from the driver") {
		t.Errorf("log %q, end %v, err %v", out.String(), end, err)
	}
	r := records(t, wd)[0]
	if r.Env["HELPER_X"] != "y" || r.Env[workerenv.Address] != head.Address() || r.Env[workerenv.Submission] != "s2" {
		t.Errorf("driver env %v", r.Env)
	}
	if _, ok := r.Env[workerenv.Mode]; ok {
		t.Errorf("driver in worker mode: %v", r.Env)
	}
	// PWD names the directory the driver runs in, not the one the agent started in.
	if r.Cwd != wd || r.Env["PWD"] != wd {
		t.Errorf("driver cwd %q, PWD %q, want both %q", r.Cwd, r.Env["PWD"], wd)
	}
}

func TestSubmissionStop(t *testing.T) {
	head := startAgent(t, Config{Head: true})
	s := head.Store()
	put(t, s, gcs.SubmissionKey("s3"), &pb.Submission{SubmissionId: "s3", Argv: []string{helperPath, "-print", "started"}}, 0)

	// Follow the log from before the end, as rayctl job submit does.
	var out strings.Builder
	followed := make(chan error, 1)
	go func() {
		_, err := ReadLog(context.Background(), s, "s3", &out, true)
		followed <- err
	}()
	var pid int32
	eventually.True(t, 10*time.Second, "RUNNING with a pid", func() bool {
		sub, _ := get(t, s, gcs.SubmissionKey("s3"), &pb.Submission{})
		pid = sub.GetPid()
		return sub.GetState() == pb.JobInfo_RUNNING && pid != 0
	})
	// Stopped once it printed (a stop before that, on a loaded machine, would leave
	// nothing for the follower to see).
	eventually.True(t, 10*time.Second, "the driver's output in its log", func() bool {
		var sofar strings.Builder
		_, err := ReadLog(context.Background(), s, "s3", &sofar, false)
		return err == nil && strings.Contains(sofar.String(), "started")
	})
	// The job the driver registered (as ray.Init does, with the submission's ID).
	endJob := job(t, s, "j3", func(j *pb.JobInfo) { j.SubmissionId = "s3" })
	defer endJob()
	ctx := context.Background()
	if _, err := UpdateSubmission(ctx, s, "s3", func(sub *pb.Submission) bool { sub.StopRequested = true; return true }); err != nil {
		t.Fatal(err)
	}
	var stopped *pb.Submission
	eventually.True(t, 10*time.Second, "STOPPED", func() bool {
		stopped, _ = get(t, s, gcs.SubmissionKey("s3"), &pb.Submission{})
		return stopped.GetState() == pb.JobInfo_STOPPED
	})
	// One truth: once the submission says STOPPED, its job says so too, with its message.
	if j, _ := get(t, s, gcs.JobKey("j3"), &pb.JobInfo{}); j.GetState() != pb.JobInfo_STOPPED ||
		j.GetMessage() != stopped.GetMessage() || !strings.Contains(j.GetMessage(), "stopped by request") || j.GetEndUnixMs() == 0 {
		t.Errorf("the submission is STOPPED (%q) and its job %v", stopped.GetMessage(), j)
	}
	if !processGone(int(pid)) {
		t.Error("driver still runs")
	}
	select {
	case err := <-followed:
		if err != nil || !strings.Contains(out.String(), "started") {
			t.Errorf("follow: %q, %v", out.String(), err)
		}
	case <-time.After(5 * time.Second):
		t.Error("follow did not end")
	}

	// A submission stopped before it starts never runs.
	put(t, s, gcs.SubmissionKey("s4"), &pb.Submission{SubmissionId: "s4", Argv: []string{helperPath}, StopRequested: true}, 0)
	eventually.True(t, 10*time.Second, "s4 STOPPED", func() bool {
		sub, _ := get(t, s, gcs.SubmissionKey("s4"), &pb.Submission{})
		return sub.GetState() == pb.JobInfo_STOPPED && sub.GetPid() == 0
	})
}

// TestOrphanedJobOfASubmission: a job whose driver is gone takes the outcome of the
// submission that ran it when that has one, not FAILED "driver process exited without
// calling ray.Shutdown".
func TestOrphanedJobOfASubmission(t *testing.T) {
	head := startAgent(t, Config{Head: true})
	s := head.Store()
	const msg = "stopped by request (driver killed by signal terminated)"
	put(t, s, gcs.SubmissionKey("s5"), &pb.Submission{SubmissionId: "s5", Argv: []string{helperPath}, State: pb.JobInfo_STOPPED, Message: msg}, 0)
	endJob := job(t, s, "j5", func(j *pb.JobInfo) { j.SubmissionId = "s5" })
	eventually.True(t, 10*time.Second, "the submission linked to its job", func() bool {
		sub, _ := get(t, s, gcs.SubmissionKey("s5"), &pb.Submission{})
		return sub.GetJobId() == "j5"
	})
	endJob() // the driver's jobalive key goes, as when its lease lapses
	eventually.True(t, 10*time.Second, "the job ended", func() bool {
		j, _ := get(t, s, gcs.JobKey("j5"), &pb.JobInfo{})
		return IsTerminal(j.GetState())
	})
	if j, _ := get(t, s, gcs.JobKey("j5"), &pb.JobInfo{}); j.GetState() != pb.JobInfo_STOPPED || j.GetMessage() != msg {
		t.Errorf("job of a STOPPED submission: %v", j)
	}
}

func TestOrphanedSubmissionFails(t *testing.T) {
	gcsHead := startAgent(t, Config{Head: true})
	s := gcsHead.Store()
	// Its runner's first list is over once it started a submission put after it: s9, put
	// later, is not its orphan.
	put(t, s, gcs.SubmissionKey("s8"), &pb.Submission{SubmissionId: "s8", Argv: []string{helperPath}}, 0)
	eventually.True(t, 10*time.Second, "the runner to start s8", func() bool {
		sub, _ := get(t, s, gcs.SubmissionKey("s8"), &pb.Submission{})
		return sub.GetState() != pb.JobInfo_PENDING
	})
	put(t, s, gcs.SubmissionKey("s9"), &pb.Submission{SubmissionId: "s9", Argv: []string{helperPath}, State: pb.JobInfo_RUNNING, Pid: 1}, 0)
	// While another head lives, a new head leaves its submissions alone.
	second := startAgent(t, Config{Head: true, GCSEndpoints: strings.Split(gcsHead.Address(), ","), GCSFiles: gcsHead.CredentialFiles()})
	time.Sleep(300 * time.Millisecond) // a negative check: a bounded window in which s9 must not fail
	if sub, _ := get(t, s, gcs.SubmissionKey("s9"), &pb.Submission{}); sub.GetState() != pb.JobInfo_RUNNING {
		t.Fatalf("failed while its head may live: %v", sub)
	}
	if err := second.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Once no other head is alive (the first one's alive key is gone), they fail.
	if _, err := s.Delete(context.Background(), gcs.AgentAliveKey(gcsHead.ID())); err != nil {
		t.Fatal(err)
	}
	startAgent(t, Config{Head: true, GCSEndpoints: strings.Split(gcsHead.Address(), ","), GCSFiles: gcsHead.CredentialFiles()})
	eventually.True(t, 10*time.Second, "s9 FAILED", func() bool {
		sub, _ := get(t, s, gcs.SubmissionKey("s9"), &pb.Submission{})
		return sub.GetState() == pb.JobInfo_FAILED && strings.Contains(sub.GetMessage(), "head agent")
	})
}

// TestOrphanedSubmissionFailsOnceTheOtherHeadIsGone: a head that starts while another
// head looks alive leaves the RUNNING submissions alone, and fails them once no other head
// is alive. It used to look once, when it started: a head whose alive key outlived it
// (killed: until its lease expires, AliveTTL; or its Stop's revocation, bounded by 2 s,
// timed out: the likely cause of TestOrphanedSubmissionFails's failures on a loaded
// machine, never reproduced) left them RUNNING for ever.
func TestOrphanedSubmissionFailsOnceTheOtherHeadIsGone(t *testing.T) {
	gcsHead := startAgent(t, Config{Head: true})
	s := gcsHead.Store()
	select { // its first list is over: s10, put later, is not its orphan
	case <-gcsHead.subs.firstList:
	case <-time.After(10 * time.Second):
		t.Fatal("the head's submission runner did not list the table")
	}
	put(t, s, gcs.SubmissionKey("s10"), &pb.Submission{SubmissionId: "s10", Argv: []string{helperPath}, State: pb.JobInfo_RUNNING, Pid: 1}, 0)
	// A head that stopped while its alive key lives on.
	gone := startAgent(t, Config{Head: true, GCSEndpoints: strings.Split(gcsHead.Address(), ","), GCSFiles: gcsHead.CredentialFiles()})
	if err := gone.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	put(t, s, gcs.AgentAliveKey(gone.ID()), &pb.AgentInfo{}, 0)
	if _, err := s.Delete(context.Background(), gcs.AgentAliveKey(gcsHead.ID())); err != nil {
		t.Fatal(err)
	}
	third := startAgent(t, Config{Head: true, GCSEndpoints: strings.Split(gcsHead.Address(), ","), GCSFiles: gcsHead.CredentialFiles()})
	select {
	case <-third.subs.firstList:
	case <-time.After(10 * time.Second):
		t.Fatal("the third head's submission runner did not list the table")
	}
	if sub, _ := get(t, s, gcs.SubmissionKey("s10"), &pb.Submission{}); sub.GetState() != pb.JobInfo_RUNNING {
		t.Fatalf("failed while another head looked alive: %v", sub)
	}
	// The stopped head's alive key goes (its lease expired): no other head is alive now.
	if _, err := s.Delete(context.Background(), gcs.AgentAliveKey(gone.ID())); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 10*time.Second, "s10 FAILED", func() bool {
		sub, _ := get(t, s, gcs.SubmissionKey("s10"), &pb.Submission{})
		return sub.GetState() == pb.JobInfo_FAILED && strings.Contains(sub.GetMessage(), "head agent")
	})
}

// TestJobSurvivesItsDriverRegisteringAgain: a driver whose lease expired (a GCS outage
// longer than its TTL) takes a new one and writes its jobalive key again within seconds
// (node.keepLease); the head does not fail the job meanwhile, and the job's worker process
// (with its actors and objects) is not stopped. A key that stays gone fails it
// (TestWorkerProcess).
func TestJobSurvivesItsDriverRegisteringAgain(t *testing.T) {
	head := startAgent(t, Config{Head: true})
	s := head.Store()
	rec := t.TempDir()
	expire := job(t, s, "j9", nil, "-record", rec)
	eventually.True(t, 10*time.Second, "the job's worker process (the head has read the tables)", func() bool { return len(records(t, rec)) > 0 })
	worker := records(t, rec)[0].Pid
	expire()
	// Not a wait for an event: the jobalive key stays gone for a second, as while a real
	// driver notices its lease expired and registers again (the gap the head must bear).
	time.Sleep(time.Second)
	lease, err := s.Grant(context.Background(), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, gcs.JobAliveKey("j9"), &pb.JobInfo{}, lease)
	// A negative check: past the grace the job must not have failed (a bounded sleep is
	// the honest tool for "does not happen").
	time.Sleep(reregisterGrace + 2*time.Second)
	if j, _ := get(t, s, gcs.JobKey("j9"), &pb.JobInfo{}); j.GetState() != pb.JobInfo_RUNNING {
		t.Fatalf("a job whose driver registered again within %v: %v %q; want RUNNING", reregisterGrace, j.GetState(), j.GetMessage())
	}
	if rs := records(t, rec); len(rs) != 1 || syscall.Kill(worker, 0) != nil {
		t.Fatalf("the job's worker process (pid %d) was stopped while its driver registered again: %d processes started, %v", worker, len(rs), syscall.Kill(worker, 0))
	}
}

// A job's worker process outlives the job while a detached actor of the job is not dead,
// and is restarted if it dies then; it ends when the last detached actor dies. The job
// record keeps the state its driver wrote (SUCCEEDED).
func TestWorkerKeptForDetachedActors(t *testing.T) {
	head := startAgent(t, Config{Head: true})
	s := head.Store()
	rec := t.TempDir()
	aid := "00112233445566778899aabbccddeeff"
	actor := &pb.ActorInfo{ActorId: []byte(aid), JobId: "j9", Detached: true, Name: "d", Phase: int32(lifecycle.Alive)}
	put(t, s, gcs.ActorKey(aid), actor, 0)
	// A non-detached actor of the job keeps nothing alive.
	put(t, s, gcs.ActorKey("ffeeddccbbaa99887766554433221100"), &pb.ActorInfo{JobId: "j9", Phase: int32(lifecycle.Alive)}, 0)
	kill := job(t, s, "j9", nil, "-record", rec)
	eventually.True(t, 10*time.Second, "j9's worker", func() bool { return len(records(t, rec)) == 1 })
	first := records(t, rec)[0]

	// The driver ends the job (SUCCEEDED, its alive key gone): the worker runs on.
	put(t, s, gcs.JobKey("j9"), &pb.JobInfo{JobId: "j9", State: pb.JobInfo_SUCCEEDED, Executable: helperPath, Sha256: helperSum,
		Goos: runtime.GOOS, Goarch: runtime.GOARCH, Args: []string{"-record", rec}, EndUnixMs: time.Now().UnixMilli()}, 0)
	kill()
	// A negative check: longer than the agent takes to stop an ended job's worker (a
	// tick), the worker must still run.
	time.Sleep(3 * stopGrace / 5)
	if processGone(first.Pid) {
		t.Fatal("the worker of a job with a live detached actor was stopped when the job ended")
	}
	if _, err := os.Stat(filepath.Join(rec, fmt.Sprintf("%d.term", first.Pid))); err == nil {
		t.Fatal("the worker of a job with a live detached actor got SIGTERM when the job ended")
	}
	// It dies: the agent starts it again.
	if err := syscall.Kill(first.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 10*time.Second, "the worker restarted", func() bool { return len(records(t, rec)) == 2 })
	var second record
	for _, r := range records(t, rec) {
		if r.Pid != first.Pid {
			second = r
		}
	}
	// The detached actor dies: the worker gets SIGTERM and its record says EXITED.
	actor.Phase = int32(lifecycle.Dead)
	put(t, s, gcs.ActorKey(aid), actor, 0)
	eventually.True(t, 10*time.Second, "the worker EXITED", func() bool {
		w, _ := get(t, s, gcs.JobWorkerKey("j9", head.ID()), &pb.JobWorker{})
		return w.GetState() == pb.JobWorker_EXITED && processGone(second.Pid)
	})
	if _, err := os.Stat(filepath.Join(rec, fmt.Sprintf("%d.term", second.Pid))); err != nil {
		t.Errorf("the worker got no SIGTERM after the last detached actor died: %v", err)
	}
	if j, _ := get(t, s, gcs.JobKey("j9"), &pb.JobInfo{}); j.GetState() != pb.JobInfo_SUCCEEDED {
		t.Errorf("job j9 is %v, want SUCCEEDED", j.GetState())
	}
}
