package perf

import (
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

// spend keeps the goroutine's core busy for d.
func spend(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}
