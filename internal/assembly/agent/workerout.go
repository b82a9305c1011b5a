package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/ray-go/ray/internal/base/gcs"
)

// Worker output to the driver (Ray's log_to_driver): what a job's worker processes print
// (their stdout and stderr, which this agent appends to WorkerLogPath) is shown by the
// job's driver on its stderr, each line prefixed with "(worker pid=N, ip=H)", so it is in
// the driver's console and in `rayctl job logs`. The driver asks for it with a key on a
// lease of its own; every agent that runs a worker process of the job reads the new part
// of the job's log file every WorkerOutInterval and, when there is some, puts it as one
// batch under its own key, which the driver watches (agents watch the want keys). This package owns the key family
// (the schema in internal/base/gcs is not changed for it):
//
//	workerout/want/<job>            the job's driver wants its workers' output (empty, on the driver's lease)
//	workerout/lines/<job>/<agent>   the agent's newest batch (WorkerOutput, JSON, on the agent's lease)
//
// Nothing is on the task path: the worker processes write to their file as before. It is
// bounded everywhere: an agent puts at most WorkerOutBatch bytes per job and interval and
// lets a job's file run at most WorkerOutBacklog ahead of what it sent (beyond that it
// skips to the newest output and counts the lines it skipped, which the next batch
// reports); it keeps no output in memory between reads, and a slow or dead driver costs
// it nothing (it overwrites its one key). The driver queues at most WorkerOutQueue bytes
// for its stderr and drops (and counts) what does not fit, so a stderr nobody reads blocks
// neither its watch nor anything else.
//
// Records of the runtime's own log (slog's text form, "time=... level=..."), below ERROR,
// are not sent: the worker process's WARN and INFO lines stay in its log (`rayctl logs
// worker`), as Ray shows only its workers' warnings and errors.
const (
	WorkerOutWantPrefix = "workerout/want/"
	WorkerOutPrefix     = "workerout/lines/"
)

// Limits of worker output to the driver.
const (
	// WorkerOutInterval is how often an agent reads the log files of the jobs whose
	// drivers want their output.
	WorkerOutInterval = 100 * time.Millisecond
	// WorkerOutBatch is the most an agent puts per job and interval.
	WorkerOutBatch = 128 << 10
	// WorkerOutBacklog is how far a job's log file may run ahead of what the agent sent.
	WorkerOutBacklog = 1 << 20
	// WorkerOutQueue is the most a driver holds for its stderr.
	WorkerOutQueue = 4 << 20
	// workerOutPartial is how many intervals an unfinished last line waits for its end.
	workerOutPartial = 10
	// workerOutJobs bounds the jobs an agent remembers where it is in.
	workerOutJobs = 4096
)

// WorkerOutWantKey is the key with which job's driver asks for its workers' output.
func WorkerOutWantKey(job string) string { return WorkerOutWantPrefix + job }

// WorkerOutJobPrefix is the prefix of the batches of job's output.
func WorkerOutJobPrefix(job string) string { return WorkerOutPrefix + job + "/" }

// WorkerOutKey is the key of agent's batches of job's output.
func WorkerOutKey(job, agent string) string { return WorkerOutJobPrefix(job) + agent }

// WorkerOutput is one batch of a job's worker output from one agent.
type WorkerOutput struct {
	Seq uint64 `json:"seq"` // from 1, per agent and job
	PID int    `json:"pid"` // the worker process (its newest, when it was restarted)
	IP  string `json:"ip"`  // the agent's host
	// Dropped is how many lines the agent skipped since its previous batch (the file ran
	// more than WorkerOutBacklog ahead, or a put failed).
	Dropped int64  `json:"dropped,omitempty"`
	Data    []byte `json:"data,omitempty"` // whole lines (a last line without its end only after waiting for it)
}

// outTail is where the agent is in one job's log file.
type outTail struct {
	off     int64
	seq     uint64
	dropped int64
	waited  int  // intervals an unfinished last line has waited
	wanted  bool // the job's driver wants output now
	put     bool // this agent's key of the job exists
}

// forwardWorkerOutput sends the output of this agent's worker processes to the drivers
// that want it, until the agent stops.
func (a *Agent) forwardWorkerOutput() {
	defer a.wg.Done()
	w := &outWants{jobs: map[string]bool{}}
	a.wg.Add(1)
	go a.watchWants(w)
	tails := map[string]*outTail{}
	buf := make([]byte, WorkerOutBatch)
	t := time.NewTicker(WorkerOutInterval)
	defer t.Stop()
	for {
		select {
		case <-a.ctx.Done():
			return
		case <-t.C:
		}
		a.wantedOutput(tails, w.snapshot())
		for job, tl := range tails {
			if tl.wanted {
				a.sendOutput(job, tl, buf)
			}
		}
	}
}

