package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

func TestLogPublisherChunksAndCap(t *testing.T) {
	s := memstore.New(memstore.Options{})
	defer s.Close()
	path := filepath.Join(t.TempDir(), "out.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data := bytes.Repeat([]byte("0123456789abcdef"), 300<<10/16) // 300 KiB
	// Written in two steps, published in between: nothing is lost or doubled.
	if _, err := f.Write(data[:150<<10]); err != nil {
		t.Fatal(err)
	}
	p := &logPublisher{store: s, id: "x", path: path, max: 200 << 10}
	p.flush()
	if p.published != 150<<10 || p.truncated {
		t.Fatalf("after the first flush: published %d truncated %v", p.published, p.truncated)
	}
	if _, err := f.Write(data[150<<10:]); err != nil {
		t.Fatal(err)
	}
	p.flush()
	p.flush()
	if !p.truncated {
		t.Fatal("not truncated at the cap")
	}
	ctx := context.Background()
	kvs, _, err := s.List(ctx, LogChunksPrefix("x"))
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	for i, kv := range kvs {
		if len(kv.Value) > LogChunkBytes {
			t.Errorf("chunk %s has %d bytes", kv.Key, len(kv.Value))
		}
		if seq, end, ok := parseChunkKey("x", kv.Key); !ok || end || seq != uint64(i+1) {
			t.Errorf("key %s at %d", kv.Key, i)
		}
		got = append(got, kv.Value...)
	}
	if !bytes.HasPrefix(got, data[:200<<10]) || !strings.Contains(string(got[200<<10:]), "truncated after 204800 bytes") {
		t.Errorf("published %d bytes: %q...", len(got), got[min(len(got), 200<<10):])
	}

	// ReadLog prints the chunks; with the end marker a follow ends.
	var out bytes.Buffer
	if _, err := ReadLog(ctx, s, "x", &out, false); err != nil || !bytes.Equal(out.Bytes(), got) {
		t.Fatalf("ReadLog: %d bytes, %v", out.Len(), err)
	}
	done := make(chan error, 1)
	followed := &lockedBuffer{}
	go func() {
		_, err := ReadLog(ctx, s, "x", followed, true)
		done <- err
	}()
	// The follower printed what there is, so it follows now: then the end marker comes.
	eventually.True(t, 10*time.Second, "the follower to print the log so far", func() bool { return followed.Len() == len(got) })
	end, _ := json.Marshal(LogEnd{Bytes: p.published, Truncated: true})
	if _, err := s.Put(ctx, LogEndKey("x"), end, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil || !bytes.Equal(followed.Bytes(), got) {
			t.Errorf("follow: %d bytes, %v", followed.Len(), err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("follow did not end at the end marker")
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
