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

// TestCallFindsUnfinished: Call finds a call by its seq until it finishes, whether or not
// it was sent, and never a seq not given out.
func TestCallFindsUnfinished(t *testing.T) {
	c := New[string](Config{ResendAfter: 5 * time.Second, MaxResend: 1000})
	a, _ := c.Add("a")
	b, _ := c.Add("b")
	c.Send(a, time.Unix(0, 0))
	for _, tc := range []struct {
		seq  uint64
		want string
		ok   bool
	}{{a, "a", true}, {b, "b", true}, {b + 1, "", false}, {0, "", false}} {
		if v, ok := c.Call(tc.seq); v != tc.want || ok != tc.ok {
			t.Fatalf("Call(%d) = %q, %v; want %q, %v", tc.seq, v, ok, tc.want, tc.ok)
		}
	}
	c.Finish(a)
	if _, ok := c.Call(a); ok {
		t.Fatalf("Call(%d) found a finished call", a)
	}
	// Die gives the unfinished calls to fail, and keeps them until they are finished.
	c.Die(ErrDied)
	if v, ok := c.Call(b); v != "b" || !ok {
		t.Fatalf("after Die, Call(%d) = %q, %v; want the call until it is finished", b, v, ok)
	}
	c.Finish(b)
	if _, ok := c.Call(b); ok {
		t.Fatalf("Call(%d) found a finished call", b)
	}
}

// BenchmarkBurst: 4,096 calls in flight, finished oldest first (an async burst's shape).
func BenchmarkBurst(b *testing.B) {
	c := New[*int](Config{ResendAfter: 5 * time.Second, MaxResend: 1000})
	v := new(int)
	var buf []Out[*int]
	now := time.Unix(0, 0)
	seqs := make([]uint64, 4096)
	b.ReportAllocs()
	for b.Loop() {
		for i := range seqs {
			seqs[i], _ = c.Add(v)
			c.Send(seqs[i], now)
		}
		buf = c.Take(buf[:0])
		for _, s := range seqs {
			c.Finish(s)
		}
	}
}
