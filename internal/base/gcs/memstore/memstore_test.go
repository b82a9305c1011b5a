package memstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/gcstest"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
)

func TestConformance(t *testing.T) {
	gcstest.Run(t, func(t *testing.T) gcs.Store { return memstore.New(memstore.Options{}) })
}

// With a ManualClock, lease expiry happens exactly when the clock passes the TTL.
func TestManualClockExpiry(t *testing.T) {
	ctx := context.Background()
	clock := memstore.NewManualClock(time.Unix(1000, 0))
	s := memstore.New(memstore.Options{Clock: clock})
	defer s.Close()

	short, _ := s.Grant(ctx, 1500*time.Millisecond) // rounds up to 2 s
	kept, _ := s.Grant(ctx, time.Second)
	for key, id := range map[string]gcs.LeaseID{"short": short, "kept": kept} {
		if _, err := s.Put(ctx, key, []byte("v"), id); err != nil {
			t.Fatal(err)
		}
	}
	kctx, stop := context.WithCancel(ctx)
	defer stop()
	lost, err := s.KeepAlive(kctx, kept)
	if err != nil {
		t.Fatal(err)
	}
	present := func(key string) bool {
		_, ok, err := s.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	steps := []struct {
		advance     time.Duration
		stop        bool
		short, kept bool
	}{
		{1999 * time.Millisecond, false, true, true},
		{time.Millisecond, false, false, true}, // 2 s: short expires
		{time.Hour, false, false, true},        // kept alive
		{0, true, false, true},                 // keep-alive stops: TTL restarts now
		{999 * time.Millisecond, false, false, true},
		{time.Millisecond, false, false, false},
	}
	for i, st := range steps {
		if st.stop {
			stop()
			<-lost
		}
		clock.Advance(st.advance)
		if got := [2]bool{present("short"), present("kept")}; got != [2]bool{st.short, st.kept} {
			t.Fatalf("step %d: present(short, kept) = %v, want %v", i, got, [2]bool{st.short, st.kept})
		}
	}
	if err := s.Revoke(ctx, kept); !errors.Is(err, gcs.ErrLeaseNotFound) {
		t.Fatalf("Revoke of expired lease: %v", err)
	}
}
