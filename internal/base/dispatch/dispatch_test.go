package dispatch

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
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

// TestCounterTap: a counted mailbox counts every message it handles and, with a Tap, tells
// it each message with the role the mailbox was made for; without one it only counts.
func TestCounterTap(t *testing.T) {
	type msg struct{ n int }
	var mu sync.Mutex
	got := map[string][]int{}
	c := &Counter{Tap: func(role string, m any) {
		if v, ok := m.(msg); ok {
			mu.Lock()
			got[role] = append(got[role], v.n)
			mu.Unlock()
		}
	}}
	plain := &Counter{}
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	var done sync.WaitGroup
	spawn := func(p actor.MailboxProducer) *actor.PID {
		return sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
			if _, ok := ctx.Message().(msg); ok {
				done.Done()
			}
		}, actor.WithMailbox(p)))
	}
	a, b, q := spawn(c.MailboxFor("raylet")), spawn(c.Mailbox()), spawn(plain.Mailbox())
	done.Add(5)
	sys.Root.Send(a, msg{1})
	sys.Root.Send(a, msg{2})
	sys.Root.Send(b, msg{3})
	sys.Root.Send(q, msg{4})
	sys.Root.Send(q, msg{5})
	waitOrFail(t, &done)
	// The handled count is taken after the handler returns: wait for it, bounded.
	for i := 0; i < 500 && (c.Handled() < 3 || plain.Handled() < 2); i++ {
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got["raylet"]) != 2 || got["raylet"][0] != 1 || got["raylet"][1] != 2 || len(got[""]) != 1 || got[""][0] != 3 {
		t.Fatalf("tapped %v, want raylet: [1 2], \"\": [3]", got)
	}
	// Each counter counts its own mailboxes' messages, the Started system message included.
	if h := c.Handled(); h < 3 {
		t.Fatalf("counted %d messages, want at least the 3 sent", h)
	}
	if h := plain.Handled(); h < 2 {
		t.Fatalf("the untapped counter counted %d messages, want at least the 2 sent", h)
	}
}
