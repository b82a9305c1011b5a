package agent

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// proc is a child process the agent started, in its own process group (its pid is the
// group ID), so a signal reaches the children it starts too.
type proc struct {
	cmd  *exec.Cmd
	pid  int
	done chan struct{} // closed once the process was reaped
	// Set before done is closed:
	state *os.ProcessState
	err   error // from Wait (nil when it exited, whatever its status)
}

// startProc starts argv with env in dir (empty: the agent's), appending its stdout and
// stderr to logPath, in a new process group. The process gets SIGKILL if the agent's
// thread that started it dies (Pdeathsig), so a crashed agent leaves no children behind;
// Stop ends them cleanly. A goroutine reaps the process, kills what is left of its group
// and closes done; it needs no owner beyond the process itself (it ends when the process
// does, and every caller ends the process).
func startProc(argv []string, env []string, dir, logPath string) (*proc, error) {
	if len(argv) == 0 {
		return nil, errors.New("empty command")
	}
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = withPWD(env, dir)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, err
	}
	p := &proc{cmd: cmd, pid: cmd.Process.Pid, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		_ = f.Close()
		// What the process left running in its group goes with it.
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		p.state = cmd.ProcessState
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			p.err = err
		}
		close(p.done)
	}()
	return p, nil
}

// withPWD returns env with PWD set to dir (made absolute), replacing the PWD it had:
// os/exec sets PWD for Cmd.Dir only when Cmd.Env is nil, and env is an explicit copy of
// the agent's, whose PWD is the directory the agent started in. Programs and shells that
// trust PWD then see the directory they really run in. An empty dir (the agent's own)
// keeps env as it is.
func withPWD(env []string, dir string) []string {
	if dir == "" {
		return env
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "PWD=") {
			out = append(out, kv)
		}
	}
	return append(out, "PWD="+dir)
}

// signal sends sig to the process group (the process and its children). An exited
// group is not an error.
func (p *proc) signal(sig syscall.Signal) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.pid, sig)
}

// exited reports whether the process was reaped.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitCode is the exit status, or -1 when a signal ended the process (read after done).
func (p *proc) exitCode() int {
	if p.state == nil {
		return -1
	}
	return p.state.ExitCode()
}

// describe says how the process ended (read after done).
func (p *proc) describe() string {
	switch {
	case p.err != nil:
		return "wait failed: " + p.err.Error()
	case p.state == nil:
		return "ended"
	}
	if ws, ok := p.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "killed by signal " + ws.Signal().String()
	}
	return fmt.Sprintf("exit status %d", p.state.ExitCode())
}
