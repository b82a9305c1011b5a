package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	ucli "github.com/urfave/cli/v2"
)

// stopWait is how long `rayctl stop` waits for each agent after SIGTERM before SIGKILL.
const stopWait = 10 * time.Second

func stopCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "stop",
		Usage: "stop the agents running on this machine (found through their pid files in the session dir)",
		Description: "Sends SIGTERM to each agent (joined agents first, then heads), waits up to 10 s for it " +
			"to stop its worker and driver processes, then sends SIGKILL. Exits with 5 when no agent runs.",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "force", Usage: "SIGKILL at once (children die with their agent, but records are not cleaned)", EnvVars: []string{"RAY_GO_FORCE"}},
			sessionDirFlag(),
		},
		Action: runStop,
	}
}

func runStop(c *ucli.Context) error {
	if c.NArg() > 0 {
		return exitf(ExitError, "stop takes no arguments (got %q)", c.Args().Slice())
	}
	dir := c.String("session-dir")
	agents, err := localAgents(dir)
	if err != nil {
		return exitf(ExitError, "read the session dir %s: %v", dir, err)
	}
	var heads, others []localAgent
	for _, la := range agents {
		switch {
		case !la.live:
			writeErr(c, "rayctl: removed the stale pid file %s (pid %d is not a running rayctl agent)", la.pidFile, la.pid)
			la.removeFiles()
		case la.info != nil && la.info.Head:
			heads = append(heads, la)
		default:
			others = append(others, la)
		}
	}
	if len(heads)+len(others) == 0 {
		if others := otherSessionDirs(dir); len(others) > 0 {
			return exitf(ExitNothingRunning, "no live agent under %s; agents run with another --session-dir: %s (rayctl stop --session-dir DIR)", dir, strings.Join(others, ", "))
		}
		return exitf(ExitNothingRunning, "no ray-go agent is running on this machine (no live agent under %s)", dir)
	}
	sig := syscall.SIGTERM
	if c.Bool("force") {
		sig = syscall.SIGKILL
	}
	// Joined agents first: they still reach the GCS to clean up their records.
	failed := 0
	for _, group := range [][]localAgent{others, heads} {
		var wg sync.WaitGroup
		results := make([]string, len(group))
		for i, la := range group {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = stopAgent(la, sig)
			}()
		}
		wg.Wait()
		for i, la := range group {
			if results[i] != "" {
				failed++
				writeErr(c, "rayctl: agent %s (pid %d): %s", la.id, la.pid, results[i])
				continue
			}
			role := "agent"
			if la.info != nil && la.info.Head {
				role = "head agent"
			}
			fmt.Fprintf(c.App.Writer, "Stopped %s %s (pid %d)\n", role, la.id, la.pid)
		}
	}
	if failed > 0 {
		return exitf(ExitError, "%d agent(s) could not be stopped", failed)
	}
	return nil
}

// stopAgent signals one agent and waits for it; "" means it is gone.
func stopAgent(la localAgent, sig syscall.Signal) string {
	if !isAgentProcess(la.pid, la.id) {
		la.removeFiles()
		return ""
	}
	if err := syscall.Kill(la.pid, sig); err != nil && err != syscall.ESRCH {
		return fmt.Sprintf("signal: %v", err)
	}
	if waitGone(la.pid, stopWait) {
		la.removeFiles()
		return ""
	}
	if sig != syscall.SIGKILL && isAgentProcess(la.pid, la.id) {
		_ = syscall.Kill(la.pid, syscall.SIGKILL)
		if waitGone(la.pid, 3*time.Second) {
			la.removeFiles()
			return ""
		}
	}
	return fmt.Sprintf("still running %v after %v", la.pid, stopWait)
}

func waitGone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if processGone(pid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// otherSessionDirs lists the session dirs, other than dir, of this machine's running agents
// (rayctl processes running `start ... --block`, from their command lines).
func otherSessionDirs(dir string) []string {
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	seen := map[string]bool{}
	var out []string
	for _, f := range cmdlines {
		b, err := os.ReadFile(f)
		if err != nil || len(b) == 0 {
			continue
		}
		argv := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if !strings.Contains(filepath.Base(argv[0]), "rayctl") || !slices.Contains(argv, "start") || !slices.Contains(argv, "--block") {
			continue
		}
		d := DefaultSessionDir
		for i, a := range argv {
			if v, ok := strings.CutPrefix(a, "--session-dir="); ok {
				d = v
			} else if a == "--session-dir" && i+1 < len(argv) {
				d = argv[i+1]
			}
		}
		if abs, err := filepath.Abs(d); err == nil && abs != dir && !seen[abs] {
			seen[abs] = true
			out = append(out, abs)
		}
	}
	slices.Sort(out)
	return out
}
