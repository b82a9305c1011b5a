// Package stripe has a counter that many goroutines on many cores add to without sharing a
// cache line: each writer adds to one of a fixed set of padded stripes, and a read sums
// them. It is for counters touched once per task or call (DESIGN §8: nothing shared by
// every task), read rarely (stats, tests).
package stripe

import "sync/atomic"

// Stripes is how many stripes a Counter has: more than the cores of any machine we
// expect, so that writers that keep to their own slot rarely share one.
const Stripes = 64

// Counter is a striped int64 counter. The zero value is ready; it must not be copied.
type Counter struct {
	s [Stripes]cell
}

type cell struct {
	n atomic.Int64
	_ [56]byte // the rest of a 64-byte cache line
}

// Add adds n in the stripe of slot (any uint32; a writer should keep one, e.g. from
// NextSlot, so that it keeps to its own cache line).
func (c *Counter) Add(slot uint32, n int64) { c.s[slot%Stripes].n.Add(n) }

// Load returns the sum of the stripes: exact once the writers are quiet, a moment's
// approximation while they run.
func (c *Counter) Load() int64 {
	var n int64
	for i := range c.s {
		n += c.s[i].n.Load()
	}
	return n
}

var slots atomic.Uint32

// NextSlot hands out slots round robin, for writers (actors, mailboxes) that live long
// and write from their own goroutine; call it once per writer, not per write.
func NextSlot() uint32 { return slots.Add(1) }
