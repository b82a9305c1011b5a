package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"unicode"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/internal/base/ship"
)

// The decoders of the GCS records the agent acts on. Any client with the cluster's
// credentials can write these keys (a peer agent, a driver, rayctl), so a record is checked
// for what the agent then relies on: that it is the record of the key it was read from, that
// its state is one the code knows, and that the IDs it uses in file paths are one path
// element. Each has a fuzz target (records_fuzz_test.go).

// maxIDLen bounds the IDs of submissions, jobs and agents read from the GCS (the ones made
// by ray-go are 8 to 16 hex digits).
const maxIDLen = 128

// checkID says what is wrong with an ID that the agent uses in keys and in file names
// (logs/job-<id>.log, workers/<job>/), or returns nil: it must be non-empty, at most
// maxIDLen bytes, printable, without white space or '/', and not "." or "..".
func checkID(what, id string) error {
	switch {
	case id == "":
		return fmt.Errorf("agent: the %s is empty", what)
	case len(id) > maxIDLen:
		return fmt.Errorf("agent: the %s %.20q... is %d bytes long, more than %d", what, id, len(id), maxIDLen)
	case id == "." || id == "..":
		return fmt.Errorf("agent: the %s %q is not a file name", what, id)
	}
	for _, r := range id {
		if r == '/' || r == '\\' || r == unicode.ReplacementChar || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return fmt.Errorf("agent: the %s %q contains %q (want letters, digits and punctuation other than '/')", what, id, r)
		}
	}
	return nil
}

// checkJobState says what is wrong with a state of a job or submission.
func checkJobState(what string, s pb.JobInfo_State) error {
	if _, ok := pb.JobInfo_State_name[int32(s)]; !ok {
		return fmt.Errorf("agent: %s has the unknown state %d", what, int32(s))
	}
	return nil
}

// DecodeSubmission decodes the record of submissions/<id>. It must be the record of that
// submission, in a known state, with a non-negative pid. Whether its command can be run is
// checkCommand's (a record that cannot be run is marked FAILED with the reason).
func DecodeSubmission(id string, b []byte) (*pb.Submission, error) {
	if err := checkID("submission ID", id); err != nil {
		return nil, err
	}
	sub := &pb.Submission{}
	if err := proto.Unmarshal(b, sub); err != nil {
		return nil, fmt.Errorf("agent: decode submission %s: %w", id, err)
	}
	what := "submission " + id
	switch {
	case sub.GetSubmissionId() != id:
		return nil, fmt.Errorf("agent: the record of submission %s names submission %q", id, sub.GetSubmissionId())
	case sub.GetPid() < 0:
		return nil, fmt.Errorf("agent: %s has the negative pid %d", what, sub.GetPid())
	}
	if err := checkJobState(what, sub.GetState()); err != nil {
		return nil, err
	}
	return sub, nil
}

