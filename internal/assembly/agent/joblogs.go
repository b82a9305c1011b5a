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
	// LogMaxBytes is how much of a submission's output is kept in the GCS: its first
	// LogHeadBytes and its newest LogMaxBytes-LogHeadBytes, so the end (the error a
	// failing driver prints last) is always there. What lies between is dropped from the
	// GCS as newer output comes, and a note in its place says how many bytes were omitted
	// (LogEnd.Omitted); the whole output stays in the log file on the head.
	LogMaxBytes = 32 << 20
	// LogHeadBytes is the part of LogMaxBytes kept from the start of the output.
	LogHeadBytes = 8 << 20
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
	Bytes     int64  `json:"bytes"`             // kept in the GCS at the end, the note included
	Truncated bool   `json:"truncated"`         // some output is not in the GCS (Omitted bytes)
	Omitted   int64  `json:"omitted,omitempty"` // bytes dropped between the start and the end
	LogPath   string `json:"log_path"`          // the whole output, on Host
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

// logPublisher copies a growing log file into the GCS chunks of a submission. The first
// head bytes are published as chunks 1..headSeq; seq headSeq+1 is kept for the note that
// says how much was omitted; later output goes to chunks from headSeq+2 on, a rolling
// tail: once more than max-head of it is kept, its oldest chunks are deleted (and the note
// put, in the same transaction) before newer ones are put. A reader that lists the chunks
// reads head, note and tail in key order; one that follows them saw the deleted chunks as
// they came, and skips the note (its seq is below the last it printed).
type logPublisher struct {
	store     gcs.Store
	id        string
	path      string
	f         *os.File
	seq       uint64 // the last chunk put (or kept, for the note)
	published int64  // bytes in the GCS now: head, note and tail
	truncated bool   // some output was dropped
	omitted   int64  // how much
	max       int64  // keep at most this much (0: LogMaxBytes)
	head      int64  // of it from the start (0: LogHeadBytes)
	headBytes int64  // published in the head
	headSeq   uint64 // the head's last chunk, once it is full (0 before)
	noteBytes int64  // the note's size (0: none put)
	tail      []tailChunk
	tailBytes int64
}

type tailChunk struct {
	seq uint64
	n   int64
}

func (l *logPublisher) limits() (max, head int64) {
	max, head = l.max, l.head
	if max <= 0 {
		max = LogMaxBytes
	}
	if head <= 0 {
		head = LogHeadBytes
	}
	return max, min(head, max/2)
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
			l.flush() // what a failed transaction left
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
	if l.f == nil {
		f, err := os.Open(l.path)
		if err != nil {
			return
		}
		l.f = f
	}
	max, head := l.limits()
	for {
		size := int64(LogChunkBytes * logChunksPerTxn)
		inHead := l.headSeq == 0
		if inHead {
			size = min(size, head-l.headBytes)
		} else {
			size = min(size, max-head)
		}
		buf := make([]byte, size)
		n, _ := io.ReadFull(l.f, buf)
		if n == 0 {
			return
		}
		ok := false
		if inHead {
			ok = l.publish(buf[:n], true)
		} else {
			ok = l.makeRoom(max-head-int64(n)) && l.publish(buf[:n], false)
		}
		if !ok {
			// Read it again next time.
			_, _ = l.f.Seek(-int64(n), io.SeekCurrent)
			return
		}
		if inHead && l.headBytes == head {
			l.headSeq = l.seq
			l.seq++ // the note's
		}
		if n < len(buf) {
			return
		}
	}
}

