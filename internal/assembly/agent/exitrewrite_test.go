package agent

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
	"github.com/ray-go/ray/internal/base/pb"
)

// downForPuts is a GCS whose writes fail while down is set (the head is down).
type downForPuts struct {
	gcs.Store
	down *atomic.Bool
}

func (s downForPuts) Put(ctx context.Context, key string, value []byte, lease gcs.LeaseID) (int64, error) {
	if s.down.Load() {
		return 0, errors.New("etcdserver: request timed out")
	}
	return s.Store.Put(ctx, key, value, lease)
}

// TestExitRecordWrittenOnceTheGCSIsBack: a worker process's EXITED record that could not
// be written (the GCS was down as it exited) is written at a later tick once the GCS
// answers, with the time the process exited; `rayctl list workers` showed it RUNNING for
// minutes after the head came back. A newer process of the job supersedes it.
func TestExitRecordWrittenOnceTheGCSIsBack(t *testing.T) {
	mem := memstore.New(memstore.Options{})
	t.Cleanup(func() { mem.Close() })
	var down atomic.Bool
	down.Store(true)
	m := &workerManager{a: &Agent{id: "a1", store: downForPuts{mem, &down}, cfg: Config{SessionDir: t.TempDir()}, log: testLogger(t)},
		workers: map[string]*worker{}}
	ctx := context.Background()
	exitAt := time.Now().Add(-time.Minute)
	if m.putWorkerRecAt(ctx, "j1", pb.JobWorker_EXITED, 42, "worker killed", "killed by signal killed", exitAt) {
		t.Fatal("a write to a GCS that is down reported written")
	}
	m.rewriteExits(ctx) // still down
	if _, found, _ := mem.Get(ctx, gcs.JobWorkerKey("j1", "a1")); found {
		t.Fatal("a record was written while the GCS was down")
	}
	down.Store(false)
	m.rewriteExits(ctx)
	kv, found, err := mem.Get(ctx, gcs.JobWorkerKey("j1", "a1"))
	if err != nil || !found {
		t.Fatalf("the EXITED record was not written once the GCS was back: %v %v", found, err)
	}
	rec, err := decodeJobWorker("j1", "a1", kv.Value)
	if err != nil || rec.GetState() != pb.JobWorker_EXITED || rec.GetPid() != 42 || rec.GetExitUnixMs() != exitAt.UnixMilli() {
		t.Fatalf("the record written: %v (%v), want EXITED pid 42 exited at %d", rec, err, exitAt.UnixMilli())
	}
	if len(m.unwritten) != 0 {
		t.Fatalf("records still waiting: %v", m.unwritten)
	}

	// A newer process of the job supersedes an unwritten record.
	down.Store(true)
	m.putWorkerRecAt(ctx, "j2", pb.JobWorker_EXITED, 7, "worker killed", "", exitAt)
	m.workers["j2"] = &worker{job: "j2", p: &proc{pid: 8}}
	down.Store(false)
	m.rewriteExits(ctx)
	if _, found, _ := mem.Get(ctx, gcs.JobWorkerKey("j2", "a1")); found || len(m.unwritten) != 0 {
		t.Fatalf("an EXITED record of an older process was written over a newer one's (found %v, waiting %v)", found, m.unwritten)
	}
}
