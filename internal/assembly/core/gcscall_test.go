package core

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/actors"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// goneGCS is a GCS that stopped answering: its reads wait for their context.
type goneGCS struct{ gcs.Store }

func (goneGCS) Get(ctx context.Context, key string) (gcs.KV, bool, error) {
	<-ctx.Done()
	return gcs.KV{}, false, ctx.Err()
}

// TestStateCallsEndWithTheCluster: ActorState, LookupActor and KillActor wait on a GCS
// that stopped answering only until the runtime is lost (Lose), and then fail with the
// loss's error (ErrClusterLost), as Gets do; after the loss they fail at once. With no
// deadline of the caller's, GetActorState waited for good after the driver's Gets had
// failed with ErrClusterLost.
func TestStateCallsEndWithTheCluster(t *testing.T) {
	h := newHarness(t)
	mem := memstore.New(memstore.Options{})
	t.Cleanup(func() { mem.Close() })
	h.c.cfg.Actors = &ActorConfig{Table: &actors.Table{Store: goneGCS{mem}},
		Info: func(string) (*pb.ActorInfo, bool) { return nil, false },
		PID:  func(string) *actor.PID { return nil }}
	id := ids.NewActorID()
	calls := map[string]func() error{
		"ActorState": func() error { _, _, err := h.c.ActorState(context.Background(), id); return err },
		"LookupActor": func() error {
			_, _, _, err := h.c.LookupActor(context.Background(), "ns", "a")
			return err
		},
		"KillActor": func() error { return h.c.KillActor(context.Background(), id, true) },
	}
	errc := make(chan error, len(calls))
	for _, f := range calls {
		go func() { errc <- f() }()
	}
	time.Sleep(100 * time.Millisecond) // the calls wait on the GCS
	h.c.Lose(nil)
	for range calls {
		select {
		case err := <-errc:
			if !errors.Is(err, ErrClusterLost) {
				t.Errorf("a state call as the runtime was lost: %v, want ErrClusterLost", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("a state call waiting on a GCS that is gone did not end when the runtime was lost")
		}
	}
	for name, f := range calls {
		if err := f(); !errors.Is(err, ErrClusterLost) {
			t.Errorf("%s after the loss: %v, want ErrClusterLost at once", name, err)
		}
	}
}