// makeRoom deletes the oldest tail chunks until at most keep bytes of tail are left, and
// puts the note saying how much is omitted with each deletion. It reports whether it did.
func (l *logPublisher) makeRoom(keep int64) bool {
	for l.tailBytes > keep {
		var ops []gcs.Op
		var dropped int64
		k := 0
		for k < len(l.tail) && k < gcs.MaxTxnOps-1 && l.tailBytes-dropped > keep {
			ops = append(ops, gcs.Op{Kind: gcs.OpDelete, Key: LogChunkKey(l.id, l.tail[k].seq)})
			dropped += l.tail[k].n
			k++
		}
		host, _ := os.Hostname()
		note := []byte(fmt.Sprintf("\n[ray-go: ... %d bytes omitted ...; the whole log is %s on %s]\n",
			l.omitted+dropped, l.path, host))
		ops = append(ops, gcs.Op{Kind: gcs.OpPut, Key: LogChunkKey(l.id, l.headSeq+1), Value: note})
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		_, _, err := l.store.Txn(ctx, nil, ops)
		cancel()
		if err != nil {
			return false
		}
		l.tail = l.tail[k:]
		l.tailBytes -= dropped
		l.omitted += dropped
		l.truncated = true
		l.published += int64(len(note)) - l.noteBytes - dropped
		l.noteBytes = int64(len(note))
	}
	return true
}

// publish writes data as chunks in one transaction, to the head or to the tail.
func (l *logPublisher) publish(data []byte, head bool) bool {
	var ops []gcs.Op
	var chunks []tailChunk
	seq := l.seq
	for len(data) > 0 {
		n := min(len(data), LogChunkBytes)
		seq++
		ops = append(ops, gcs.Op{Kind: gcs.OpPut, Key: LogChunkKey(l.id, seq), Value: data[:n]})
		chunks = append(chunks, tailChunk{seq: seq, n: int64(n)})
		data = data[n:]
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if _, _, err := l.store.Txn(ctx, nil, ops); err != nil {
		return false
	}
	for _, c := range chunks {
		l.published += c.n
		if head {
			l.headBytes += c.n
		} else {
			l.tail = append(l.tail, c)
			l.tailBytes += c.n
		}
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
	le, _, err := ReadLogAfter(ctx, store, submissionID, w, follow, 0)
	return le, err
}

// ReadLogAfter is ReadLog from the chunk after chunk after on; it also returns the last
// chunk it wrote (after if none), from which a later read can go on. Output that the
// publisher dropped (LogMaxBytes) between the two reads is skipped without a note.
func ReadLogAfter(ctx context.Context, store gcs.Store, submissionID string, w io.Writer, follow bool, after uint64) (*LogEnd, uint64, error) {
	prefix := LogChunksPrefix(submissionID)
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	kvs, rev, err := store.List(lctx, prefix)
	cancel()
	if err != nil {
		return nil, after, err
	}
	last := after
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
			return le, last, err
		}
	}
	if !follow {
		return nil, last, nil
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
			return nil, last, ctx.Err()
		case resp, ok := <-events:
			if !ok {
				return nil, last, fmt.Errorf("agent: follow the log of %s: watch closed", submissionID)
			}
			if resp.Err != nil {
				return nil, last, fmt.Errorf("agent: follow the log of %s: %w", submissionID, resp.Err)
			}
			for _, ev := range resp.Events {
				if ev.Type != gcs.EventPut {
					continue
				}
				le, end, err := handle(ev.KV)
				if err != nil || end {
					return le, last, err
				}
			}
		case now := <-check.C:
			// A submission that ended without an end marker (its agent died) would keep
			// the follow waiting for ever.
			sub, err := GetSubmission(ctx, store, submissionID)
			if err != nil {
				if errors.Is(err, errNoSubmission) || ctx.Err() != nil {
					return nil, last, err
				}
				// The GCS does not answer (its head died, or is cut off): a follow that
				// waited for it would wait for ever.
				if failingSince.IsZero() {
					failingSince = now
				} else if now.Sub(failingSince) >= FollowLostAfter {
					return nil, last, fmt.Errorf("%w: follow the log of %s: the cluster's GCS has not answered for %v (is the head down?); the submission's end is unknown until it is back (rayctl job status %s): %v",
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
				return nil, last, nil
			}
		}
	}
}
