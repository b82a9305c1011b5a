package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ray-go/ray/benchmarks/chaos/report"

	"github.com/ray-go/ray/internal/base/netx"
)

// Config is one run of the suite.
type Config struct {
	Rayctl, Driver string // prebuilt binaries; built into a temp dir when empty
	Nodes          int    // node agents (the head is one of them), each one node of the job
	CPUs           int    // --num-cpus of each agent
	ObjectStore    string // --object-store-memory of each agent
	Rounds         int    // killed rounds
	RefRounds      int    // fault-free reference rounds (0: none)
	Seed           int64
	RoundTimeout   time.Duration
	Settle         time.Duration // the driver's -settle (see the README)
	Keep           bool          // keep the session dir (it is kept anyway when the run fails)
	// Insecure starts the cluster with --insecure (no TLS, no token): the baseline of
	// what security costs. By default the agents join with the head's token (a token file,
	// as a user would pass it) and the driver gets it through RAY_GO_TOKEN_FILE.
	Insecure bool
}

// Summary is the suite's result (printed, and written as JSON with -json).
type Summary struct {
	Seed        int64  `json:"seed"`
	Nodes       int    `json:"nodes"`
	Rounds      int    `json:"rounds"`       // killed-run rounds completed (warm-up excluded)
	Killed      int    `json:"killed"`       // rounds in which a node was killed
	KillSkipped int    `json:"kill_skipped"` // rounds whose results all came before the kill time
	Results     int    `json:"results"`      // results checked in the killed run
	Completed   int    `json:"completed"`
	Wrong       int    `json:"wrong"`
	Errors      int    `json:"errors"`
	Hangs       int    `json:"hangs"`
	Settle      string `json:"settle,omitempty"`

	// Recovery: kill -> completion of the last result outstanding at the kill, over the
	// killed rounds that had an outstanding result.
	RecoveryMedianMS float64 `json:"recovery_median_ms"`
	RecoveryP90MS    float64 `json:"recovery_p90_ms"`
	RecoveryMaxMS    float64 `json:"recovery_max_ms"`
	// Rejoin: kill -> the job has its node count back (the agent restarted the worker).
	RejoinMedianMS float64 `json:"rejoin_median_ms"`
	RejoinMaxMS    float64 `json:"rejoin_max_ms"`

	TasksRetried         int64 `json:"tasks_retried"`         // the driver's ray.Stats, killed run
	ObjectsReconstructed int64 `json:"objects_reconstructed"` // idem

	RefRounds      int      `json:"reference_rounds"`
	RefMedianMS    float64  `json:"reference_median_round_ms"`
	KilledMedianMS float64  `json:"killed_median_round_ms"`
	Overhead       float64  `json:"overhead"` // KilledMedianMS / RefMedianMS
	RefWrong       int      `json:"reference_wrong"`
	RefErrors      int      `json:"reference_errors"`
	WarmupMS       float64  `json:"warmup_ms"`
	ElapsedSeconds float64  `json:"elapsed_seconds"`
	Leaked         []string `json:"leaked,omitempty"`
	Failures       []string `json:"failures,omitempty"`
	SessionDir     string   `json:"session_dir,omitempty"` // kept for its logs
	PerRound       []Round  `json:"per_round,omitempty"`
}

// Round is a driver's round line.
type Round = report.Round

// driverSummary is the driver's last line.
type driverSummary struct {
	Type     string  `json:"type"`
	Rounds   int     `json:"rounds"`
	WarmupMS float64 `json:"warmup_ms"`
	Fatal    string  `json:"fatal,omitempty"`
}

// driverRun is what one driver run gave.
type driverRun struct {
	rounds  []Round
	summary *driverSummary
	exit    int
	log     string // its stderr file
}

