package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
	"github.com/ray-go/ray/internal/base/pb"
)

// lockedBuffer is a bytes.Buffer another goroutine writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Len()
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}

// TestLogPublisherKeepsHeadAndTail: output beyond the cap keeps its start and its newest
// part in the GCS, with a note of how many bytes were dropped in between, even when the
// tail to drop is more chunks than one transaction may delete; a follower that was there
// from the start got every byte. Before, the publisher stopped at the cap, so the end of a
// long output (a failing driver's last error) was never published.
func TestLogPublisherKeepsHeadAndTail(t *testing.T) {
	s := memstore.New(memstore.Options{})
	defer s.Close()
	path := filepath.Join(t.TempDir(), "out.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var data []byte
	for i := range (340 << 10) / 16 {
		data = fmt.Appendf(data, "%015d\n", i)
	}
	ctx := context.Background()
	followed := &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		_, err := ReadLog(ctx, s, "x", followed, true)
		done <- err
	}()
	p := &logPublisher{store: s, id: "x", path: path, max: 200 << 10, head: 50 << 10}
	// 200 KiB in 1 KiB writes, published one by one: 50 KiB of head, 150 chunks of tail,
	// all of it kept.
	for off := 0; off < 200<<10; off += 1 << 10 {
		if _, err := f.Write(data[off : off+1<<10]); err != nil {
			t.Fatal(err)
		}
		p.flush()
	}
	if p.published != 200<<10 || p.truncated || len(p.tail) != 150 {
		t.Fatalf("at the cap: published %d, truncated %v, %d tail chunks", p.published, p.truncated, len(p.tail))
	}
	// 140 KiB more: 140 of those chunks go, more than one transaction deletes.
	if _, err := f.Write(data[200<<10:]); err != nil {
		t.Fatal(err)
	}
	p.flush()
	p.flush()
	omitted := 140 << 10
	if !p.truncated || p.omitted != int64(omitted) || p.tailBytes != 150<<10 {
		t.Fatalf("beyond the cap: truncated %v, omitted %d (want %d), tail %d bytes", p.truncated, p.omitted, omitted, p.tailBytes)
	}
	kvs, _, err := s.List(ctx, LogChunksPrefix("x"))
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	for _, kv := range kvs {
		if len(kv.Value) > LogChunkBytes {
			t.Errorf("chunk %s has %d bytes", kv.Key, len(kv.Value))
		}
		got = append(got, kv.Value...)
	}
	head, tail := data[:50<<10], data[len(data)-150<<10:]
	if !bytes.HasPrefix(got, head) || !bytes.HasSuffix(got, tail) || int64(len(got)) != p.published {
		t.Fatalf("published %d bytes (counted %d), not the first 50 KiB and the last 150 KiB of the output", len(got), p.published)
	}
	note := string(got[len(head) : len(got)-len(tail)])
	if want := fmt.Sprintf("... %d bytes omitted ...", omitted); !strings.Contains(note, want) || !strings.Contains(note, path) {
		t.Errorf("the note between head and tail: %q, want it to say %q and name %s", note, want, path)
	}

	// ReadLog prints head, note and tail; the follower that was there from the start got
	// everything, and its follow ends at the end marker.
	var out bytes.Buffer
	if _, err := ReadLog(ctx, s, "x", &out, false); err != nil || !bytes.Equal(out.Bytes(), got) {
		t.Fatalf("ReadLog: %d bytes, %v", out.Len(), err)
	}
	eventually.True(t, 10*time.Second, "the follower to print the whole output", func() bool { return followed.Len() == len(data) })
	end, _ := json.Marshal(LogEnd{Bytes: p.published, Truncated: true, Omitted: p.omitted})
	if _, err := s.Put(ctx, LogEndKey("x"), end, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil || !bytes.Equal(followed.Bytes(), data) {
			t.Errorf("follow: %d bytes (want the %d of the output), %v", followed.Len(), len(data), err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("follow did not end at the end marker")
	}
	// A read that goes on after a chunk prints only what follows it.
	out.Reset()
	_, last, err := ReadLogAfter(ctx, s, "x", &out, false, p.seq-1)
	if err != nil || last != p.seq || !bytes.Equal(out.Bytes(), kvs[len(kvs)-1].Value) {
		t.Errorf("ReadLogAfter the last chunk but one: last %d (want %d), %d bytes (want %d), %v", last, p.seq, out.Len(), len(kvs[len(kvs)-1].Value), err)
	}
}

// downStore is a store whose reads fail once down is set (its GCS stopped answering).
type downStore struct {
	gcs.Store
	down atomic.Bool
}

func (d *downStore) Get(ctx context.Context, key string) (gcs.KV, bool, error) {
	if d.down.Load() {
		return gcs.KV{}, false, errors.New("context deadline exceeded")
	}
	return d.Store.Get(ctx, key)
}

// A follow of a running job's log whose GCS stops answering (the head died) ends with
// ErrGCSLost: it waited for ever (rayctl job submit and job logs --follow hung).
func TestFollowGivesUpOnALostGCS(t *testing.T) {
	defer func(d time.Duration) { FollowLostAfter = d }(FollowLostAfter)
	FollowLostAfter = 2 * time.Second
	mem := memstore.New(memstore.Options{})
	defer mem.Close()
	s := &downStore{Store: mem}
	b, _ := proto.Marshal(&pb.Submission{SubmissionId: "lost", State: pb.JobInfo_RUNNING})
	if _, err := mem.Put(context.Background(), gcs.SubmissionKey("lost"), b, 0); err != nil {
		t.Fatal(err)
	}
	followed := make(chan error, 1)
	go func() {
		_, err := ReadLog(context.Background(), s, "lost", io.Discard, true)
		followed <- err
	}()
	time.Sleep(1500 * time.Millisecond) // checked at least once while the GCS answers
	select {
	case err := <-followed:
		t.Fatalf("the follow of a running job ended: %v", err)
	default:
	}
	s.down.Store(true)
	select {
	case err := <-followed:
		if !errors.Is(err, ErrGCSLost) || !strings.Contains(err.Error(), "rayctl job status lost") {
			t.Fatalf("the follow ended with %v, want ErrGCSLost saying what to do", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the follow still waits 30 s after the GCS stopped answering")
	}
}
