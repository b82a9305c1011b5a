// Package slab hands out pointers to fresh zero values carved from arrays allocated n at
// a time: one allocation per n values for a run loop that makes one small value (a
// protobuf message, a record) per task, where each made its own.
//
// Nothing is reused: every New returns memory no one has seen, so a value may be handed
// to other goroutines and kept by them for as long as they like (unlike a sync.Pool,
// which needs to know when a value is dead). The price is memory: an array stays alive
// while any of its values is reachable, so a Slab suits values that die at about the same
// time as their neighbours (a batch of results, the calls of one flush) and values small
// enough that an array of them costs little when one of them lives long.
//
// A Slab is not safe for concurrent use: it belongs to one goroutine (or run loop).
// Written by hand: it is a few lines, and no maintained library offers typed chunked
// allocation without reuse.
package slab

// Slab makes values of type T: the first allocation holds one, each next one twice as
// many as the one before, up to N (so a Slab that makes a single value costs what a plain
// allocation does, and one that makes many costs one allocation per N). The zero value
// grows to 64.
type Slab[T any] struct {
	// N is how many values one allocation holds at most (<= 0: 64).
	N    int
	next int // the size of the next allocation (0: 1)
	free []T
}

// New returns a pointer to a fresh zero T.
func (s *Slab[T]) New() *T {
	if len(s.free) == 0 {
		limit := s.N
		if limit <= 0 {
			limit = 64
		}
		n := min(max(s.next, 1), limit)
		s.free = make([]T, n)
		s.next = min(2*n, limit)
	}
	p := &s.free[0]
	s.free = s.free[1:]
	return p
}
