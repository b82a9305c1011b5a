package mapx

// RecentMap is a map that keeps at most Max keys: putting one more forgets the oldest
// put (e.g. what a process remembers of the most recent deaths). Not safe for concurrent
// use: its owner guards it. Set Max before the first Put.
type RecentMap[K comparable, V any] struct {
	Max  int
	m    map[K]V
	ring []K // keys in the order put, a ring once full
	next int // the ring's oldest slot, once full
}

// Put sets k's value and reports whether k was not there yet (a key already there keeps
// its place in the order).
func (r *RecentMap[K, V]) Put(k K, v V) bool {
	if _, ok := r.m[k]; ok {
		r.m[k] = v
		return false
	}
	if r.m == nil {
		r.m = map[K]V{}
	}
	if len(r.ring) < r.Max {
		r.ring = append(r.ring, k)
	} else {
		delete(r.m, r.ring[r.next])
		r.ring[r.next] = k
		r.next = (r.next + 1) % len(r.ring)
	}
	r.m[k] = v
	return true
}

// Get returns k's value and whether k is there.
func (r *RecentMap[K, V]) Get(k K) (V, bool) {
	v, ok := r.m[k]
	return v, ok
}

// Remove takes k out (its place in the order stays until it is reused).
func (r *RecentMap[K, V]) Remove(k K) { delete(r.m, k) }

// Len is how many keys it holds.
func (r *RecentMap[K, V]) Len() int { return len(r.m) }

// Range calls f for each key and value, in no order, until f returns false.
func (r *RecentMap[K, V]) Range(f func(K, V) bool) {
	for k, v := range r.m {
		if !f(k, v) {
			return
		}
	}
}

// Recent is a set that keeps at most Max keys: a RecentMap without values. Set Max
// before the first Add.
type Recent[K comparable] struct {
	Max int
	m   RecentMap[K, struct{}]
}

// Add adds k and reports whether it was not there yet.
func (r *Recent[K]) Add(k K) bool {
	r.m.Max = r.Max
	return r.m.Put(k, struct{}{})
}

// Has reports whether k is in the set.
func (r *Recent[K]) Has(k K) bool {
	_, ok := r.m.Get(k)
	return ok
}

// Remove takes k out of the set (its place in the order stays until it is reused).
func (r *Recent[K]) Remove(k K) { r.m.Remove(k) }

// Len is how many keys the set holds.
func (r *Recent[K]) Len() int { return r.m.Len() }