// checkCommand says why a submission's driver cannot be started, or returns nil: it needs
// an entrypoint whose program is an absolute path, an absolute working directory (or
// none: the agent's), and KEY=VALUE environment entries; no string may hold a NUL byte.
func checkCommand(sub *pb.Submission) error {
	argv := sub.GetArgv()
	if len(argv) == 0 {
		return fmt.Errorf("the submission has no entrypoint (its argv is empty)")
	}
	switch {
	case filepath.IsAbs(argv[0]):
	case sub.GetWorkingDirSha256() != "" && filepath.IsLocal(argv[0]) && sub.GetProgramSha256() == "":
		// A program inside the shipped working directory.
	case sub.GetWorkingDirSha256() != "":
		return fmt.Errorf("program %q is neither an absolute path nor a path inside the working directory", argv[0])
	default:
		return fmt.Errorf("program %q is not an absolute path", argv[0])
	}
	for what, sum := range map[string]string{"program": sub.GetProgramSha256(), "working directory": sub.GetWorkingDirSha256()} {
		if sum != "" && !ship.ValidSum(sum) {
			return fmt.Errorf("the %s's hash %q is not a sha256", what, sum)
		}
	}
	if n := sub.GetProgramBytes(); n < 0 || n > ship.MaxExecutableBytes {
		return fmt.Errorf("the program's size %d is outside 0..%d", n, int64(ship.MaxExecutableBytes))
	}
	if n := sub.GetWorkingDirBytes(); n < 0 || n > ship.MaxArchiveBytes {
		return fmt.Errorf("the working directory's archive size %d is outside 0..%d", n, ship.MaxArchiveBytes)
	}
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("argument %d %q contains a NUL byte", i, a)
		}
	}
	if wd := sub.GetWorkingDir(); wd != "" && (!filepath.IsAbs(wd) || strings.IndexByte(wd, 0) >= 0) {
		return fmt.Errorf("working directory %q is not an absolute path", wd)
	}
	for _, kv := range sub.GetEnv() {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" || strings.IndexByte(kv, 0) >= 0 {
			return fmt.Errorf("environment entry %q is not KEY=VALUE", kv)
		}
	}
	return nil
}

// DecodeJob decodes the record of jobs/<id>: the record of that job, in a known state, with
// a non-negative driver pid.
func DecodeJob(id string, b []byte) (*pb.JobInfo, error) {
	if err := checkID("job ID", id); err != nil {
		return nil, err
	}
	info := &pb.JobInfo{}
	if err := proto.Unmarshal(b, info); err != nil {
		return nil, fmt.Errorf("agent: decode job %s: %w", id, err)
	}
	what := "job " + id
	switch {
	case info.GetJobId() != id:
		return nil, fmt.Errorf("agent: the record of job %s names job %q", id, info.GetJobId())
	case info.GetDriverPid() < 0:
		return nil, fmt.Errorf("agent: %s has the negative driver pid %d", what, info.GetDriverPid())
	}
	if err := checkJobState(what, info.GetState()); err != nil {
		return nil, err
	}
	return info, nil
}

// DecodeAgentInfo decodes the record of agents/<id>: the record of that agent, with a
// non-negative pid and object store size.
func DecodeAgentInfo(id string, b []byte) (*pb.AgentInfo, error) {
	if err := checkID("agent ID", id); err != nil {
		return nil, err
	}
	info := &pb.AgentInfo{}
	if err := proto.Unmarshal(b, info); err != nil {
		return nil, fmt.Errorf("agent: decode agent %s: %w", id, err)
	}
	switch {
	case info.GetAgentId() != id:
		return nil, fmt.Errorf("agent: the record of agent %s names agent %q", id, info.GetAgentId())
	case info.GetPid() < 0:
		return nil, fmt.Errorf("agent: agent %s has the negative pid %d", id, info.GetPid())
	case info.GetObjectStoreBytes() < 0:
		return nil, fmt.Errorf("agent: agent %s has the negative object store size %d", id, info.GetObjectStoreBytes())
	}
	return info, nil
}

// decodeJobWorker is pb.DecodeJobWorker (the node's join reads the same records).
func decodeJobWorker(job, agentID string, b []byte) (*pb.JobWorker, error) {
	return pb.DecodeJobWorker(job, agentID, b)
}

// decodeLogEnd decodes the end marker of a submission's output (JSON): a JSON object with
// a non-negative byte count.
func decodeLogEnd(b []byte) (*LogEnd, error) {
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, fmt.Errorf("agent: the log end marker is not a JSON object: %.40q", b)
	}
	le := &LogEnd{}
	if err := json.Unmarshal(b, le); err != nil {
		return nil, fmt.Errorf("agent: decode the log end marker: %w", err)
	}
	if le.Bytes < 0 {
		return nil, fmt.Errorf("agent: the log end marker says %d bytes were published", le.Bytes)
	}
	return le, nil
}