// outWants is the set of jobs whose drivers want output, as watchWants last saw it.
type outWants struct {
	mu   sync.Mutex
	jobs map[string]bool
	gen  uint64 // changes with jobs
	seen uint64 // the gen snapshot last returned
}

// snapshot returns the set when it changed since the last call, else nil.
func (w *outWants) snapshot() map[string]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gen == w.seen {
		return nil
	}
	w.seen = w.gen
	out := make(map[string]bool, len(w.jobs))
	for j := range w.jobs {
		out[j] = true
	}
	return out
}

func (w *outWants) set(job string, on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if on {
		w.jobs[job] = true
	} else {
		delete(w.jobs, job)
	}
	w.gen++
}

func (w *outWants) reset(jobs map[string]bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.jobs = jobs
	w.gen++
}

// watchWants keeps w the jobs whose want keys exist, until the agent stops: it lists
// them, then follows the changes (and lists again when the watch breaks).
func (a *Agent) watchWants(w *outWants) {
	defer a.wg.Done()
	ctx := a.ctx
	jobOf := func(key string) (string, bool) {
		job, ok := gcs.TrimKey(WorkerOutWantPrefix, key)
		return job, ok && checkID("job ID", job) == nil
	}
	for ctx.Err() == nil {
		lctx, cancel := context.WithTimeout(ctx, opTimeout)
		kvs, rev, err := a.store.List(lctx, WorkerOutWantPrefix)
		cancel()
		if err == nil {
			jobs := map[string]bool{}
			for _, kv := range kvs {
				if job, ok := jobOf(kv.Key); ok {
					jobs[job] = true
				}
			}
			w.reset(jobs)
			for resp := range a.store.Watch(ctx, WorkerOutWantPrefix, rev+1) {
				if resp.Err != nil {
					break
				}
				for _, ev := range resp.Events {
					if job, ok := jobOf(ev.KV.Key); ok {
						w.set(job, ev.Type == gcs.EventPut)
					}
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// wantedOutput marks the jobs of want (nil: unchanged) wanted and deletes this agent's key
// of those no longer wanted.
func (a *Agent) wantedOutput(tails map[string]*outTail, want map[string]bool) {
	if want == nil {
		for job, tl := range tails {
			if !tl.wanted && tl.put {
				a.dropOutputKey(job, tl) // a delete that failed before
			}
		}
		return
	}
	for job, tl := range tails {
		tl.wanted = want[job]
		if !tl.wanted && tl.put {
			a.dropOutputKey(job, tl)
		}
	}
	for job := range want {
		if tails[job] == nil {
			if len(tails) >= workerOutJobs {
				for j, tl := range tails {
					if !tl.wanted && !tl.put {
						delete(tails, j)
					}
				}
			}
			tails[job] = &outTail{wanted: true}
		}
	}
}

// dropOutputKey deletes this agent's key of job's output.
func (a *Agent) dropOutputKey(job string, tl *outTail) {
	ctx, cancel := context.WithTimeout(a.ctx, opTimeout)
	defer cancel()
	if _, err := a.store.Delete(ctx, WorkerOutKey(job, a.id)); err == nil {
		tl.put = false
	}
}

// sendOutput puts what job's log file gained since tl.off, if anything.
func (a *Agent) sendOutput(job string, tl *outTail, buf []byte) {
	path := WorkerLogPath(a.cfg.SessionDir, job)
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return
	}
	size := fi.Size()
	if size < tl.off { // a new file
		tl.off = 0
	}
	if size == tl.off && tl.dropped == 0 {
		return
	}
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	if size-tl.off > WorkerOutBacklog {
		tl.dropped += skipLines(f, buf, tl.off, size-WorkerOutBacklog, &tl.off)
	}
	n, _ := f.ReadAt(buf[:min(int64(len(buf)), size-tl.off)], tl.off)
	data := buf[:n]
	// Whole lines only: an unfinished last line waits for its end (in the next batch), or
	// a while (workerOutPartial) when it is all there is; one that fills a batch goes as it is.
	switch i := bytes.LastIndexByte(data, '\n'); {
	case i == n-1:
		tl.waited = 0
	case i >= 0:
		data = data[:i+1]
		tl.waited = 0
	case n < len(buf) && tl.waited < workerOutPartial:
		data = nil
		tl.waited++
	default:
		tl.waited = 0
	}
	if len(data) == 0 && tl.dropped == 0 {
		return
	}
	out := WorkerOutput{Seq: tl.seq + 1, IP: a.outputIP(), Dropped: tl.dropped, Data: keepOutput(data)}
	if pid, ok := a.workerPIDs.Load(job); ok {
		out.PID = pid.(int)
	}
	tl.off += int64(len(data))
	if len(out.Data) == 0 && out.Dropped == 0 {
		return
	}
	b, _ := json.Marshal(&out)
	a.leaseMu.Lock()
	lease := a.lease
	a.leaseMu.Unlock()
	ctx, cancel := context.WithTimeout(a.ctx, opTimeout)
	defer cancel()
	if _, err := a.store.Put(ctx, WorkerOutKey(job, a.id), b, lease); err != nil {
		tl.dropped += int64(bytes.Count(out.Data, []byte{'\n'}))
		a.log.Debug("agent: put worker output", "job", job, "err", err)
		return
	}
	tl.seq, tl.dropped, tl.put = out.Seq, 0, true
}

// outputIP is the host the agent names in its batches.
func (a *Agent) outputIP() string {
	if a.cfg.Host != "" {
		return a.cfg.Host
	}
	return a.hostname
}

// skipLines moves *off from from to the start of the first line that begins at or after
// to (to, if none ends within a buffer's length of it) and returns how many lines it
// passed, counting them with buf.
func skipLines(f *os.File, buf []byte, from, to int64, off *int64) int64 {
	var lines int64
	for at := from; at < to; {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), to-at)], at)
		lines += int64(bytes.Count(buf[:n], []byte{'\n'}))
		at += int64(n)
		if err != nil || n == 0 {
			break
		}
	}
	*off = to
	n, _ := f.ReadAt(buf, to)
	if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
		*off = to + int64(i) + 1
		lines++
	}
	return lines
}

