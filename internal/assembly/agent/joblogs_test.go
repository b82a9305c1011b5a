package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
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
