package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ray-go/ray/internal/base/gcs"
)

// The output of a submitted driver is kept in the GCS, so `rayctl job logs` works from any
// machine. This package owns the key family (the schema in internal/base/gcs is not changed for
// it):
//
//	joblogs/<submissionID>/<seq>   one chunk of output (raw bytes), seq from 1, 20 decimal
//	                               digits so key order is output order
//	joblogs/<submissionID>/end     LogEnd (JSON), written in the same transaction as the
//	                               submission's terminal state: after it no chunk follows
const LogsPrefix = "joblogs/"

// Limits of the published output.
const (
	// LogChunkBytes is the largest chunk.
	LogChunkBytes = 64 << 10
	// LogFlushInterval is how often new output is published.
	LogFlushInterval = 200 * time.Millisecond
	// LogMaxBytes is how much of a submission's output is published; the rest stays in
	// the log file on the head (LogEnd.Truncated).
	LogMaxBytes = 32 << 20
	// logChunksPerTxn keeps a publishing transaction at 1 MiB.
	logChunksPerTxn = 16
)

// LogChunksPrefix is the prefix of a submission's log keys.
func LogChunksPrefix(submissionID string) string { return LogsPrefix + submissionID + "/" }

// LogChunkKey is the key of chunk seq of a submission's output.
func LogChunkKey(submissionID string, seq uint64) string {
	return fmt.Sprintf("%s%s/%020d", LogsPrefix, submissionID, seq)
}

// LogEndKey is the key of the end marker of a submission's output.
func LogEndKey(submissionID string) string { return LogsPrefix + submissionID + "/end" }

// LogEnd is the value of the end marker.
type LogEnd struct {
	Bytes     int64  `json:"bytes"`     // published, notes included
	Truncated bool   `json:"truncated"` // output beyond LogMaxBytes was not published
	LogPath   string `json:"log_path"`  // the whole output, on Host
	Host      string `json:"host"`
}

// parseChunkKey returns the sequence number of a chunk key (ok false for the end key).
func parseChunkKey(submissionID, key string) (seq uint64, end, ok bool) {
	rest, found := strings.CutPrefix(key, LogChunksPrefix(submissionID))
	if !found {
		return 0, false, false
	}
	if rest == "end" {
		return 0, true, true
	}
	n, err := strconv.ParseUint(rest, 10, 64)
	if err != nil || len(rest) != 20 {
		return 0, false, false
	}
	return n, false, true
}

// logPublisher copies a growing log file into the GCS chunks of a submission.
type logPublisher struct {
	store     gcs.Store
	id        string
	path      string
	f         *os.File
	seq       uint64
	published int64
	truncated bool
	max       int64 // publish at most this much (0: LogMaxBytes)
}

// run publishes what the file gains every LogFlushInterval until finish is closed, then
// publishes the rest and returns (the end marker is the caller's, with the final state).
// GCS calls are bounded by opTimeout; a failed publish is retried at the next flush.
func (l *logPublisher) run(finish <-chan struct{}) {
	t := time.NewTicker(LogFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-finish:
			l.flush()
			l.flush() // a batch left after a full transaction
			if l.f != nil {
				_ = l.f.Close()
			}
			return
		case <-t.C:
			l.flush()
		}
	}
}

// flush reads what is new in the file and publishes it, a transaction at a time.
func (l *logPublisher) flush() {
	if l.truncated {
		return
	}
	if l.f == nil {
		f, err := os.Open(l.path)
		if err != nil {
			return
		}
		l.f = f
	}
	for {
		limit := l.max
		if limit <= 0 {
			limit = LogMaxBytes
		}
		room := limit - l.published
		buf := make([]byte, min(int64(LogChunkBytes*logChunksPerTxn), max(room, 0)+1))
		n, _ := io.ReadFull(l.f, buf)
		if n == 0 {
			return
		}
		data, note := buf[:n], []byte(nil)
		if int64(n) > room {
			// More than the cap allows: publish up to it, then a note, then nothing more.
			data = buf[:max(room, 0)]
			host, _ := os.Hostname()
			note = []byte(fmt.Sprintf("\n[ray-go: output truncated after %d bytes; the whole log is %s on %s]\n",
				limit, l.path, host))
		}
		if !l.publish(data, note) {
			// Read it again next time.
			_, _ = l.f.Seek(-int64(n), io.SeekCurrent)
			return
		}
		if note != nil {
			l.truncated = true
			return
		}
		if n < len(buf) {
			return
		}
	}
}

