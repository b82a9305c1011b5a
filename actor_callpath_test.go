package ray

import (
	"fmt"
	"sync"
	"testing"
)

// TestActorCallsKeepOrderAcrossSendPaths: calls go to an actor straight from their
// submitter when nothing of their caller is ahead of them, and through the caller's shard
// in batches otherwise (internal/assembly/core, sendDirect). Submitters sharing one
// caller, alternating single calls with bursts (so both paths, and a direct send right
// after a batch, are taken), see every call run exactly once and each submitter's calls
// in its order; checkpoints asked for in between, and a restart of the exactly-once
// actor afterwards (its checkpoint and log replayed), keep that history.
func TestActorCallsKeepOrderAcrossSendPaths(t *testing.T) {
	bothModes(t, func(t *testing.T, opts ...TaskOption) {
		ctx := timeout(t)
		h := accountClass.Remote(ctx, V("paths"), append([]TaskOption{MaxRestarts(1)}, opts...)...)
		const submitters, rounds, burst = 4, 12, 20
		var wg sync.WaitGroup
		errs := make(chan error, submitters)
		var sum int64
		var mu sync.Mutex
		for g := range submitters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n := int64(0)
				next := func() int64 { n++; return int64(g+1)*1_000_000 + n }
				var mine int64
				for r := range rounds {
					var last ObjectRef[int64]
					k := 1
					if r%2 == 1 {
						k = burst
					}
					for range k {
						v := next()
						mine += v
						last = deposit.Remote(ctx, h, V(v))
					}
					if _, err := Get(ctx, last); err != nil {
						errs <- fmt.Errorf("submitter %d, round %d: %w", g, r, err)
						return
					}
					if g == 0 && r%4 == 3 {
						if err := Checkpoint(ctx, h); err != nil {
							errs <- fmt.Errorf("checkpoint: %w", err)
							return
						}
					}
				}
				mu.Lock()
				sum += mine
				mu.Unlock()
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		check := func(when string) {
			t.Helper()
			hist := mustGet(t, ctx, history.Remote(ctx, h))
			want := submitters * (rounds / 2) * (1 + burst)
			if len(hist) != want {
				t.Fatalf("%s: %d calls ran, want %d (each once)", when, len(hist), want)
			}
			last := map[int64]int64{}
			var total int64
			for _, v := range hist {
				g, i := v/1_000_000, v%1_000_000
				if i != last[g]+1 {
					t.Fatalf("%s: submitter %d's call %d ran after its call %d", when, g-1, i, last[g])
				}
				last[g] = i
				total += v
			}
			if total != sum {
				t.Fatalf("%s: the calls that ran add up to %d, want %d", when, total, sum)
			}
			if got := mustGet(t, ctx, balance.Remote(ctx, h)); got != sum {
				t.Fatalf("%s: balance %d, want %d", when, got, sum)
			}
		}
		check("after the calls")
		if len(opts) > 0 {
			return // an at-most-once actor restarts from its last checkpoint: calls after it are gone
		}
		if err := Kill(ctx, h, false); err != nil {
			t.Fatal(err)
		}
		check("after a restart")
	})
}