// Run runs the suite: it builds the binaries (unless given), starts the cluster, runs the
// fault-free reference and the killed run, stops the cluster and checks that no process
// it started is left. The error is about the suite itself (build, start); what the runs
// found is in the summary's Failures.
func Run(ctx context.Context, cfg Config, out io.Writer) (sum *Summary, err error) {
	start := time.Now()
	sum = &Summary{Seed: cfg.Seed, Nodes: cfg.Nodes, RefRounds: cfg.RefRounds}
	if cfg.Settle > 0 {
		sum.Settle = cfg.Settle.String()
	}
	if cfg.Nodes < 2 {
		return sum, errors.New("-nodes: want at least 2 (the suite never kills the last node)")
	}
	if cfg.Rayctl == "" || cfg.Driver == "" {
		bin, err := os.MkdirTemp("", "ray-go-chaos-bin-")
		if err != nil {
			return sum, err
		}
		defer os.RemoveAll(bin)
		if cfg.Rayctl == "" {
			cfg.Rayctl = filepath.Join(bin, "rayctl")
			if err := build(ctx, cfg.Rayctl, "github.com/ray-go/ray/cli/rayctl"); err != nil {
				return sum, err
			}
		}
		if cfg.Driver == "" {
			cfg.Driver = filepath.Join(bin, "driver")
			if err := build(ctx, cfg.Driver, "github.com/ray-go/ray/benchmarks/chaos/driver"); err != nil {
				return sum, err
			}
		}
	}
	for _, p := range []*string{&cfg.Rayctl, &cfg.Driver} {
		if *p, err = filepath.Abs(*p); err != nil {
			return sum, err
		}
	}
	bins := []string{cfg.Rayctl, cfg.Driver}
	if left := ourProcesses(bins); len(left) > 0 {
		return sum, fmt.Errorf("processes of these binaries already run (stop them first): %v", left)
	}

	sess, err := os.MkdirTemp("", "ray-go-chaos-session-")
	if err != nil {
		return sum, err
	}
	defer func() {
		// Stop the cluster whatever happened, then check that nothing is left.
		sum.Leaked = stopCluster(cfg.Rayctl, sess, bins, out)
		for _, p := range sum.Leaked {
			sum.Failures = append(sum.Failures, "process left behind: "+p)
		}
		sum.ElapsedSeconds = time.Since(start).Seconds()
		if cfg.Keep || len(sum.Failures) > 0 || err != nil {
			sum.SessionDir = sess
			fmt.Fprintf(out, "session dir (agent, worker and driver logs) kept: %s\n", sess)
		} else {
			_ = os.RemoveAll(sess)
		}
	}()

	port, err := freePort()
	if err != nil {
		return sum, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	tokenFile := filepath.Join(sess, "join-token")
	var driverEnv []string
	if cfg.Insecure {
		driverEnv = []string{"RAY_GO_INSECURE=1"}
	} else {
		driverEnv = []string{"RAY_GO_TOKEN_FILE=" + tokenFile}
	}
	for i := range cfg.Nodes {
		args := []string{"start", "--session-dir", sess, "--num-cpus", strconv.Itoa(cfg.CPUs), "--object-store-memory", cfg.ObjectStore}
		switch {
		case i == 0:
			args = append(args, "--head", "--port", strconv.Itoa(port))
		case cfg.Insecure:
			args = append(args, "--address", addr)
		default:
			args = append(args, "--address", addr, "--token-file", tokenFile)
		}
		if cfg.Insecure {
			args = append(args, "--insecure")
		}
		if o, code, err := runCmd(ctx, 90*time.Second, cfg.Rayctl, args...); err != nil || code != 0 {
			return sum, fmt.Errorf("rayctl %s: exit %d, %v\n%s", strings.Join(args, " "), code, err, o)
		}
		if i == 0 && !cfg.Insecure {
			// The head's token, kept in a private file as an operator would.
			o, code, err := runCmd(ctx, 30*time.Second, cfg.Rayctl, "token", "show", "--session-dir", sess)
			if err != nil || code != 0 {
				return sum, fmt.Errorf("rayctl token show: exit %d, %v\n%s", code, err, o)
			}
			if err := os.WriteFile(tokenFile, []byte(o), 0o600); err != nil {
				return sum, err
			}
		}
	}
	security := "mutual TLS, agents and driver joined with the token"
	if cfg.Insecure {
		security = "--insecure"
	}
	fmt.Fprintf(out, "cluster: %d agents on %s (each --num-cpus %d --object-store-memory %s; %s), session dir %s\n",
		cfg.Nodes, addr, cfg.CPUs, cfg.ObjectStore, security, sess)

	// The bound of a whole driver run: every round at its timeout, every rejoin at the
	// restart window, plus start-up.
	bound := func(rounds int) time.Duration {
		return time.Duration(rounds+1)*(cfg.RoundTimeout+90*time.Second+cfg.Settle) + 2*time.Minute
	}
	common := []string{"-nodes", strconv.Itoa(cfg.Nodes), "-seed", strconv.FormatInt(cfg.Seed, 10), "-round-timeout", cfg.RoundTimeout.String(), "-json"}
	var ref *driverRun
	if cfg.RefRounds > 0 {
		fmt.Fprintf(out, "reference run (no kills): %d rounds\n", cfg.RefRounds)
		ref, err = runDriver(ctx, bound(cfg.RefRounds), cfg.Driver, addr, driverEnv, filepath.Join(sess, "driver-reference.log"), out,
			append([]string{"-kill=false", "-rounds", strconv.Itoa(cfg.RefRounds)}, common...))
		if err != nil {
			return sum, err
		}
	}
	fmt.Fprintf(out, "killed run: %d rounds, one worker process SIGKILLed per round\n", cfg.Rounds)
	killed, err := runDriver(ctx, bound(cfg.Rounds), cfg.Driver, addr, driverEnv, filepath.Join(sess, "driver-killed.log"), out,
		append([]string{"-kill=true", "-rounds", strconv.Itoa(cfg.Rounds), "-settle", cfg.Settle.String()}, common...))
	if err != nil {
		return sum, err
	}
	summarize(sum, cfg, ref, killed)
	return sum, nil
}

// summarize fills the summary from the runs and lists what failed.
func summarize(sum *Summary, cfg Config, ref, killed *driverRun) {
	fail := func(format string, a ...any) { sum.Failures = append(sum.Failures, fmt.Sprintf(format, a...)) }
	var recovery, rejoin, killedDur, refDur []float64
	for _, r := range killed.rounds {
		if r.Warmup {
			sum.WarmupMS = r.DurationMS
		} else {
			sum.Rounds++
			sum.PerRound = append(sum.PerRound, r)
		}
		sum.Results += r.Results
		sum.Completed += r.Completed
		sum.Wrong += r.Wrong
		sum.Errors += len(r.Errors)
		sum.TasksRetried += r.TasksRetried
		sum.ObjectsReconstructed += r.ObjectsReconstructed
		if r.Hang {
			sum.Hangs++
			fail("round %d hung (over %v)", r.Round, cfg.RoundTimeout)
		}
		if r.Completed != r.Results {
			fail("round %d: %d of %d results completed", r.Round, r.Completed, r.Results)
		}
		for _, w := range r.WrongResults {
			fail("round %d: WRONG %s", r.Round, w)
		}
		for _, e := range r.Errors {
			fail("round %d: %s", r.Round, e)
		}
		if r.KillSkipped != "" {
			sum.KillSkipped++
		}
		if r.Killed {
			sum.Killed++
			killedDur = append(killedDur, r.DurationMS)
			if r.OutstandingAtKill > 0 {
				recovery = append(recovery, r.RecoveryMS)
			}
			if r.RejoinMS > 0 {
				rejoin = append(rejoin, r.RejoinMS)
			}
		}
	}
	if killed.summary == nil {
		fail("the killed run's driver gave no summary (exit %d; see %s)", killed.exit, killed.log)
	} else if killed.summary.Fatal != "" {
		fail("the killed run stopped early: %s", killed.summary.Fatal)
	}
	if killed.exit != 0 && len(sum.Failures) == 0 {
		fail("the killed run's driver exited with %d (see %s)", killed.exit, killed.log)
	}
	if sum.Rounds != cfg.Rounds {
		fail("the killed run completed %d of %d rounds", sum.Rounds, cfg.Rounds)
	}
	if ref != nil {
		for _, r := range ref.rounds {
			if r.Warmup {
				continue
			}
			refDur = append(refDur, r.DurationMS)
			sum.RefWrong += r.Wrong
			sum.RefErrors += len(r.Errors)
			if r.Wrong > 0 || len(r.Errors) > 0 || r.Hang || r.Completed != r.Results {
				fail("reference round %d: %d of %d completed, %d wrong, errors %q, hang %v", r.Round, r.Completed, r.Results, r.Wrong, r.Errors, r.Hang)
			}
		}
		if ref.exit != 0 && len(refDur) == cfg.RefRounds {
			fail("the reference run's driver exited with %d (see %s)", ref.exit, ref.log)
		}
		if len(refDur) != cfg.RefRounds {
			fail("the reference run completed %d of %d rounds (see %s)", len(refDur), cfg.RefRounds, ref.log)
		}
	}
	sum.RecoveryMedianMS, sum.RecoveryP90MS, sum.RecoveryMaxMS = quantile(recovery, 0.5), quantile(recovery, 0.9), quantile(recovery, 1)
	sum.RejoinMedianMS, sum.RejoinMaxMS = quantile(rejoin, 0.5), quantile(rejoin, 1)
	sum.KilledMedianMS, sum.RefMedianMS = quantile(killedDur, 0.5), quantile(refDur, 0.5)
	if sum.RefMedianMS > 0 {
		sum.Overhead = sum.KilledMedianMS / sum.RefMedianMS
	}
}

// quantile is the nearest-rank q-quantile of xs (0 for none).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(q*float64(len(s))+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

// build builds pkg into bin (without -race, whatever the caller runs with).
func build(ctx context.Context, bin, pkg string) error {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, "go", "build", "-o", bin, pkg)
	if o, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, o)
	}
	return nil
}

