package caller

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// FuzzCaller feeds random operation sequences to one Caller: no operation may panic, and
// every one must keep the contract of checkStep and the invariants of checkState (low <=
// seq+1 and every seq below low finished, resends only of sent calls and in ascending
// order, the oldest stale calls and no more than MaxResend, nothing queued once dead, the
// first reason of death kept, ...).
//
//	go test ./actors/caller -run '^$' -fuzz FuzzCaller -fuzztime 30s
func FuzzCaller(f *testing.F) {
	f.Add([]byte{0, 0, 0})
	// add, send, take, restart, finish
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 1, 5, 0, 0, 6, 1, 1, 2, 1, 0})
	// at-most-once with one retry, two restarts
	f.Add([]byte{1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 1, 6, 1, 1, 6, 1, 1, 5, 0, 0})
	// stale resends, bounded, then a bounce and a death
	f.Add([]byte{0, 0, 0x5a, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 2, 0, 1, 3, 0, 9, 0, 7, 4, 0, 3, 7, 2, 1, 8, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := walk(data); err != nil {
			t.Fatal(err)
		}
	})
}

// walk decodes data into a Config (first 3 bytes) and operations (3 bytes each: kind
// and two arguments) and applies them, checking each. Sequence numbers are drawn from 0
// to Seq()+1 and incarnations around the known one, so that unknown, finished,
// unfinished, stale and future values all occur; the clock only moves forward.
func walk(data []byte) error {
	if len(data) < 3 {
		return nil
	}
	cfg := Config{
		AtMostOnce:     data[0]&1 == 1,
		MaxTaskRetries: int(data[0]>>1)%4 - 1,                  // -1 (no limit) .. 2
		ResendAfter:    time.Duration(data[2]&7) * time.Second, // 0 (never) .. 7s
		MaxResend:      int(data[2]>>3) % 4,                    // 0 (no bound) .. 3
	}
	c := New[string](cfg)
	// A ring of 4 to 32 slots at most, so that walks fill it and spill calls to its map.
	c.calls.Max = 4 << (data[1] % 4)
	if err := checkState(c); err != nil {
		return err
	}
	var now time.Duration
	seqOf := func(b byte) uint64 { return uint64(b) % (c.Seq() + 2) }
	for data = data[3:]; len(data) >= 3; data = data[3:] {
		kind, a, b := data[0], data[1], data[2]
		now += time.Duration(b>>6) * time.Second // the clock advances 0..3s an operation
		var o op
		switch kind % 11 {
		case 0, 1:
			o = op{name: "Add", call: fmt.Sprint("c", c.Seq()+1)}
		case 2:
			o = op{name: "Send", seq: seqOf(a), at: now}
		case 3:
			o = op{name: "Finish", seq: seqOf(a)}
		case 4:
			o = op{name: "Checkpoint"}
		case 5:
			o = op{name: "Take"}
		case 6:
			o = op{name: "ResendStale", at: now}
		case 7:
			inc := c.Incarnation()
			switch a % 4 {
			case 0: // the same
			case 1, 2:
				inc++
			case 3:
				inc = max(inc, 1) - 1 // an older one
			}
			o = op{name: "Changed", record: Record{Incarnation: inc, Placed: b&1 == 1,
				AtMostOnce: cfg.AtMostOnce != (b&2 == 2 && a >= 128), MaxTaskRetries: int(b>>2)%4 - 1}}
		case 8:
			o = op{name: "Bounce", seqs: []uint64{seqOf(a), seqOf(b)}}
		case 9:
			if a&3 != 0 {
				continue // death is rare: most walks should live long
			}
			o = op{name: "Die", msg: fmt.Sprint("died ", b)}
		case 10:
			o = op{name: "Cancel", seq: seqOf(a)}
		}
		if _, err := apply(c, o); err != nil {
			return err
		}
	}
	return nil
}

// TestRandomWalks runs many seeded random operation sequences through the checks on
// every ordinary test run; FuzzCaller explores further under go test -fuzz.
func TestRandomWalks(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	walks, steps := 2000, 80
	if testing.Short() {
		walks = 200
	}
	buf := make([]byte, 3+3*steps)
	for range walks {
		for i := range buf {
			buf[i] = byte(r.UintN(256))
		}
		if err := walk(buf); err != nil {
			t.Fatalf("walk %x: %v", buf, err)
		}
	}
}
