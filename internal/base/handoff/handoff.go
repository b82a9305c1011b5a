// Package handoff is the queue by which other goroutines hand items to a run loop (an
// actor that owns some state) without a message per item. Producers append under the
// queue's mutex; the loop takes everything at the start of its next message (Len is one
// atomic load, so a loop handed nothing pays no lock); a producer posts a message to wake
// the loop only when its Add says one is due and none has been posted since the loop's
// last Take. The slice Take returns goes back with Release, so a steady stream allocates
// nothing. Three loops use it: a process shard's actor calls sent from their submitters'
// goroutines and calls completed on an actor's executor (internal/assembly/core), and an
// actor's reports of what ran (actors).
package handoff

import (
	"sync"
	"sync/atomic"
)

// Queue is a handoff queue of T. The zero value is ready.
type Queue[T any] struct {
	mu     sync.Mutex
	n      atomic.Int32
	q      []T
	spare  []T
	posted bool
}

// Add appends items (from any goroutine). It reports whether the caller must post a
// message to wake the loop: none was posted since the loop's last Take, and the queue now
// holds at least wake items or urgent is set. A wake of 0 or less never asks for one (the
// loop takes the items with its next message, whatever brings it).
func (h *Queue[T]) Add(wake int, urgent bool, items ...T) bool {
	h.mu.Lock()
	h.q = append(h.q, items...)
	n := len(h.q)
	h.n.Store(int32(n))
	post := !h.posted && wake > 0 && (n >= wake || urgent)
	if post {
		h.posted = true
	}
	h.mu.Unlock()
	return post
}

// Len is the number of items waiting.
func (h *Queue[T]) Len() int { return int(h.n.Load()) }

// Take returns the items waiting, oldest first, and empties the queue (for the loop); a
// message posted for them is accounted taken too. The loop gives the slice back with
// Release once it is done with the items.
func (h *Queue[T]) Take() []T {
	h.mu.Lock()
	q := h.q
	h.q, h.spare = h.spare[:0], nil
	h.n.Store(0)
	h.posted = false
	h.mu.Unlock()
	return q
}

// Release gives back a slice Take returned, for reuse, cleared (its items no longer held);
// one that grew beyond keep items is dropped instead (a burst's memory is not held for
// good).
func (h *Queue[T]) Release(q []T, keep int) {
	clear(q)
	if cap(q) > keep {
		return
	}
	h.mu.Lock()
	if h.spare == nil {
		h.spare = q[:0]
	}
	h.mu.Unlock()
}
