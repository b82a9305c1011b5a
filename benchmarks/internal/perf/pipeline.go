package perf

import (
	"fmt"
	"runtime"
	"sync"
	"time"
)

// pipelineMetric is multi_client_tasks_async's shape in plain Go, no ray-go: what a
// pipeline of goroutines handing work to each other through channels gets from more
// cores on this machine. benchmarks/scale runs it beside the runtime's metrics, so a
// speedup reads against the machine's own ceiling for that shape (on a virtual machine
// where waking an idle core is slow, the ceiling is lower than the core count).
func pipelineMetric() *metric {
	const submitters, items, batch = 4, 1000, 16
	const submit, work, done = 500 * time.Nanosecond, 1500 * time.Nanosecond, 1000 * time.Nanosecond
	return &metric{
		name: "substrate_go_pipeline", unit: "items/s",
		body: "4 goroutines each hand 1,000 items, 16 at a time, through a channel to a goroutine of their own, " +
			"which spends 1.5 µs of CPU on each and sends them back; each spends 0.5 µs submitting and 1 µs completing an item " +
			"(multi_client_tasks_async's shape and per-task CPU, in plain Go)",
		substrate: true,
		setup: func(*env) (*bench, error) {
			return &bench{multiplier: submitters * items, run: func() error {
				var wg sync.WaitGroup
				for range submitters {
					wg.Add(1)
					go func() {
						defer wg.Done()
						in, out := make(chan int, items), make(chan int, items)
						go func() {
							for n := range in {
								spend(time.Duration(n) * work)
								out <- n
							}
							close(out)
						}()
						for i := 0; i < items; i += batch {
							spend(batch * submit)
							in <- batch
						}
						close(in)
						for n := range out {
							spend(time.Duration(n) * done)
						}
					}()
				}
				wg.Wait()
				return nil
			}}, nil
		},
	}
}

// singleMetric is single_client_tasks_async's shape in plain Go, no ray-go: one
// goroutine submits 1,000 items, then takes their results, then gives each back, while
// another goroutine works on them; each item's CPU split as the runtime's task's at one
// core (benchmarks/RESULTS.md, "single_client_tasks_async's ceiling on this VM"). The
// submitter's part is half of the whole, so no scheduler gets it 2x from a second core;
// what this gets from one on a machine is the ceiling of single_client_tasks_async's
// speedup there (with the runtime's split: less of the task on the driver would raise it).
//
// The submitter, like the runtime's Get, polls for a result for a while (yielding its P)
// before it blocks on the channel: without that, every wait would pay the wake-up of an
// idle core, which the runtime avoids.
func singleMetric() *metric {
	const items, batch = 1000, 16
	const submit, work, get, release = 370 * time.Nanosecond, 580 * time.Nanosecond, 100 * time.Nanosecond, 150 * time.Nanosecond
	const poll = 100 * time.Microsecond
	return &metric{
		name: "substrate_go_single", unit: "items/s",
		body: "one goroutine hands 1,000 items, 16 at a time, through a channel to a goroutine " +
			"that spends 0.58 µs of CPU on each and sends them back; the first spends 0.37 µs submitting each, " +
			"then 0.1 µs taking each result (polling up to 100 µs before it blocks), then 0.15 µs giving each back " +
			"(single_client_tasks_async's shape and per-task CPU, in plain Go)",
		substrate: true,
		setup: func(*env) (*bench, error) {
			return &bench{multiplier: items, run: func() error {
				in, out := make(chan int, items), make(chan int, items)
				go func() {
					for n := range in {
						spend(time.Duration(n) * work)
						out <- n
					}
				}()
				for i := 0; i < items; i += batch {
					spend(batch * submit)
					in <- batch
				}
				close(in)
				for got := 0; got < items; {
					n := pollRecv(out, poll)
					spend(time.Duration(n) * get)
					got += n
				}
				spend(items * release)
				return nil
			}}, nil
		},
	}
}

