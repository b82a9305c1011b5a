package data

import (
	"fmt"
	"strings"
	"time"
)

// opStats are one operator's statistics of an execution.
type opStats struct {
	name       string
	tasks      int
	actors     int
	borrowed   int // actors started without a CPU reservation (see executor.addActor)
	start, end time.Time
	wall, cpu  []int64 // ns per block (remote)
	rows, size []int64
	x          *xState // an all-to-all operator: its stages
}

func (s *opStats) add(m blockMeta, _ time.Duration) {
	s.wall = append(s.wall, m.WallNs)
	s.cpu = append(s.cpu, m.CPUNs)
	s.rows = append(s.rows, m.Rows)
	s.size = append(s.size, m.Bytes)
}

// execStats are the statistics of one execution.
type execStats struct {
	ops       []*opStats // upstream first
	start     time.Time
	total     time.Duration
	budget    int64
	peakBytes int64
	hasX      bool
	spilled   int64 // the most bytes the object stores held spilled, sampled while an all-to-all ran
	// lostRetries counts exchange tasks run again because a block they read was lost.
	lostRetries int
}

func summary(v []int64) (lo, hi, mean, total int64) {
	if len(v) == 0 {
		return
	}
	lo, hi = v[0], v[0]
	for _, x := range v {
		lo, hi, total = min(lo, x), max(hi, x), total+x
	}
	return lo, hi, total / int64(len(v)), total
}

func fmtDur(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.2fus", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

func (s *execStats) String() string {
	var b strings.Builder
	n := 0
	for _, op := range s.ops {
		if op.tasks == 0 {
			continue
		}
		n++
		took := op.end.Sub(op.start)
		if op.end.IsZero() {
			took = 0
		}
		fmt.Fprintf(&b, "Operator %d %s: %d tasks executed, %d blocks produced in %s\n", n, op.name, op.tasks, len(op.rows), fmtDur(took.Nanoseconds()))
		if op.actors > 0 {
			fmt.Fprintf(&b, "* Actors used: %d", op.actors)
			if op.borrowed > 0 {
				fmt.Fprintf(&b, " (%d without a CPU reservation, leaving CPUs to task operators)", op.borrowed)
			}
			b.WriteString("\n")
		}
		lo, hi, mean, tot := summary(op.wall)
		fmt.Fprintf(&b, "* Remote wall time: %s min, %s max, %s mean, %s total\n", fmtDur(lo), fmtDur(hi), fmtDur(mean), fmtDur(tot))
		lo, hi, mean, tot = summary(op.cpu)
		fmt.Fprintf(&b, "* Remote cpu time: %s min, %s max, %s mean, %s total\n", fmtDur(lo), fmtDur(hi), fmtDur(mean), fmtDur(tot))
		lo, hi, mean, tot = summary(op.rows)
		fmt.Fprintf(&b, "* Output num rows per block: %d min, %d max, %d mean, %d total\n", lo, hi, mean, tot)
		lo, hi, mean, tot = summary(op.size)
		fmt.Fprintf(&b, "* Output size bytes per block: %d min, %d max, %d mean, %d total\n", lo, hi, mean, tot)
		if x := op.x; x != nil {
			fmt.Fprintf(&b, "* All-to-all stages (%d partitions):\n", x.n)
			for r, ph := range x.phases {
				if ph == nil || ph.tasks == 0 {
					continue
				}
				name := ph.name
				if r == roleMap && x.fusedIn != "" {
					name += " (fused: run by " + x.fusedIn + "'s tasks)"
				}
				fmt.Fprintf(&b, "  - %s\n", stageLine(name, ph.tasks, ph))
			}
			name := "reduce"
			if x.early {
				name += " (started before the last map ended)"
			}
			fmt.Fprintf(&b, "  - %s\n", stageLine(name, op.tasks-x.inTasks(), op))
			fmt.Fprintf(&b, "* Bytes shuffled: %d (map outputs), %d (merge outputs)\n", x.shuffled, x.merged)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Dataset iterator time breakdown:\n* Total time overall: %s\n", fmtDur(s.total.Nanoseconds()))
	fmt.Fprintf(&b, "* Peak object store bytes held: %d (budget %d)\n", s.peakBytes, s.budget)
	if s.hasX {
		fmt.Fprintf(&b, "* Object store bytes spilled (the most seen during the execution): %d\n", s.spilled)
		if s.lostRetries > 0 {
			fmt.Fprintf(&b, "* Exchange tasks run again after a block they read was lost: %d\n", s.lostRetries)
		}
	}
	return b.String()
}

// stageLine is one all-to-all stage in Stats: tasks, rows and bytes out, remote wall and
// CPU time in total.
func stageLine(name string, tasks int, ph *opStats) string {
	_, _, _, wall := summary(ph.wall)
	_, _, _, cpu := summary(ph.cpu)
	_, _, _, rows := summary(ph.rows)
	_, _, _, size := summary(ph.size)
	return fmt.Sprintf("%s: %d tasks, %d rows and %d bytes out, remote wall %s, cpu %s in total", name, tasks, rows, size, fmtDur(wall), fmtDur(cpu))
}

// Stats describes the last execution of d (Ray's Dataset.stats()): per operator the tasks
// run, blocks produced and the time it took, then remote wall and CPU time (the task
// thread's CPU time, measured with RUSAGE_THREAD on a locked OS thread), rows and bytes per
// block (min, max, mean, total), and the whole execution's wall time and peak of bytes
// held. Before any execution it says so.
func (d *Dataset) Stats() string {
	if s := d.stats.Load(); s != nil {
		return s.String()
	}
	return "(the dataset has not been executed yet; Stats describes the last consuming call)"
}