// freePort is a port for the head (its GCS port; the join endpoint takes the next one),
// outside the ephemeral range (netx.FreePorts).
func freePort() (int, error) { return netx.FreePorts("127.0.0.1", 2) }

// runCmd runs a command with a timeout and returns its combined output and exit code.
func runCmd(ctx context.Context, timeout time.Duration, bin string, args ...string) (string, int, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, bin, args...)
	cmd.WaitDelay = 5 * time.Second
	o, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(o), 0, nil
	case cctx.Err() != nil:
		return string(o), -1, fmt.Errorf("did not finish within %v", timeout)
	case errors.As(err, &ee):
		return string(o), ee.ExitCode(), nil
	}
	return string(o), -1, err
}

// runDriver runs the driver against addr, streaming its round lines to out, with its stderr
// in logPath. A driver that outlives timeout is killed (its rounds so far are kept).
func runDriver(ctx context.Context, timeout time.Duration, bin, addr string, env []string, logPath string, out io.Writer, args []string) (*driverRun, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, bin, args...)
	cmd.Env = append(append(os.Environ(), "RAY_ADDRESS="+addr), env...)
	cmd.Stderr = logf
	cmd.WaitDelay = 10 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(logf, "$ RAY_ADDRESS=%s %s %s %s\n", addr, strings.Join(env, " "), bin, strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	run := &driverRun{log: logPath}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var kind struct{ Type string }
		if !bytes.HasPrefix(line, []byte("{")) || json.Unmarshal(line, &kind) != nil {
			fmt.Fprintf(logf, "stdout: %s\n", line)
			continue
		}
		switch kind.Type {
		case "round":
			var r Round
			if err := json.Unmarshal(line, &r); err == nil {
				run.rounds = append(run.rounds, r)
				fmt.Fprintln(out, roundLine(r))
			}
		case "summary":
			var s driverSummary
			if err := json.Unmarshal(line, &s); err == nil {
				run.summary = &s
			}
		}
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	switch {
	case cctx.Err() != nil && ctx.Err() == nil:
		run.exit = -1
		fmt.Fprintf(out, "the driver did not finish within %v: killed\n", timeout)
	case ctx.Err() != nil:
		return run, ctx.Err()
	case errors.As(err, &ee):
		run.exit = ee.ExitCode()
	case err != nil:
		return run, err
	}
	return run, nil
}

