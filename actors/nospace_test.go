package actors_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	ray "github.com/ray-go/ray"
	"github.com/ray-go/ray/internal/assembly/testcluster"
	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/etcdstore"
)

// quotaCounter is an exactly-once actor (the default) whose state the codec keeps whole, so
// it checkpoints by itself.
type quotaCounter struct{ N int }

var (
	quotaCounterClass = ray.Actor("actors_test.QuotaCounter", func() *quotaCounter { return &quotaCounter{} })
	quotaCounterAdd   = ray.Method1(quotaCounterClass, "Add", func(c *quotaCounter, _ context.Context, n int) (int, error) {
		c.N += n
		return c.N, nil
	})
)

// TestCallsFailAtTheGCSQuota: on a real embedded etcd with a small quota, filled up, calls
// to an exactly-once actor fail with an error that says the GCS is full (after a short
// retry, not a silent wait), and do not run: once space is freed, the actor's state holds
// only the calls that were answered with a result, also after a restart replays its log.
func TestCallsFailAtTheGCSQuota(t *testing.T) {
	base, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const quota = 24 << 20
	c, err := testcluster.Start(base, testcluster.Config{Nodes: 1, TuneGCS: func(e *etcdstore.EmbedConfig) {
		e.QuotaBytes = quota
		e.UnsafeNoFsync = true
		// A rewrite at the alarm every 2 s, not every 500 ms: each blocks the member's
		// writes while it copies the file (over a second under -race on a slow machine),
		// and a member rewriting back to back answers every log write with a timeout,
		// never with the quota error the calls must fail with (CI saw that: the calls
		// waited, as they should for a timeout, and ran once space was freed).
		e.DefragEvery, e.AlarmDefragEvery, e.DefragMinBytes = 500*time.Millisecond, 2*time.Second, 1
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	ctx := c.Context(base, 0)

	h := quotaCounterClass.Remote(ctx, ray.MaxRestarts(1))
	if n, err := ray.Get(ctx, quotaCounterAdd.Remote(ctx, h, ray.V(1))); err != nil || n != 1 {
		t.Fatalf("first call: %d, %v", n, err)
	}

	// Fill the GCS up to its quota, so that it stays full: a defragmentation (every 2 s
	// while the space alarm is on) disarms the alarm when the file it rewrites is under 90%
	// of the quota, so fill again until a write fails after one had the time to run.
	junk := bytes.Repeat([]byte{'x'}, 1<<20)
	stable, i := false, 0
	for round := 0; round < 20 && !stable; round++ {
		for ; i < 4*quota/len(junk); i++ {
			_, err := c.GCS.Put(base, fmt.Sprintf("junk/%04d", i), junk, 0)
			if errors.Is(err, gcs.ErrNoSpace) {
				break
			}
			if err != nil {
				t.Fatalf("put junk %d: %v", i, err)
			}
		}
		// Stable: refused at every probe across several defragmentation periods (one
		// probe could fall just before a defragmentation that disarms the alarm).
		stable = true
		for probe := 0; probe < 5 && stable; probe++ {
			time.Sleep(time.Second)
			_, err := c.GCS.Put(base, "junk/probe", []byte("x"), 0)
			stable = errors.Is(err, gcs.ErrNoSpace)
		}
	}
	if !stable {
		t.Fatalf("the GCS took %d MiB and does not stay at its %d MiB quota", i, quota>>20)
	}

	// Calls that need a method log write fail, saying why; none of them runs.
	cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
	refs := []ray.ObjectRef[int]{
		quotaCounterAdd.Remote(cctx, h, ray.V(10)),
		quotaCounterAdd.Remote(cctx, h, ray.V(100)),
		quotaCounterAdd.Remote(cctx, h, ray.V(1000)),
	}
	for i, r := range refs {
		n, err := ray.Get(cctx, r)
		if err == nil || !strings.Contains(err.Error(), "GCS is at its space quota") || !strings.Contains(err.Error(), "did not run") {
			t.Errorf("call %d at the quota: %d, %v; want an error saying the GCS is at its space quota", i, n, err)
		}
		if !errors.Is(err, ray.ErrGCSFull) || errors.Is(err, ray.ErrActorDied) {
			t.Errorf("call %d at the quota: errors.Is(ErrGCSFull) %v, errors.Is(ErrActorDied) %v; want true, false (%v)",
				i, errors.Is(err, ray.ErrGCSFull), errors.Is(err, ray.ErrActorDied), err)
		}
	}
	ccancel()

	// An actor created at the quota cannot be written: it dies of it, and says so.
	dead := quotaCounterClass.Remote(ctx)
	if _, err := ray.Get(ctx, quotaCounterAdd.Remote(ctx, dead, ray.V(1))); !errors.Is(err, ray.ErrGCSFull) || !errors.Is(err, ray.ErrActorDied) {
		t.Errorf("call to an actor created at the quota: %v; want ErrGCSFull and ErrActorDied", err)
	}
	named := quotaCounterClass.Remote(ctx, ray.Name("at-the-quota"))
	if err := named.Err(); !errors.Is(err, ray.ErrGCSFull) {
		t.Errorf("a named actor created at the quota: %v; want ErrGCSFull", err)
	}

	// Free the space: the embedded GCS defragments and takes writes again.
	_, rev, err := c.GCS.Txn(base, nil, []gcs.Op{{Kind: gcs.OpDeletePrefix, Key: "junk/"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.GCS.Compact(base, rev); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, time.Minute, "the GCS takes writes again", func() bool {
		_, err := c.GCS.Put(base, "junk/probe", []byte("x"), 0)
		return err == nil
	})
	if n, err := ray.Get(ctx, quotaCounterAdd.Remote(ctx, h, ray.V(5))); err != nil || n != 6 {
		t.Fatalf("call after space was freed: %d, %v; want 6 (the failed calls did not run)", n, err)
	}

	// A restart replays the log: the same state, without the failed calls.
	if err := ray.Kill(ctx, h, false); err != nil {
		t.Fatal(err)
	}
	if n, err := ray.Get(ctx, quotaCounterAdd.Remote(ctx, h, ray.V(0))); err != nil || n != 6 {
		t.Fatalf("after a restart: %d, %v; want 6", n, err)
	}
}
