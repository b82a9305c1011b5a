package mapx

// Recent is a set that keeps at most Max keys: adding one more forgets the oldest added
// (e.g. the most recent deaths a process remembers). Not safe for concurrent use: its
// owner guards it. Set Max before the first Add.
type Recent[K comparable] struct {
	Max  int
	set  map[K]struct{}
	ring []K // keys in the order added, a ring once full
	next int // the ring's oldest slot, once full
}

// Add adds k and reports whether it was not there yet.
func (r *Recent[K]) Add(k K) bool {
	if _, ok := r.set[k]; ok {
		return false
	}
	if r.set == nil {
		r.set = map[K]struct{}{}
	}
	if len(r.ring) < r.Max {
		r.ring = append(r.ring, k)
	} else {
		delete(r.set, r.ring[r.next])
		r.ring[r.next] = k
		r.next = (r.next + 1) % len(r.ring)
	}
	r.set[k] = struct{}{}
	return true
}

// Has reports whether k is in the set.
func (r *Recent[K]) Has(k K) bool {
	_, ok := r.set[k]
	return ok
}

// Remove takes k out of the set (its place in the order stays until it is reused).
func (r *Recent[K]) Remove(k K) { delete(r.set, k) }

// Len is how many keys the set holds.
func (r *Recent[K]) Len() int { return len(r.set) }
