package dispatch

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestPoolRunsEverythingEvenWhenBusy(t *testing.T) {
	p := New(2, 0)
	if p.Throughput() != DefaultThroughput {
		t.Fatalf("throughput %d", p.Throughput())
	}
	// Two blocked functions occupy the pool; more work must still run.
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(2)
	for i := 0; i < 2; i++ {
		p.Schedule(func() { started.Done(); <-release })
	}
	var ran atomic.Int32
	var done sync.WaitGroup
	done.Add(100)
	for i := 0; i < 100; i++ {
		p.Schedule(func() { ran.Add(1); done.Done() })
	}
	waitOrFail(t, &done)
	close(release)
	started.Wait()
	p.Close()
	// After Close, Schedule still runs fn.
	done.Add(1)
	p.Schedule(func() { ran.Add(1); done.Done() })
	waitOrFail(t, &done)
	if ran.Load() != 101 {
		t.Fatalf("ran %d functions, want 101", ran.Load())
	}
}

func waitOrFail(t *testing.T, wg *sync.WaitGroup) {
	t.Helper()
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("scheduled functions did not all run")
	}
}

// TestPoolLanesRunEverything: with one lane per core, functions scheduled from many
// goroutines at once all run, on the pool or on fallback goroutines (run with -race).
func TestPoolLanesRunEverything(t *testing.T) {
	p := New(8, 0)
	if len(p.lanes) < 1 || len(p.lanes) > 4 {
		t.Fatalf("%d lanes for 8 goroutines, want 1..4", len(p.lanes))
	}
	var ran atomic.Int64
	var done sync.WaitGroup
	const senders, each = 8, 500
	done.Add(senders * each)
	for s := 0; s < senders; s++ {
		go func() {
			for i := 0; i < each; i++ {
				p.Schedule(func() { ran.Add(1); done.Done() })
			}
		}()
	}
	waitOrFail(t, &done)
	p.Close()
	if ran.Load() != senders*each {
		t.Fatalf("ran %d functions, want %d", ran.Load(), senders*each)
	}
}