// keepOutput returns data without the runtime's own log records below ERROR (a copy).
func keepOutput(data []byte) []byte {
	var out []byte
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line = data[:i+1]
		}
		data = data[len(line):]
		if !runtimeRecord(line) {
			out = append(out, line...)
		}
	}
	return out
}

// runtimeRecord reports whether line is a record of slog's text form below ERROR
// ("time=... level=INFO ..."), as the runtime logs.
func runtimeRecord(line []byte) bool {
	if !bytes.HasPrefix(line, []byte("time=")) {
		return false
	}
	i := bytes.IndexByte(line, ' ')
	if i < 0 || !bytes.HasPrefix(line[i+1:], []byte("level=")) {
		return false
	}
	lv := line[i+1+len("level="):]
	for _, l := range []string{"DEBUG", "INFO", "WARN"} {
		if bytes.HasPrefix(lv, []byte(l)) {
			return true
		}
	}
	return false
}

// FollowWorkerOutput asks the agents for the output of job's worker processes and writes
// it to w, each line prefixed with "(worker pid=N, ip=H) ", until stop is called. stop
// waits up to grace for output the agents have yet to send (what the workers printed just
// before), then up to another second for w to take what is queued, and returns.
func FollowWorkerOutput(store gcs.Store, job string, w io.Writer, log *slog.Logger) (stop func(grace time.Duration)) {
	ctx, stopFollow := context.WithCancel(context.Background())
	qctx, stopWriter := context.WithCancel(context.Background())
	q := &outQueue{w: w, wake: make(chan struct{}, 1), done: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); wantOutput(ctx, store, job, log) }()
	go func() { defer wg.Done(); watchOutput(ctx, store, job, q) }()
	go q.run(qctx)
	var once sync.Once
	return func(grace time.Duration) {
		once.Do(func() {
			if grace > 0 {
				time.Sleep(grace)
			}
			stopFollow()
			wg.Wait()
			q.close()
			select {
			case <-q.done:
			case <-time.After(time.Second):
			}
			stopWriter()
		})
	}
}

