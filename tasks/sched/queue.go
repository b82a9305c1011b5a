package sched

// Queue is one node's local queue of requests waiting for resources, grouped by scheduling
// class: requests with equal resource shapes (Resources.Equal) share a class and leave it in
// FIFO order. Dispatch starts, oldest first, every request whose class head fits; a class whose
// head does not fit is skipped for the rest of that call, so a large request waits without
// blocking later requests of a different, smaller shape (Ray's per-scheduling-class queues).
//
// The price of not blocking is that a large shape can starve while smaller ones keep the node
// busy; the owner may bound that with Dispatch's max or by reserving resources.
//
// Queue is a plain data structure owned by one goroutine (the node's scheduler); it is not safe
// for concurrent use and starts no goroutines. The zero value is an empty queue. T is whatever
// the owner needs back on dispatch: a task spec, a pointer, an ID.
type Queue[T any] struct {
	classes []*class[T]
	n       int
	seq     uint64
}

type class[T any] struct {
	shape   Resources
	items   []queued[T]
	head    int
	blocked bool // head did not fit during the current Dispatch
}

type queued[T any] struct {
	v   T
	seq uint64
}

// Len returns the number of queued requests.
func (q *Queue[T]) Len() int { return q.n }

// Classes returns the number of distinct shapes waiting.
func (q *Queue[T]) Classes() int {
	n := 0
	for _, c := range q.classes {
		if c.head < len(c.items) {
			n++
		}
	}
	return n
}

// Push appends v, which demands shape, to the queue.
func (q *Queue[T]) Push(v T, shape Resources) {
	q.seq++
	q.n++
	for _, c := range q.classes {
		if c.shape.Equal(shape) {
			c.items = append(c.items, queued[T]{v, q.seq})
			return
		}
	}
	q.classes = append(q.classes, &class[T]{shape: shape, items: []queued[T]{{v, q.seq}}})
}

// Dispatch removes from the queue the requests that can start within available and appends
// them to dst in arrival order, at most max of them (max <= 0: no limit). It returns dst and
// what remains available after starting them.
func (q *Queue[T]) Dispatch(available Resources, max int, dst []T) ([]T, Resources) {
	for _, c := range q.classes {
		c.blocked = false
	}
	start := len(dst)
	for max <= 0 || len(dst)-start < max {
		var oldest *class[T]
		for _, c := range q.classes {
			if !c.blocked && c.head < len(c.items) &&
				(oldest == nil || c.items[c.head].seq < oldest.items[oldest.head].seq) {
				oldest = c
			}
		}
		if oldest == nil {
			break
		}
		if !available.Fits(oldest.shape) {
			oldest.blocked = true
			continue
		}
		available = available.Sub(oldest.shape)
		dst = append(dst, oldest.pop())
		q.n--
	}
	q.dropEmpty()
	return dst, available
}

func (c *class[T]) pop() T {
	it := &c.items[c.head]
	v := it.v
	*it = queued[T]{} // let the GC have it
	c.head++
	if c.head == len(c.items) {
		c.items, c.head = c.items[:0], 0
	}
	return v
}

// Any reports whether a queued request satisfies match.
func (q *Queue[T]) Any(match func(T) bool) bool {
	for _, c := range q.classes {
		for _, it := range c.items[c.head:] {
			if match(it.v) {
				return true
			}
		}
	}
	return false
}

// Each calls fn for every queued request with its class's shape, class by class (the
// requests of a class one after another, oldest first).
func (q *Queue[T]) Each(fn func(shape Resources, v T)) {
	for _, c := range q.classes {
		for _, it := range c.items[c.head:] {
			fn(c.shape, it.v)
		}
	}
}

// RemoveFunc removes every queued request for which match returns true (e.g. a cancelled
// task) and returns how many it removed. The others keep their order.
func (q *Queue[T]) RemoveFunc(match func(T) bool) int {
	removed := 0
	for _, c := range q.classes {
		kept := c.items[:0]
		for _, it := range c.items[c.head:] {
			if match(it.v) {
				removed++
				continue
			}
			kept = append(kept, it)
		}
		clear(c.items[len(kept):])
		c.items, c.head = kept, 0
	}
	q.n -= removed
	q.dropEmpty()
	return removed
}

// Backlog calls fn for each class with its shape and number of waiting requests, oldest class
// first: the node's demand, as reported for load balancing and autoscaling.
func (q *Queue[T]) Backlog(fn func(shape Resources, n int)) {
	// Few classes: a selection pass per class keeps this allocation-free.
	last := uint64(0)
	for {
		var next *class[T]
		for _, c := range q.classes {
			if c.head == len(c.items) {
				continue
			}
			if s := c.items[c.head].seq; s > last && (next == nil || s < next.items[next.head].seq) {
				next = c
			}
		}
		if next == nil {
			return
		}
		last = next.items[next.head].seq
		fn(next.shape, len(next.items)-next.head)
	}
}

// idleClasses is how many classes Queue keeps while they are empty, so that a shape that comes
// and goes reuses its class and buffer instead of allocating them again.
const idleClasses = 16

// dropEmpty forgets empty classes once there are more than idleClasses classes.
func (q *Queue[T]) dropEmpty() {
	if len(q.classes) <= idleClasses {
		return
	}
	kept := q.classes[:0]
	for _, c := range q.classes {
		if c.head < len(c.items) {
			kept = append(kept, c)
		}
	}
	clear(q.classes[len(kept):])
	q.classes = kept
}
