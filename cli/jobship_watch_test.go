package cli

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
)

// goneStore is a GCS that stopped answering: every call waits for its context.
type goneStore struct{ gcs.Store }

func (goneStore) Revision(ctx context.Context) (int64, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

// TestUploadWatchedEndsWhenTheGCSIsGone: an upload to a GCS that stopped answering (its
// head died as `rayctl job submit` sent the program) ends once the probes fail, with an
// error that says the GCS stopped answering and what to do, not at the upload's deadline
// with "context deadline exceeded"; an upload to a GCS that answers is not cut.
func TestUploadWatchedEndsWhenTheGCSIsGone(t *testing.T) {
	defer func(e time.Duration) { gcsProbeEvery = e }(gcsProbeEvery)
	gcsProbeEvery = 50 * time.Millisecond
	mem := memstore.New(memstore.Options{})
	defer mem.Close()
	stuck := func(ctx context.Context, _ gcs.Store) error { <-ctx.Done(); return ctx.Err() }

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := uploadWatched(ctx, goneStore{mem}, "127.0.0.1:9", stuck)
	if err == nil || !strings.Contains(err.Error(), "the GCS at 127.0.0.1:9 stopped answering") || !strings.Contains(err.Error(), "rayctl start --head") {
		t.Fatalf("upload to a GCS that stopped answering: %v, want it to say so", err)
	}

	// A GCS that answers: the upload runs to its end.
	done := 0
	slow := func(ctx context.Context, _ gcs.Store) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(400 * time.Millisecond):
			done++
			return nil
		}
	}
	if err := uploadWatched(ctx, mem, "127.0.0.1:9", slow); err != nil || done != 1 {
		t.Fatalf("upload to a GCS that answers: %v (done %d), want it to finish", err, done)
	}
	// The caller's own end is its error, unchanged.
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if err := uploadWatched(cctx, mem, "127.0.0.1:9", stuck); !errors.Is(err, context.Canceled) {
		t.Fatalf("upload whose context was cancelled: %v, want context.Canceled", err)
	}
}
