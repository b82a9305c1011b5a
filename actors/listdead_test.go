package actors_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	ray "github.com/ray-go/ray"
	"github.com/ray-go/ray/internal/assembly/testcluster"
	"github.com/ray-go/ray/internal/base/gcs"
)

// slowStart is an actor whose constructor waits d, or until it is killed.
type slowStart struct{ D time.Duration }

var (
	slowStartClass = ray.Actor1("actors_test.SlowStart", func(ctx context.Context, d time.Duration) (*slowStart, error) {
		select {
		case <-time.After(d):
			return &slowStart{D: d}, nil
		case <-ctx.Done():
			return &slowStart{}, nil
		}
	})
	slowStartGet = ray.Method0(slowStartClass, "Get", func(s *slowStart, _ context.Context) (time.Duration, error) { return s.D, nil })
)

// gatedList holds the first list of the actor table until open is closed: the node's
// actor manager reads the table late, as a manager slowed down on a busy machine does.
type gatedList struct {
	gcs.Store
	open chan struct{}
	once sync.Once
}

func (g *gatedList) List(ctx context.Context, prefix string) ([]gcs.KV, int64, error) {
	if prefix == gcs.ActorsPrefix {
		first := false
		g.once.Do(func() { first = true })
		if first {
			select {
			case <-g.open:
			case <-ctx.Done():
				return nil, 0, ctx.Err()
			}
		}
	}
	return g.Store.List(ctx, prefix)
}

// TestKilledBeforeTheManagerListed: an actor killed before its node's actor manager first
// listed the actor table (the manager late, the actor still pending) is dead for a caller
// made afterwards: its call fails with ErrActorDied and its state says Dead, rather than
// the call waiting for a record that will never change again (the list read the record
// dead, and the manager once dropped such a record without a trace).
func TestKilledBeforeTheManagerListed(t *testing.T) {
	base, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	gate := &gatedList{open: make(chan struct{})}
	opened := false
	open := func() {
		if !opened {
			opened = true
			close(gate.open)
		}
	}
	defer open()
	c, err := testcluster.Start(base, testcluster.Config{Nodes: 1, WrapGCS: func(s gcs.Store) gcs.Store {
		gate.Store = s
		return gate
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		open()
		if err := c.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	ctx := c.Context(base, 0)

	h := slowStartClass.Remote(ctx, ray.V(time.Hour))
	st, err := ray.GetActorState(ctx, h)
	if err != nil || st.Phase != ray.ActorPending {
		t.Fatalf("before the kill: state %+v, %v; want Pending", st, err)
	}
	if err := ray.Kill(ctx, h, true); err != nil {
		t.Fatal(err)
	}
	open()
	callCtx, callCancel := context.WithTimeout(ctx, 30*time.Second)
	defer callCancel()
	if _, err := ray.Get(callCtx, slowStartGet.Remote(callCtx, h)); !errors.Is(err, ray.ErrActorDied) {
		t.Fatalf("a call after the kill: %v, want ErrActorDied", err)
	}
	if st, err := ray.GetActorState(ctx, h); err != nil || st.Phase != ray.ActorDead {
		t.Fatalf("after the kill: state %+v, %v; want Dead", st, err)
	}
}
