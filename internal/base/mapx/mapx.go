// Package mapx gives back the memory of Go maps after a burst. A Go map never shrinks:
// once it held a million entries it keeps their buckets after they are deleted. A map
// whose owner tracks its peak with a Peak is made anew when it has fallen well below it;
// copying the few live entries is paid for by the many deletions before it.
package mapx

// rebuildAbove: only maps that held more than this many entries are made anew (smaller
// ones cost little to keep), once they hold under an eighth of their peak.
const rebuildAbove = 8192

// Peak is the most entries a map held since it was made. The zero value is ready.
type Peak struct{ n int }

// Grew notes the map's length after an insert.
func (p *Peak) Grew(n int) {
	if n > p.n {
		p.n = n
	}
}

// N is the peak.
func (p *Peak) N() int { return p.n }

// Shrink returns m, or, when m (after a delete) holds under an eighth of a peak above
// rebuildAbove entries, a new map with m's entries, and notes its length as the new peak.
func Shrink[K comparable, V any](p *Peak, m map[K]V) map[K]V {
	if p.n <= rebuildAbove || len(m) >= p.n/8 {
		return m
	}
	out := make(map[K]V, max(64, 2*len(m)))
	for k, v := range m {
		out[k] = v
	}
	p.n = len(out)
	return out
}