// publish writes data (and note) as chunks in one transaction.
func (l *logPublisher) publish(data, note []byte) bool {
	var ops []gcs.Op
	seq := l.seq
	for len(data) > 0 {
		n := min(len(data), LogChunkBytes)
		seq++
		ops = append(ops, gcs.Op{Kind: gcs.OpPut, Key: LogChunkKey(l.id, seq), Value: data[:n]})
		data = data[n:]
	}
	if note != nil {
		seq++
		ops = append(ops, gcs.Op{Kind: gcs.OpPut, Key: LogChunkKey(l.id, seq), Value: note})
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if _, _, err := l.store.Txn(ctx, nil, ops); err != nil {
		return false
	}
	for _, op := range ops {
		l.published += int64(len(op.Value))
	}
	l.seq = seq
	return true
}

// FollowLostAfter is how long a follow of a job's log waits for a GCS that does not
// answer before it fails with ErrGCSLost.
var FollowLostAfter = 30 * time.Second

// ErrGCSLost: a follow of a job's log gave up on a GCS that stopped answering.
var ErrGCSLost = errors.New("agent: lost the cluster's GCS")

// ReadLog writes the published output of a submission to w. With follow, it goes on
// until the end marker appears (the submission ended), or until ctx is done; a submission
// that ended without one (its head agent died) ends the follow after a short wait too, and
// a GCS that answers nothing for FollowLostAfter ends it with ErrGCSLost. It returns the
// end marker when there was one.
func ReadLog(ctx context.Context, store gcs.Store, submissionID string, w io.Writer, follow bool) (*LogEnd, error) {
	prefix := LogChunksPrefix(submissionID)
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	kvs, rev, err := store.List(lctx, prefix)
	cancel()
	if err != nil {
		return nil, err
	}
	var last uint64
	handle := func(kv gcs.KV) (*LogEnd, bool, error) {
		seq, end, ok := parseChunkKey(submissionID, kv.Key)
		switch {
		case !ok:
			return nil, false, nil
		case end:
			le, err := decodeLogEnd(kv.Value)
			if err != nil {
				return nil, true, fmt.Errorf("agent: log end marker of %s: %w", submissionID, err)
			}
			return le, true, nil
		case seq <= last:
			return nil, false, nil
		}
		last = seq
		_, err := w.Write(kv.Value)
		return nil, false, err
	}
	for _, kv := range kvs {
		le, end, err := handle(kv)
		if err != nil || end {
			return le, err
		}
	}
	if !follow {
		return nil, nil
	}
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	events := store.Watch(wctx, prefix, rev+1)
	check := time.NewTicker(time.Second)
	defer check.Stop()
	var endedAt, failingSince time.Time
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case resp, ok := <-events:
			if !ok {
				return nil, fmt.Errorf("agent: follow the log of %s: watch closed", submissionID)
			}
			if resp.Err != nil {
				return nil, fmt.Errorf("agent: follow the log of %s: %w", submissionID, resp.Err)
			}
			for _, ev := range resp.Events {
				if ev.Type != gcs.EventPut {
					continue
				}
				le, end, err := handle(ev.KV)
				if err != nil || end {
					return le, err
				}
			}
		case now := <-check.C:
			// A submission that ended without an end marker (its agent died) would keep
			// the follow waiting for ever.
			sub, err := GetSubmission(ctx, store, submissionID)
			if err != nil {
				if errors.Is(err, errNoSubmission) || ctx.Err() != nil {
					return nil, err
				}
				// The GCS does not answer (its head died, or is cut off): a follow that
				// waited for it would wait for ever.
				if failingSince.IsZero() {
					failingSince = now
				} else if now.Sub(failingSince) >= FollowLostAfter {
					return nil, fmt.Errorf("%w: follow the log of %s: the cluster's GCS has not answered for %v (is the head down?); the submission's end is unknown until it is back (rayctl job status %s): %v",
						ErrGCSLost, submissionID, FollowLostAfter, submissionID, err)
				}
				continue
			}
			failingSince = time.Time{}
			if !IsTerminal(sub.GetState()) {
				endedAt = time.Time{}
				continue
			}
			if endedAt.IsZero() {
				endedAt = now
			} else if now.Sub(endedAt) >= 2*time.Second {
				return nil, nil
			}
		}
	}
}
