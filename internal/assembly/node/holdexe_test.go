package node

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
)

// deafStore is a GCS whose writes never answer (the head died as the upload ran, and the
// client waits for it to come back): they return only when their context ends.
type deafStore struct{ gcs.Store }

func (deafStore) Put(ctx context.Context, key string, value []byte, lease gcs.LeaseID) (int64, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

func (deafStore) Txn(ctx context.Context, cmps []gcs.Cmp, ops []gcs.Op) (bool, int64, error) {
	<-ctx.Done()
	return false, 0, ctx.Err()
}

// TestHoldExecutableEndsWithInitOrTheCluster: the upload of the driver's executable (Init's
// Join) whose GCS stops answering ends when Init's ctx ends, and when the driver takes its
// cluster for lost (gcsLost), with an error that says so (ErrClusterLost). It ran on a
// context cut off from Init's, so Init hung for good although the driver had logged "lost
// the cluster".
func TestHoldExecutableEndsWithInitOrTheCluster(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "prog")
	if err := os.WriteFile(exe, []byte(strings.Repeat("x", 3<<20)), 0o700); err != nil {
		t.Fatal(err)
	}
	mem := memstore.New(memstore.Options{})
	t.Cleanup(func() { mem.Close() })
	newNode := func() *Node {
		n := &Node{store: deafStore{mem}, cfg: Config{Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))}}
		n.lostCtx, n.loseCtx = context.WithCancelCause(context.Background())
		return n
	}
	hold := func(n *Node, ctx context.Context) error {
		errc := make(chan error, 1)
		go func() {
			_, err := n.holdExecutable(ctx, exe)
			errc <- err
		}()
		select {
		case err := <-errc:
			return err
		case <-time.After(20 * time.Second):
			t.Fatal("holdExecutable did not return within 20 s of its end")
			return nil
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := hold(newNode(), ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("upload past Init's deadline: %v, want context.DeadlineExceeded", err)
	}

	n := newNode()
	time.AfterFunc(200*time.Millisecond, func() { n.gcsLost(time.Minute) })
	if err := hold(n, context.Background()); !errors.Is(err, core.ErrClusterLost) {
		t.Errorf("upload as the driver lost its cluster: %v, want core.ErrClusterLost", err)
	}
}
