package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ray-go/ray/internal/base/identity"
	"github.com/ray-go/ray/internal/base/workerenv"
)

// The session directory (--session-dir, default /tmp/ray-go) holds one directory per agent
// started on this machine, agent-<agentID>/:
//
//	agent.pid    the agent process's pid, written when it starts, removed when it stops
//	agent.json   agentFile, written once the agent is ready (what `rayctl start` waits for)
//	identity.json agentIdentity, written once the agent is ready and kept when it stops:
//	             what lets a later `rayctl start` on this session dir bring it back
//	agent.err    agentError, written when the agent failed to start
//	logs/        agent.log (a background agent's output), worker-<job>.log, job-<id>.log
//	workers/     the directory of each worker process
//	gcs/         the embedded etcd's data (head only)
//	tls/         the agent's credentials: ca.crt, node.crt, node.key (0700, files 0600)
//	ca/          head only: the cluster CA (ca.crt, ca.key) and the join token (token)
const (
	pidFileName      = "agent.pid"
	readyFileName    = "agent.json"
	errorFileName    = "agent.err"
	identityFileName = "identity.json"
	agentDirPref     = "agent-"
)

// agentIdentity is the content of identity.json: which agent a directory is, and of which
// cluster. Cluster is "" for a head with its embedded GCS, else the GCS endpoints it used
// (a head on an external etcd) or joined (an agent), comma-separated.
type agentIdentity struct {
	AgentID string `json:"agent_id"`
	Head    bool   `json:"head"`
	Cluster string `json:"cluster"`
}

// previousAgent returns the ID of the agent of sessionDir that a `rayctl start` of the same
// role and cluster should bring back: one that ran here before and is not running now
// (its identity.json says so, and no live process holds its directory), the most recent if
// several. "" if there is none. An agent directory whose identity.json cannot be read or
// decoded (empty or truncated: what a crash or a full disk leaves) is an error: whether it
// is the agent to bring back cannot be told, and starting a new one instead would leave a
// head's cluster (its CA, join token and GCS data) behind without a word.
func previousAgent(sessionDir string, head bool, cluster string) (string, error) {
	files, _ := filepath.Glob(filepath.Join(sessionDir, agentDirPref+"*", identityFileName))
	running := map[string]bool{}
	if las, err := localAgents(sessionDir); err == nil {
		for _, la := range las {
			running[la.id] = la.live
		}
	}
	best, bestAt := "", time.Time{}
	for _, f := range files {
		dir := filepath.Dir(f)
		id := strings.TrimPrefix(filepath.Base(dir), agentDirPref)
		if running[id] {
			continue
		}
		b, err := readSessionFile(f)
		var who agentIdentity
		if err == nil {
			err = decodeJSONObject(identityFileName, b, &who)
		}
		if err != nil {
			return "", exitf(ExitError, "the identity of agent %s in %s is damaged (%v), so whether to bring that agent back cannot be told: "+
				"if it is the agent to start again (for a head: its cluster's CA, join token and GCS data are there), restore %s "+
				`(it holds {"agent_id": %q, "head": true or false, "cluster": "" for a head with its own GCS, else the GCS endpoints}); `+
				"to start a new agent instead, remove %s", id, dir, err, f, id, dir)
		}
		if who.AgentID != id || who.Head != head || who.Cluster != cluster {
			continue
		}
		st, err := os.Stat(f)
		if err != nil {
			continue
		}
		if best == "" || st.ModTime().After(bestAt) {
			best, bestAt = id, st.ModTime()
		}
	}
	return best, nil
}

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
	// MetricsAddress is the host:port of the agent's GET /metrics ("": none).
	MetricsAddress string `json:"metrics_address,omitempty"`
	// DashboardAddress is the host:port of a head's web dashboard ("": none).
	DashboardAddress string `json:"dashboard_address,omitempty"`
	// DashboardTLS: the dashboard speaks HTTPS (--dashboard-tls).
	DashboardTLS bool `json:"dashboard_tls,omitempty"`
	// SpillDir is the agent's own directory in --spill-dir, where its worker processes'
	// object stores spill ("": under their directories in Dir).
	SpillDir string `json:"spill_dir,omitempty"`
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

// The files of an agent directory are the agent's (0600 in a 0700 directory), but the
// session directory is shared (/tmp/ray-go by default) and rayctl acts on what they say:
// it signals the pid, connects to the address with the credentials named, prints the token
// file. So each is decoded and checked before it is used (fuzz targets in
// session_fuzz_test.go).

// maxPid is the largest pid Linux hands out (PID_MAX_LIMIT).
const maxPid = 1 << 22

// maxSessionFile bounds what rayctl reads of agent.json and agent.err (a few hundred
// bytes when the agent writes them).
const maxSessionFile = 64 << 10

// readSessionFile reads a small file of an agent directory: the current user's or root's,
// writable by nobody else, not a symbolic link (identity.OpenOwned).
func readSessionFile(path string) ([]byte, error) {
	f, _, err := identity.OpenOwned(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSessionFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxSessionFile {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxSessionFile)
	}
	return b, nil
}

