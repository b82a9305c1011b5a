package caller

import (
	"testing"
	"time"
)

// TestNoAllocsPerCall: a call's way through a Caller (Add, Send, Take into a reused
// buffer, Finish) allocates nothing once the caller is warm: it is on the hot path of
// every actor call.
func TestNoAllocsPerCall(t *testing.T) {
	c := New[*int](Config{ResendAfter: 5 * time.Second, MaxResend: 1000})
	v := new(int)
	var buf []Out[*int]
	now := time.Unix(0, 0)
	cycle := func() {
		var seqs [8]uint64
		for i := range seqs {
			seqs[i], _ = c.Add(v)
			c.Send(seqs[i], now)
		}
		buf = c.Take(buf[:0])
		for _, seq := range seqs {
			c.Finish(seq)
		}
	}
	for range 100 {
		cycle() // warm the map and the buffers
	}
	if n := testing.AllocsPerRun(1000, cycle); n != 0 {
		t.Fatalf("%v allocations per 8 calls, want 0", n)
	}
}

func BenchmarkCall(b *testing.B) {
	c := New[*int](Config{ResendAfter: 5 * time.Second, MaxResend: 1000})
	v := new(int)
	var buf []Out[*int]
	now := time.Unix(0, 0)
	b.ReportAllocs()
	for b.Loop() {
		seq, _ := c.Add(v)
		c.Send(seq, now)
		buf = c.Take(buf[:0])
		c.Finish(seq)
	}
}
