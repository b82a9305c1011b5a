package agent

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/ids"
)

// Worker logs on demand (`rayctl logs`): each agent serves the output of the worker
// processes it started (<SessionDir>/logs/worker-<job>.log) to whoever can write a request
// into the GCS, that is to holders of the cluster's credentials (the GCS's mutual TLS is
// the access control, as for the state API's queries in internal/assembly/taskstate). This
// package owns the key family (the schema in internal/base/gcs is not changed for it):
//
//	logreq/<id>     LogRequest (JSON), on the asker's lease: which agent, which job's
//	                worker log, from which offset or how many last lines
//	logreply/<id>   the answer (EncodeLogReply), on the same lease
//
// The asker revokes the lease when it has read the answer, which deletes both keys.
//
// A request names a job, never a path: the agent builds the path itself from its session
// directory and the job ID, which must be a plain ID (checkID: no '/', no "..") and the
// file a regular file (not a symbolic link). An answer holds at most LogReadMax bytes.
const (
	LogRequestsPrefix = "logreq/"
	LogRepliesPrefix  = "logreply/"
)

// LogReadMax is the most bytes of a log one request reads (an etcd request takes 1.5 MiB).
const LogReadMax = 1 << 20

// logAnswerWait bounds how long an asker waits for an agent's answer by default.
const logAnswerWait = 5 * time.Second

// ErrNoLogAnswer: the agent did not answer a log request in time (it is not running, or
// cannot reach the GCS).
var ErrNoLogAnswer = errors.New("agent: no answer to the log request")

// LogRequest asks one agent for a piece of one job's worker log.
type LogRequest struct {
	ID    string `json:"id"`    // set by ReadWorkerLog
	Lease int64  `json:"lease"` // set by ReadWorkerLog: the answer goes on it
	Agent string `json:"agent"` // the agent that answers
	Job   string `json:"job"`   // the job whose worker process's log to read
	// Offset is where to read from (with Tail 0); at most Max bytes (0 or more than
	// LogReadMax: LogReadMax) are read.
	Offset int64 `json:"offset,omitempty"`
	Max    int   `json:"max,omitempty"`
	// Tail > 0 asks for the last Tail lines instead, within the last Max bytes.
	Tail int `json:"tail,omitempty"`
}

// LogReply is an agent's answer.
type LogReply struct {
	// Err says why nothing was read ("" when the read went well; a log not written yet is
	// Found false, not an error).
	Err   string `json:"err,omitempty"`
	Found bool   `json:"found"`
	Path  string `json:"path,omitempty"` // the log file, on Host
	Host  string `json:"host,omitempty"`
	// Size is the file's size when it was read; Offset is where Data starts in it, and
	// Offset+len(Data) where the next read of a follower starts. Truncated: the tail asked
	// for did not fit in the bytes read (Data starts mid-log).
	Size      int64  `json:"size"`
	Offset    int64  `json:"offset"`
	Truncated bool   `json:"truncated,omitempty"`
	Data      []byte `json:"-"`
}

// EncodeLogReply is the wire form of a reply: the length of its JSON header (4 bytes,
// big-endian), the header, then the data.
func EncodeLogReply(r *LogReply) []byte {
	h, _ := json.Marshal(r)
	out := make([]byte, 4, 4+len(h)+len(r.Data))
	binary.BigEndian.PutUint32(out, uint32(len(h)))
	out = append(out, h...)
	return append(out, r.Data...)
}

// DecodeLogReply decodes EncodeLogReply's form: a header that is a JSON object, data of at
// most LogReadMax bytes and offsets that are not negative.
func DecodeLogReply(b []byte) (*LogReply, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("agent: a log reply of %d bytes", len(b))
	}
	n := binary.BigEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-4) {
		return nil, fmt.Errorf("agent: a log reply's header of %d bytes in %d", n, len(b))
	}
	h := b[4 : 4+n]
	if t := bytes.TrimLeft(h, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, fmt.Errorf("agent: a log reply's header is not a JSON object: %.40q", h)
	}
	r := &LogReply{}
	if err := json.Unmarshal(h, r); err != nil {
		return nil, fmt.Errorf("agent: decode a log reply: %w", err)
	}
	data := b[4+n:]
	switch {
	case len(data) > LogReadMax:
		return nil, fmt.Errorf("agent: a log reply of %d bytes, more than %d", len(data), LogReadMax)
	case r.Size < 0 || r.Offset < 0:
		return nil, fmt.Errorf("agent: a log reply with size %d and offset %d", r.Size, r.Offset)
	}
	if len(data) > 0 {
		r.Data = append([]byte(nil), data...)
	}
	return r, nil
}

// WorkerLogPath is where an agent whose session directory is dir writes the output of
// job's worker process.
func WorkerLogPath(dir, job string) string {
	return filepath.Join(dir, "logs", "worker-"+job+".log")
}

