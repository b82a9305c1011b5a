// Package seqring keeps values by sequence number when the live numbers lie in a short
// range that moves up: the unfinished calls of an actor's caller, the results an actor
// holds until its caller acknowledges them. A Map keeps them in a ring indexed by the
// number (slot seq & (len-1)), with no hashing and in sequential memory: a Go map of the
// calls in flight cost a cache miss per insert and per delete once a burst outgrew the
// cache (about 7% of the CPU of 1_1_actor_calls_async, 2026-11-27).
//
// The caller passes low, the lowest number it may still hold, on each Put: the ring holds
// numbers in [low, low+len), so two never share a slot. It doubles as needed up to Max
// slots; a number further from low than that (an old entry left behind a long run of
// newer ones) goes to an ordinary map and stays there until deleted, so memory is at most
// Max slots plus those entries, whatever the spread of the numbers. Correctness never
// depends on low: a slot taken by another number sends the new one to the map too.
//
// Like a Go map, the ring keeps its size after a burst, so the next one does not grow it
// again. A Map is not safe for concurrent use. Number 0 is not a valid key.
package seqring

import "iter"

// DefaultMax is the largest ring when Map.Max is 0: 4,096 slots.
const DefaultMax = 1 << 12

// Map holds values by sequence number. The zero value is ready (a ring of at most
// DefaultMax slots).
type Map[V any] struct {
	// Max is the ring's largest length, a power of two (0: DefaultMax). Set it before the
	// first Put.
	Max  int
	ring []slot[V] // len 0 or a power of two
	far  map[uint64]*V
	n    int
}

// slot holds value v for number seq; it is free when seq is 0.
type slot[V any] struct {
	v   V
	seq uint64
}

func (m *Map[V]) max() int {
	if m.Max > 0 {
		return m.Max
	}
	return DefaultMax
}

// Put sets the value of seq (> 0); low is the lowest number the Map may hold now (every
// number below it was deleted).
func (m *Map[V]) Put(seq, low uint64, v V) {
	if p := m.Ref(seq); p != nil {
		*p = v
		return
	}
	m.n++
	if seq >= low {
		d := seq - low
		if d >= uint64(len(m.ring)) && d < uint64(m.max()) {
			m.grow(d + 1)
		}
		if d < uint64(len(m.ring)) {
			if s := &m.ring[seq&uint64(len(m.ring)-1)]; s.seq == 0 {
				*s = slot[V]{v: v, seq: seq}
				return
			}
		}
	}
	if m.far == nil {
		m.far = map[uint64]*V{}
	}
	p := new(V) // not &v: v would then escape on every Put
	*p = v
	m.far[seq] = p
}

// grow makes the ring at least need slots long; each held number moves to its slot in the
// new ring. Two never meet there: they had different slots in the old ring, so different
// residues modulo its length, which divides the new one.
func (m *Map[V]) grow(need uint64) {
	n := max(len(m.ring), 4)
	for uint64(n) < need {
		n *= 2
	}
	ring := make([]slot[V], n)
	for _, s := range m.ring {
		if s.seq != 0 {
			ring[s.seq&uint64(n-1)] = s
		}
	}
	m.ring = ring
}

// slot returns the ring slot holding seq, or nil.
func (m *Map[V]) slot(seq uint64) *slot[V] {
	if len(m.ring) == 0 || seq == 0 {
		return nil
	}
	if s := &m.ring[seq&uint64(len(m.ring)-1)]; s.seq == seq {
		return s
	}
	return nil
}

// Ref returns a pointer to the value of seq, nil if the Map does not hold it: the value
// may be changed through it until the next Put of a number not held, or Delete.
func (m *Map[V]) Ref(seq uint64) *V {
	if s := m.slot(seq); s != nil {
		return &s.v
	}
	if m.far != nil {
		return m.far[seq]
	}
	return nil
}

// Get returns the value of seq and whether the Map holds it.
func (m *Map[V]) Get(seq uint64) (V, bool) {
	if p := m.Ref(seq); p != nil {
		return *p, true
	}
	var zero V
	return zero, false
}

// Delete forgets seq and its value (for the collector), if held.
func (m *Map[V]) Delete(seq uint64) {
	if s := m.slot(seq); s != nil {
		*s = slot[V]{}
		m.n--
		return
	}
	if _, ok := m.far[seq]; ok {
		delete(m.far, seq)
		m.n--
		if len(m.far) == 0 {
			m.far = nil // a straggler's map is not kept
		}
	}
}

// Len is the number of values held.
func (m *Map[V]) Len() int { return m.n }

// All yields every number held and its value, in no particular order. During the
// iteration the values of numbers held may be replaced (Put) and numbers deleted, but no
// number added.
func (m *Map[V]) All() iter.Seq2[uint64, V] {
	return func(yield func(uint64, V) bool) {
		if m.n == 0 {
			return
		}
		for i := range m.ring {
			if s := &m.ring[i]; s.seq != 0 && !yield(s.seq, s.v) {
				return
			}
		}
		for seq, v := range m.far {
			if !yield(seq, *v) {
				return
			}
		}
	}
}