// wantOutput keeps the driver's want key on a lease of its own until ctx ends (then it
// revokes the lease).
func wantOutput(ctx context.Context, store gcs.Store, job string, log *slog.Logger) {
	for ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(ctx, opTimeout)
		lease, err := store.Grant(cctx, AliveTTL)
		if err == nil {
			if _, err = store.Put(cctx, WorkerOutWantKey(job), nil, lease); err != nil {
				_ = store.Revoke(cctx, lease)
			}
		}
		cancel()
		if err != nil {
			if log != nil && ctx.Err() == nil {
				log.Debug("ray: ask for the worker processes' output", "err", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		lost, err := store.KeepAlive(ctx, lease)
		if err == nil {
			select {
			case <-ctx.Done():
			case <-lost:
			}
		}
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
		_ = store.Revoke(rctx, lease)
		rcancel()
	}
}

// watchOutput queues the batches of job's output as they come, until ctx ends.
func watchOutput(ctx context.Context, store gcs.Store, job string, q *outQueue) {
	prefix := WorkerOutJobPrefix(job)
	last := map[string]uint64{} // agent key -> the last batch queued
	take := func(key string, value []byte) {
		var b WorkerOutput
		if json.Unmarshal(value, &b) != nil || b.Seq <= last[key] {
			return
		}
		if prev, ok := last[key]; ok && b.Seq > prev+1 {
			q.note(b, fmt.Sprintf("[ray: %d batches of this worker's output were missed]", b.Seq-prev-1))
		}
		last[key] = b.Seq
		q.add(b)
	}
	for ctx.Err() == nil {
		kvs, rev, err := store.List(ctx, prefix)
		if err == nil {
			for _, kv := range kvs {
				take(kv.Key, kv.Value)
			}
			for resp := range store.Watch(ctx, prefix, rev+1) {
				if resp.Err != nil {
					break
				}
				for _, ev := range resp.Events {
					if ev.Type == gcs.EventPut {
						take(ev.KV.Key, ev.KV.Value)
					}
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second): // the watch broke: list again (what it missed is reported by seq)
		}
	}
}

// outQueue holds the formatted output for the driver's stderr, at most WorkerOutQueue
// bytes; a goroutine writes it.
type outQueue struct {
	w       io.Writer
	mu      sync.Mutex
	buf     [][]byte
	bytes   int
	dropped int64 // lines that did not fit since the last note
	closed  bool
	wake    chan struct{}
	done    chan struct{}
}

func prefix(b WorkerOutput) string { return fmt.Sprintf("(worker pid=%d, ip=%s) ", b.PID, b.IP) }

// add queues a batch's lines with their prefix (and a note of what the agent dropped).
func (q *outQueue) add(b WorkerOutput) {
	if b.Dropped > 0 {
		q.note(b, fmt.Sprintf("[ray: %d lines of this worker's output dropped: it printed faster than they could be sent]", b.Dropped))
	}
	if len(b.Data) == 0 {
		return
	}
	p := prefix(b)
	var out strings.Builder
	data := b.Data
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line = data[:i+1]
		}
		data = data[len(line):]
		out.WriteString(p)
		out.Write(line)
		if line[len(line)-1] != '\n' {
			out.WriteByte('\n')
		}
	}
	q.push([]byte(out.String()), int64(bytes.Count(b.Data, []byte{'\n'})))
}

// note queues one line about b's worker.
func (q *outQueue) note(b WorkerOutput, msg string) { q.push([]byte(prefix(b)+msg+"\n"), 1) }

func (q *outQueue) push(p []byte, lines int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	if q.bytes+len(p) > WorkerOutQueue {
		q.dropped += max(lines, 1)
		return
	}
	if q.dropped > 0 {
		n := fmt.Sprintf("[ray: %d lines of the worker processes' output dropped: this driver's stderr did not take them fast enough]\n", q.dropped)
		q.buf = append(q.buf, []byte(n))
		q.bytes += len(n)
		q.dropped = 0
	}
	q.buf = append(q.buf, p)
	q.bytes += len(p)
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// close lets run end once it wrote what is queued.
func (q *outQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// run writes what is queued to w until the queue is closed and empty, or ctx ends.
func (q *outQueue) run(ctx context.Context) {
	defer close(q.done)
	for {
		q.mu.Lock()
		buf, closed := q.buf, q.closed
		q.buf, q.bytes = nil, 0
		q.mu.Unlock()
		for _, p := range buf {
			if ctx.Err() != nil {
				return
			}
			_, _ = q.w.Write(p)
		}
		if closed && len(buf) == 0 {
			return
		}
		if len(buf) > 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-q.wake:
		}
	}
}
