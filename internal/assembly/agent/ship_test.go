package agent

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/internal/base/ship"
)

// holdHelper puts the helper binary in the GCS as a driver does (ship.Hold) until the test
// ends.
func holdHelper(t *testing.T, s gcs.Store) {
	t.Helper()
	b, err := os.ReadFile(helperPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done, err := ship.Hold(ctx, s, helperSum, bytes.NewReader(b), int64(len(b)), ship.MaxExecutableBytes, quiet())
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// A job whose executable is not on this machine: the agent fetches it by hash from the
// GCS, verifies it, caches it in <session>/bin/<sha256> (0700) and runs it from there; a
// later job of the same build starts from the cache, without the GCS's copy.
func TestWorkerShippedExecutable(t *testing.T) {
	head := startAgent(t, Config{Head: true})
	s := head.Store()
	holdHelper(t, s)
	rec := t.TempDir()
	gone := filepath.Join(t.TempDir(), "removed", "driver")
	job(t, s, "js1", func(j *pb.JobInfo) { j.Executable = gone }, "-record", rec)
	var pid int
	eventually.True(t, 30*time.Second, "js1's worker", func() bool {
		rs := records(t, rec)
		if len(rs) == 1 {
			pid = rs[0].Pid
		}
		return len(rs) == 1
	})
	cached := filepath.Join(head.cfg.SessionDir, "bin", helperSum)
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil || exe != cached {
		t.Fatalf("the worker runs %q (%v), want the cached %s", exe, err, cached)
	}
	for path, want := range map[string]os.FileMode{cached: 0o700, filepath.Dir(cached): 0o700} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %v", path, fi.Mode(), err, want)
		}
	}

	// The GCS's copy goes: a new job of the same build still starts, from the cache.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, _, err := s.Txn(ctx, nil, []gcs.Op{{Kind: gcs.OpDeletePrefix, Key: gcs.BlobsPrefix}}); err != nil {
		t.Fatal(err)
	}
	rec2 := t.TempDir()
	job(t, s, "js2", func(j *pb.JobInfo) { j.Executable = gone }, "-record", rec2)
	eventually.True(t, 30*time.Second, "js2's worker, from the cache", func() bool { return len(records(t, rec2)) == 1 })
}

// A blob damaged in the GCS is fetched, fails verification, and is never run: the job's
// worker record says what was wrong, the cache keeps nothing.
func TestWorkerShippedCorrupt(t *testing.T) {
	head := startAgent(t, Config{Head: true})
	s := head.Store()
	holdHelper(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kvs, _, err := s.List(ctx, gcs.BlobsPrefix+"c/"+helperSum+"/")
	if err != nil || len(kvs) == 0 {
		t.Fatalf("the blob's chunks: %d, %v", len(kvs), err)
	}
	v := bytes.Clone(kvs[0].Value)
	v[len(v)/2] ^= 0x40
	if _, err := s.Put(ctx, kvs[0].Key, v, kvs[0].Lease); err != nil {
		t.Fatal(err)
	}
	rec := t.TempDir()
	job(t, s, "jc1", func(j *pb.JobInfo) { j.Executable = "/nonexistent/driver" }, "-record", rec)
	var w *pb.JobWorker
	eventually.True(t, 30*time.Second, "jc1 UNSUPPORTED", func() bool {
		w, _ = get(t, s, gcs.JobWorkerKey("jc1", head.ID()), &pb.JobWorker{})
		return w.GetState() == pb.JobWorker_UNSUPPORTED
	})
	msg := w.GetMessage()
	if !strings.Contains(msg, "failed verification") || !strings.Contains(msg, helperSum) || !strings.Contains(msg, "not run") {
		t.Errorf("message %q does not say the fetched executable failed verification", msg)
	}
	if rs := records(t, rec); len(rs) != 0 {
		t.Fatalf("a worker ran from unverified bytes: %v", rs)
	}
	if ents, _ := os.ReadDir(filepath.Join(head.cfg.SessionDir, "bin")); len(ents) != 0 {
		t.Fatalf("the cache kept %v", ents)
	}
}
