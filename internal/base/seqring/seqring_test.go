package seqring

import (
	"maps"
	"math/rand/v2"
	"testing"
)

// TestAgainstMap: random Puts, Gets and Deletes agree with a Go map at every step, for
// small and default rings, whether the low the caller passes is kept (every number below
// it deleted, as the Map's users do) or not; the ring never grows past Max, and Len and
// All always show exactly the map's contents.
func TestAgainstMap(t *testing.T) {
	for _, tc := range []struct {
		name    string
		max     int
		keepLow bool
	}{{"max4", 4, true}, {"max16", 16, true}, {"default", 0, true}, {"max8-low-not-kept", 8, false}} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, uint64(tc.max)))
			for walk := range 200 {
				m := &Map[int]{Max: tc.max}
				model := map[uint64]int{}
				var next, low uint64 = 1, 1
				for step := range 300 {
					switch op := r.IntN(10); {
					case op < 4: // a new number at the top
						m.Put(next, low, step)
						model[next] = step
						next++
					case op < 5: // overwrite a held or a random number at or above low
						seq := low + uint64(r.IntN(int(next-low)+1))
						if !tc.keepLow {
							seq = 1 + uint64(r.IntN(int(next)))
						}
						m.Put(seq, low, -step)
						model[seq] = -step
						next = max(next, seq+1)
					case op < 8: // delete, mostly near the bottom
						seq := low + uint64(r.IntN(min(int(next-low)+1, 6)))
						if r.IntN(4) == 0 {
							seq = 1 + uint64(r.IntN(int(next)))
						}
						m.Delete(seq)
						delete(model, seq)
					default:
						seq := uint64(r.IntN(int(next) + 2))
						v, ok := m.Get(seq)
						w, wok := model[seq]
						if v != w || ok != wok {
							t.Fatalf("walk %d step %d: Get(%d) = %d, %v; want %d, %v", walk, step, seq, v, ok, w, wok)
						}
					}
					if tc.keepLow {
						for low < next {
							if _, ok := model[low]; ok {
								break
							}
							low++
						}
					} else {
						low = 1 + uint64(r.IntN(int(next))) // any hint at all
					}
					if got := maps.Collect(m.All()); !maps.Equal(got, model) || m.Len() != len(model) {
						t.Fatalf("walk %d step %d: holds %v (Len %d), want %v", walk, step, got, m.Len(), model)
					}
					if mx := m.max(); len(m.ring) > mx {
						t.Fatalf("ring of %d slots, Max %d", len(m.ring), mx)
					}
				}
			}
		})
	}
}

// TestStraggler: one old number left behind a run wider than the ring: the ring stays at
// Max, the rest goes to the map, everything is found, and once all is deleted the map is
// dropped and the ring kept.
func TestStraggler(t *testing.T) {
	var m Map[uint64]
	const n = 3 * DefaultMax
	for seq := uint64(1); seq <= n; seq++ {
		m.Put(seq, 1, seq) // the first stays: low stays 1
	}
	if len(m.ring) != DefaultMax || len(m.far) != n-DefaultMax || m.Len() != n {
		t.Fatalf("ring %d, map %d, Len %d; want %d, %d, %d", len(m.ring), len(m.far), m.Len(), DefaultMax, n-DefaultMax, n)
	}
	for seq := uint64(n); seq >= 1; seq-- {
		if v, ok := m.Get(seq); !ok || v != seq {
			t.Fatalf("Get(%d) = %d, %v", seq, v, ok)
		}
		m.Delete(seq)
	}
	if m.Len() != 0 || m.far != nil || len(m.ring) != DefaultMax {
		t.Fatalf("after deleting all: Len %d, map %v, ring %d", m.Len(), m.far, len(m.ring))
	}
}

// TestNoAllocsInSteadyState: a window of in-flight numbers moving up allocates nothing
// once the ring has grown to it.
func TestNoAllocsInSteadyState(t *testing.T) {
	var m Map[*int]
	v := new(int)
	var next, low uint64 = 1, 1
	cycle := func() {
		for range 16 {
			m.Put(next, low, v)
			next++
		}
		for range 16 {
			m.Delete(low)
			low++
		}
	}
	cycle()
	if n := testing.AllocsPerRun(1000, cycle); n != 0 {
		t.Fatalf("%v allocations per 16 numbers, want 0", n)
	}
}
