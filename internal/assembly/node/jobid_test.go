package node

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/etcdstore"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// TestDriverDrawsAnotherJobIDOnACollision: a driver whose drawn job ID is another job's
// leaves that job's record as it was and registers its job under a new ID (the record
// was written with an unconditional Put: the other job's record was overwritten, and the
// two jobs would have shared worker processes).
func TestDriverDrawsAnotherJobIDOnACollision(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e, err := etcdstore.StartEmbedded(ctx, etcdstore.EmbedConfig{Dir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	st := e.Client()
	const taken, fresh = ids.JobID("0badf00d"), ids.JobID("5eed0001")
	other, _ := proto.Marshal(&pb.JobInfo{JobId: string(taken), State: pb.JobInfo_RUNNING, DriverHost: "elsewhere", DriverPid: 1})
	if _, err := st.Put(ctx, gcs.JobKey(string(taken)), other, 0); err != nil {
		t.Fatal(err)
	}
	draws := []ids.JobID{taken, fresh}
	defer func(f func() ids.JobID) { newJobID = f }(newJobID)
	newJobID = func() ids.JobID {
		if len(draws) == 0 {
			return ids.NewJobID()
		}
		j := draws[0]
		draws = draws[1:]
		return j
	}
	// (The etcd client is in-process, and the node's remote synced with etcd's gRPC
	// server: a second gRPC client in this process races with protoactor's remote.Start,
	// see syncGRPCServer.)
	n, err := startDriver(ctx, Config{Role: RoleDriver, GCS: st, SyncAddrs: e.Endpoints(), Host: "127.0.0.1", Dir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, JoinConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop(context.Background())
	if n.cfg.Job != fresh {
		t.Errorf("the driver's job is %s, want %s (drawn again)", n.cfg.Job, fresh)
	}
	if kv, ok, err := st.Get(ctx, gcs.JobKey(string(taken))); err != nil || !ok || !bytes.Equal(kv.Value, other) {
		t.Errorf("the other job's record: %v %v, changed (want it as it was)", ok, err)
	}
	kv, ok, err := st.Get(ctx, gcs.JobKey(string(fresh)))
	if err != nil || !ok {
		t.Fatalf("no record of the job under the ID drawn again: %v %v", ok, err)
	}
	var mine pb.JobInfo
	if err := proto.Unmarshal(kv.Value, &mine); err != nil || mine.DriverPid != int32(os.Getpid()) {
		t.Errorf("the record under the new ID: %+v %v, want this driver's", &mine, err)
	}
}