// nnMetric is n_n_actor_calls_async's shape in plain Go, no ray-go: 4 callers each make
// n calls round-robin over nActors() actors (goroutines that each run their calls one at
// a time, in order, and are shared by all the callers), then take all the results, then
// give each back; each call's CPU split as the runtime's call's at one core
// (benchmarks/microbench -only '^n_n_actor_calls_async$' -cpuprofile: 28% the caller's
// submission (callActor), 8% the caller's shard flushing the calls, 20% the actor (3% its
// grain's mailbox turn, 16% runCall and the method), 17% the results (9% on the actor's
// executor, takeLocal; 8% the caller's shard, takeDone), 6% GetAll, 12% the releases, 9%
// the collector and the rest), scaled to the ~1.95 µs a call takes with -quick (1,000
// calls a caller, as benchmarks/scale runs it). Here: what runs on the actor's goroutine
// (executor and grain, takeLocal with it) is the actor's 0.60 µs; the caller's shard is
// folded into its caller, its flush into the submission's 0.78 µs, its takeDone into
// Get's 0.30 µs; releases 0.26 µs; the collector and the rest spread over all four.
//
// A caller's burst leaves in batches (the shard flushes each actor's outbox of whatever
// queued meanwhile, one message a batch; the size is not fixed), here 16 calls an actor
// at a time; each actor sends a batch's results back on its caller's own channel in one
// send. The callers poll for results before they block, as the runtime's Get does
// (singleMetric).
func nnMetric() *metric {
	const batch = 16
	const submit, work, get, release = 780 * time.Nanosecond, 600 * time.Nanosecond, 300 * time.Nanosecond, 260 * time.Nanosecond
	const callers, poll = 4, 100 * time.Microsecond
	type calls struct {
		n     int
		reply chan<- int
	}
	return &metric{
		name: "substrate_go_nn", unit: "calls/s",
		body: fmt.Sprintf("4 goroutines each hand 5,000 items (1,000 with -quick) round-robin, 16 at a time, to %d goroutines shared by all, "+
			"each spending 0.6 µs of CPU on each and sending them back; each of the 4 spends 0.78 µs submitting each, "+
			"then 0.3 µs taking each result (polling up to 100 µs before it blocks), then 0.26 µs giving each back "+
			"(n_n_actor_calls_async's shape and per-call CPU, in plain Go)", nActors()),
		substrate: true,
		setup: func(e *env) (*bench, error) {
			n := e.sizes.actorCalls
			return &bench{multiplier: float64(callers * n), run: func() error {
				actors := make([]chan calls, nActors())
				for i := range actors {
					actors[i] = make(chan calls, callers*n)
					go func() {
						for c := range actors[i] {
							spend(time.Duration(c.n) * work)
							c.reply <- c.n
						}
					}()
				}
				var wg sync.WaitGroup
				for range callers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						out := make(chan int, n)
						// Calls i, i+1, ... go to actors 0, 1, ...: a round of batch calls
						// to each.
						round := batch * len(actors)
						for i := 0; i < n; i += round {
							k := min(round, n-i)
							spend(time.Duration(k) * submit)
							for a, in := range actors {
								in <- calls{n: (k + len(actors) - 1 - a) / len(actors), reply: out}
							}
						}
						for got := 0; got < n; {
							m := pollRecv(out, poll)
							spend(time.Duration(m) * get)
							got += m
						}
						spend(time.Duration(n) * release)
					}()
				}
				wg.Wait()
				for _, in := range actors {
					close(in)
				}
				return nil
			}}, nil
		},
	}
}

// pollRecv receives from ch, first polling it for up to poll (yielding the P between
// tries) as the runtime's Get does, then blocking.
func pollRecv(ch <-chan int, poll time.Duration) int {
	for end := time.Now().Add(poll); time.Now().Before(end); {
		select {
		case n := <-ch:
			return n
		default:
			runtime.Gosched()
		}
	}
	return <-ch
}

// spend keeps the goroutine's core busy for d.
func spend(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}
