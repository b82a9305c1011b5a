package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// The session directory (--session-dir, default /tmp/ray-go) holds one directory per agent
// started on this machine, agent-<agentID>/:
//
//	agent.pid    the agent process's pid, written when it starts, removed when it stops
//	agent.json   agentFile, written once the agent is ready (what `rayctl start` waits for)
//	agent.err    agentError, written when the agent failed to start
//	logs/        agent.log (a background agent's output), worker-<job>.log, job-<id>.log
//	workers/     the directory of each worker process
//	gcs/         the embedded etcd's data (head only)
//	tls/         the agent's credentials: ca.crt, node.crt, node.key (0700, files 0600)
//	ca/          head only: the cluster CA (ca.crt, ca.key) and the join token (token)
const (
	pidFileName   = "agent.pid"
	readyFileName = "agent.json"
	errorFileName = "agent.err"
	agentDirPref  = "agent-"
)

// agentFile is the content of agent.json.
type agentFile struct {
	AgentID       string `json:"agent_id"`
	Pid           int    `json:"pid"`
	Address       string `json:"address"`
	Head          bool   `json:"head"`
	Dir           string `json:"dir"`
	StartedUnixMs int64  `json:"started_unix_ms"`
	// Security: Insecure for a cluster started with --insecure; else GCSCA, GCSCert and
	// GCSKey name the agent's credential files (rayctl on this machine uses them: its tls/
	// directory, or an external etcd's files), and a head's TokenFile its join token and
	// JoinAddress its join endpoint. Paths only: no secret is in agent.json.
	Insecure    bool   `json:"insecure,omitempty"`
	GCSCA       string `json:"gcs_ca,omitempty"`
	GCSCert     string `json:"gcs_cert,omitempty"`
	GCSKey      string `json:"gcs_key,omitempty"`
	TokenFile   string `json:"token_file,omitempty"`
	JoinAddress string `json:"join_address,omitempty"`
}

// agentError is the content of agent.err.
type agentError struct {
	Message string `json:"message"`
	Code    int    `json:"code"`
}

func agentDir(sessionDir, id string) string {
	return filepath.Join(sessionDir, agentDirPref+id)
}

// writeJSON writes v to path atomically (a reader never sees half a file).
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// localAgent is an agent directory of this machine's session dir.
type localAgent struct {
	id      string
	dir     string
	pidFile string
	pid     int
	live    bool       // the pid is a running rayctl agent for this directory
	info    *agentFile // nil until the agent was ready
}

// localAgents lists the agent directories of sessionDir that have a pid file.
func localAgents(sessionDir string) ([]localAgent, error) {
	files, err := filepath.Glob(filepath.Join(sessionDir, agentDirPref+"*", pidFileName))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []localAgent
	for _, f := range files {
		dir := filepath.Dir(f)
		la := localAgent{id: strings.TrimPrefix(filepath.Base(dir), agentDirPref), dir: dir, pidFile: f}
		b, err := os.ReadFile(f)
		if err == nil {
			la.pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		la.live = la.pid > 0 && isAgentProcess(la.pid, la.id)
		var info agentFile
		if readJSON(filepath.Join(dir, readyFileName), &info) == nil {
			la.info = &info
		}
		out = append(out, la)
	}
	return out, nil
}

// removeFiles removes the pid and ready files of an agent that is not running.
func (la localAgent) removeFiles() {
	_ = os.Remove(la.pidFile)
	_ = os.Remove(filepath.Join(la.dir, readyFileName))
}

// isAgentProcess reports whether pid is a live (not zombie) rayctl agent process for the
// agent directory id: /proc/<pid>/cmdline must be rayctl's `start`, and name the agent ID
// when it carries one. This keeps a recycled pid from ever being signalled.
func isAgentProcess(pid int, id string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return false // gone, or a zombie (whose cmdline is empty)
	}
	argv := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	if !strings.Contains(filepath.Base(argv[0]), "rayctl") {
		return false
	}
	start := false
	for i, a := range argv[1:] {
		if a == "start" {
			start = true
		}
		if a == "--agent-id" || a == "-agent-id" {
			if i+2 < len(argv) && argv[i+2] != id {
				return false
			}
		}
		if v, ok := strings.CutPrefix(a, "--agent-id="); ok && v != id {
			return false
		}
	}
	return start && !isZombie(pid)
}

func isZombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses (which may contain spaces).
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	return s[i+2] == 'Z' || s[i+2] == 'X'
}

// processGone reports whether pid no longer runs (or is a zombie).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	return isZombie(pid)
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