// serveLogs answers the log requests addressed to this agent until the agent stops. One
// request at a time: each reads at most LogReadMax bytes. It lists the requests already
// there before it watches for new ones (from the list's revision on): a request sent
// before the watch was created (just after the agent started, or while a broken watch was
// made again) is answered too; one answered before a watch broke may be answered again,
// which the asker does not mind (the same reply, put again).
func (a *Agent) serveLogs() {
	defer a.wg.Done()
	ctx := a.ctx
	for ctx.Err() == nil {
		kvs, rev, err := a.store.List(ctx, LogRequestsPrefix)
		if err == nil {
			for _, kv := range kvs {
				a.answerLogRequest(ctx, kv.Value)
			}
			for resp := range a.store.Watch(ctx, LogRequestsPrefix, rev+1) {
				if resp.Err != nil {
					break
				}
				for _, ev := range resp.Events {
					if ev.Type == gcs.EventPut {
						a.answerLogRequest(ctx, ev.KV.Value)
					}
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second): // the watch broke (compaction, a lost connection): watch again
		}
	}
}

// answerLogRequest answers one log request if it is addressed to this agent.
func (a *Agent) answerLogRequest(ctx context.Context, value []byte) {
	var req LogRequest
	if json.Unmarshal(value, &req) != nil || req.Agent != a.id || req.ID == "" {
		return
	}
	rep := a.readWorkerLog(&req)
	pctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if _, err := a.store.Put(pctx, LogRepliesPrefix+req.ID, EncodeLogReply(rep), gcs.LeaseID(req.Lease)); err != nil && ctx.Err() == nil {
		a.log.Debug("agent: answer a log request", "id", req.ID, "err", err)
	}
}

// readWorkerLog reads what req asks of this agent's worker log of req.Job.
func (a *Agent) readWorkerLog(req *LogRequest) *LogReply {
	rep := &LogReply{Host: a.hostname}
	if err := checkID("job ID", req.Job); err != nil {
		rep.Err = err.Error()
		return rep
	}
	rep.Path = WorkerLogPath(a.cfg.SessionDir, req.Job)
	if err := readLogFile(rep, req); err != nil {
		rep.Err = err.Error()
	}
	return rep
}

// readLogFile fills rep (whose Path is set) with what req asks of the file.
func readLogFile(rep *LogReply, req *LogRequest) error {
	fi, err := os.Lstat(rep.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil // no output yet (or this agent never ran the job)
	}
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", rep.Path)
	}
	f, err := os.Open(rep.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return err
	}
	rep.Found, rep.Size = true, fi.Size()
	limit := int64(req.Max)
	if limit <= 0 || limit > LogReadMax {
		limit = LogReadMax
	}
	off := req.Offset
	if req.Tail > 0 {
		off = rep.Size - limit
	}
	off = min(max(off, 0), rep.Size)
	n := min(limit, rep.Size-off)
	buf := make([]byte, n)
	got, err := f.ReadAt(buf, off)
	if err != nil && err != io.EOF {
		return err
	}
	buf = buf[:got]
	rep.Offset = off
	if req.Tail > 0 {
		var start int
		start, rep.Truncated = TailStart(buf, req.Tail, off == 0)
		buf = buf[start:]
		rep.Offset = off + int64(start)
	}
	rep.Data = buf
	return nil
}

// TailStart returns where the last n lines of b start (a last line without its newline
// counts as a line). whole says b starts at the beginning of the file; truncated says b
// holds fewer than n lines and does not start at the beginning (its first line is cut, and
// dropped unless it is all there is).
func TailStart(b []byte, n int, whole bool) (start int, truncated bool) {
	end := len(b)
	if end > 0 && b[end-1] == '\n' {
		end--
	}
	for i := end - 1; i >= 0; i-- {
		if b[i] == '\n' {
			n--
			if n == 0 {
				return i + 1, false
			}
		}
	}
	if whole {
		return 0, false
	}
	if i := bytes.IndexByte(b, '\n'); i >= 0 && i+1 < len(b) {
		return i + 1, true // the first line is only part of one
	}
	return 0, true
}

// ReadWorkerLog asks req.Agent for a piece of req.Job's worker log through the GCS and
// returns its answer; ErrNoLogAnswer when none came within wait (0: 5 s).
func ReadWorkerLog(ctx context.Context, store gcs.Store, req LogRequest, wait time.Duration) (*LogReply, error) {
	if wait <= 0 {
		wait = logAnswerWait
	}
	lease, err := store.Grant(ctx, wait+5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("agent: lease for a log request: %w", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = store.Revoke(rctx, lease) // the request and its answer go with it
	}()
	req.ID, req.Lease = ids.NewRootTaskID().String(), int64(lease)
	b, _ := json.Marshal(req)
	if _, err := store.Put(ctx, LogRequestsPrefix+req.ID, b, lease); err != nil {
		return nil, fmt.Errorf("agent: send a log request: %w", err)
	}
	deadline := time.Now().Add(wait)
	pause := 5 * time.Millisecond
	for {
		kv, found, err := store.Get(ctx, LogRepliesPrefix+req.ID)
		if err != nil {
			return nil, fmt.Errorf("agent: read a log reply: %w", err)
		}
		if found {
			return DecodeLogReply(kv.Value)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w from agent %s within %v", ErrNoLogAnswer, req.Agent, wait)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, 100*time.Millisecond)
	}
}