// decodeJSONObject decodes b, which must be one JSON object, into v.
func decodeJSONObject(what string, b []byte, v any) error {
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("%s is not a JSON object", what)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// parsePidFile decodes agent.pid: a pid in decimal (1 to maxPid), white space around it.
func parsePidFile(b []byte) (int, error) {
	s := strings.TrimSpace(string(b))
	pid, err := strconv.Atoi(s)
	if err != nil || pid <= 0 || pid > maxPid {
		return 0, fmt.Errorf("the pid file holds %.20q, not a pid between 1 and %d", s, maxPid)
	}
	return pid, nil
}

// decodeAgentFile decodes the agent.json of agent id. It must name that agent, a pid (as
// parsePidFile), a cluster address, and for a secure cluster the three credential files as
// absolute paths; a token file must be an absolute path, a join address host:port.
func decodeAgentFile(id string, b []byte) (*agentFile, error) {
	var f agentFile
	if err := decodeJSONObject(readyFileName, b, &f); err != nil {
		return nil, err
	}
	absOrEmpty := func(p string) bool { return p == "" || filepath.IsAbs(p) }
	switch {
	case f.AgentID != id:
		return nil, fmt.Errorf("%s of agent %s names agent %q", readyFileName, id, f.AgentID)
	case f.Pid <= 0 || f.Pid > maxPid:
		return nil, fmt.Errorf("%s of agent %s has the pid %d", readyFileName, id, f.Pid)
	case len(workerenv.SplitAddress(f.Address)) == 0:
		return nil, fmt.Errorf("%s of agent %s has no cluster address", readyFileName, id)
	case !absOrEmpty(f.GCSCA) || !absOrEmpty(f.GCSCert) || !absOrEmpty(f.GCSKey) || !absOrEmpty(f.TokenFile):
		return nil, fmt.Errorf("%s of agent %s names a credential file by a relative path", readyFileName, id)
	case (f.GCSCA == "") != (f.GCSKey == "") || (f.GCSCert == "") != (f.GCSKey == ""):
		return nil, fmt.Errorf("%s of agent %s names some of the credential files (CA, certificate, key) but not all", readyFileName, id)
	}
	if f.JoinAddress != "" {
		if _, _, err := net.SplitHostPort(f.JoinAddress); err != nil {
			return nil, fmt.Errorf("%s of agent %s has the join address %q: %w", readyFileName, id, f.JoinAddress, err)
		}
	}
	return &f, nil
}

// decodeAgentError decodes agent.err: a message and an exit code of rayctl's (1 to 125).
func decodeAgentError(b []byte) (*agentError, error) {
	var e agentError
	if err := decodeJSONObject(errorFileName, b, &e); err != nil {
		return nil, err
	}
	if e.Code < 1 || e.Code > 125 {
		return nil, fmt.Errorf("%s has the exit code %d (want 1 to 125)", errorFileName, e.Code)
	}
	if strings.TrimSpace(e.Message) == "" {
		return nil, fmt.Errorf("%s has no message", errorFileName)
	}
	return &e, nil
}

// readAgentFile reads and decodes the agent.json in dir of agent id.
func readAgentFile(dir, id string) (*agentFile, error) {
	b, err := readSessionFile(filepath.Join(dir, readyFileName))
	if err != nil {
		return nil, err
	}
	return decodeAgentFile(id, b)
}

// readAgentError reads and decodes the agent.err in dir.
func readAgentError(dir string) (*agentError, error) {
	b, err := readSessionFile(filepath.Join(dir, errorFileName))
	if err != nil {
		return nil, err
	}
	return decodeAgentError(b)
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
// The session directory and each agent directory must be the current user's or root's and
// writable by nobody else (checkSessionDir): rayctl trusts the address and credentials it
// finds there, and another user's directory could point it at their cluster.
func localAgents(sessionDir string) ([]localAgent, error) {
	if _, err := os.Lstat(sessionDir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err := checkSessionDir(sessionDir, false); err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(sessionDir, agentDirPref+"*", pidFileName))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []localAgent
	for _, f := range files {
		dir := filepath.Dir(f)
		if err := checkSessionDir(dir, false); err != nil {
			return nil, err
		}
		la := localAgent{id: strings.TrimPrefix(filepath.Base(dir), agentDirPref), dir: dir, pidFile: f}
		if b, err := readSessionFile(f); err == nil {
			la.pid, _ = parsePidFile(b)
		}
		la.live = la.pid > 0 && isAgentProcess(la.pid, la.id)
		if info, err := readAgentFile(dir, la.id); err == nil {
			la.info = info
		}
		out = append(out, la)
	}
	return out, nil
}

// checkSessionDir refuses a session or agent directory that another user may have made or
// may write in (identity.CheckOwnedDir; strict: it must be the current user's, not root's
// either, as for the one an agent starts in). Its error says what is wrong and what to do.
func checkSessionDir(dir string, strict bool) error {
	err := identity.CheckOwnedDir(dir, strict)
	if errors.Is(err, identity.ErrNotOwned) {
		return exitf(ExitError, "refusing the session dir %s: %v. Its files (a head's join token, an agent's address and credentials) "+
			"must be yours alone; pass another --session-dir, or fix it (chown/chmod 700) if you made it", dir, err)
	}
	return err
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