// roundLine is the human line of a round.
func roundLine(r Round) string {
	var b strings.Builder
	name := "round " + strconv.Itoa(r.Round)
	if r.Warmup {
		name = "warm-up"
	}
	fmt.Fprintf(&b, "  %-9s %6.0f ms  %2d/%d ok", name, r.DurationMS, r.Completed-r.Wrong, r.Results)
	if r.Wrong > 0 {
		fmt.Fprintf(&b, ", %d WRONG", r.Wrong)
	}
	switch {
	case r.Killed:
		fmt.Fprintf(&b, "  kill %.8s @%4.0f ms: %2d outstanding (chains %d, actor %d, nested %d), recovery %5.0f ms (chains %.0f, actor %.0f, nested %.0f), rejoin %5.0f ms",
			r.Victim, r.KillAtMS, r.OutstandingAtKill, r.OutstandingChains, r.OutstandingActor, r.OutstandingNested, r.RecoveryMS,
			r.RecoveryChainMS, r.RecoveryActorMS, r.RecoveryNestedMS, r.RejoinMS)
	case r.KillSkipped != "":
		b.WriteString("  no kill: " + r.KillSkipped)
	}
	fmt.Fprintf(&b, "  retried %d, reconstructed %d", r.TasksRetried, r.ObjectsReconstructed)
	if r.Hang {
		b.WriteString("  HANG")
	}
	for _, w := range r.WrongResults {
		b.WriteString("\n      WRONG " + w)
	}
	for _, e := range r.Errors {
		b.WriteString("\n      ERROR " + e)
	}
	return b.String()
}

// stopCluster stops the agents (rayctl stop), waits for every process of bins to be gone,
// SIGKILLs what is left and returns it (the leaked processes).
func stopCluster(rayctl, sess string, bins []string, out io.Writer) []string {
	if o, code, err := runCmd(context.Background(), 2*time.Minute, rayctl, "stop", "--session-dir", sess); err != nil || (code != 0 && code != 5) {
		fmt.Fprintf(out, "rayctl stop: exit %d, %v\n%s", code, err, o)
	}
	deadline := time.Now().Add(15 * time.Second)
	for len(ourProcesses(bins)) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	left := ourProcesses(bins)
	for _, p := range left {
		if pid, err := strconv.Atoi(strings.Fields(p)[0]); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return left
}

// ourProcesses lists the live (not zombie) processes running one of bins, as cli/e2e does.
func ourProcesses(bins []string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil {
			continue
		}
		ours := false
		for _, b := range bins {
			ours = ours || exe == b
		}
		if !ours {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err == nil {
			if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				continue // a zombie has exited; only its parent's wait is missing
			}
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, fmt.Sprintf("%d %s", pid, bytes.TrimSpace(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))))
	}
	return out
}
