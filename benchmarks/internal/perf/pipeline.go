package perf

import (
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
					n, ok := 0, false
					for end := time.Now().Add(poll); !ok && time.Now().Before(end); {
						select {
						case n = <-out:
							ok = true
						default:
							runtime.Gosched()
						}
					}
					if !ok {
						n = <-out
					}
					spend(time.Duration(n) * get)
					got += n
				}
				spend(items * release)
				return nil
			}}, nil
		},
	}
}

// spend keeps the goroutine's core busy for d.
func spend(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}
