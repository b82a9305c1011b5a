package mapx

import "testing"

// TestShrink: a map that held many entries and now holds few is made anew with them; one
// that stays near its peak, or never grew large, is kept.
func TestShrink(t *testing.T) {
	var p Peak
	m := map[int]int{}
	for i := range 4 * rebuildAbove {
		m[i] = i
		p.Grew(len(m))
	}
	for i := 0; i < 4*rebuildAbove-100; i++ {
		delete(m, i)
		before := m
		m = Shrink(&p, m)
		if len(m) >= 4*rebuildAbove/8 && !same(before, m) {
			t.Fatalf("made anew at %d entries, above an eighth of the peak", len(m))
		}
	}
	if p.n != len(m) && p.n >= 4*rebuildAbove {
		t.Fatalf("the peak is still %d with %d entries left: the map was never made anew", p.n, len(m))
	}
	for i := 4*rebuildAbove - 100; i < 4*rebuildAbove; i++ {
		if m[i] != i {
			t.Fatalf("entry %d lost", i)
		}
	}
	var q Peak
	small := map[int]int{1: 1}
	q.Grew(1)
	delete(small, 1)
	if s := Shrink(&q, small); !same(s, small) {
		t.Fatal("a small map was made anew")
	}
}

// same reports whether a and b are the same map (not equal contents: identity).
func same(a, b map[int]int) bool {
	a[-1] = 1
	_, ok := b[-1]
	delete(a, -1)
	return ok
}

// TestRecent: a Recent keeps at most Max keys, forgetting the oldest added; Add says
// whether a key is new; a removed key is gone.
func TestRecent(t *testing.T) {
	r := Recent[string]{Max: 3}
	for _, k := range []string{"a", "b", "c"} {
		if !r.Add(k) {
			t.Fatalf("Add(%s) of a new key = false", k)
		}
	}
	if r.Add("b") {
		t.Fatal("Add of a key already there = true")
	}
	r.Add("d") // forgets a, the oldest
	if r.Has("a") || !r.Has("b") || !r.Has("c") || !r.Has("d") {
		t.Fatalf("after a 4th key: a %v b %v c %v d %v; want a forgotten, the rest kept", r.Has("a"), r.Has("b"), r.Has("c"), r.Has("d"))
	}
	r.Remove("c")
	if r.Has("c") || !r.Add("c") {
		t.Fatal("a removed key is still there, or cannot be added again")
	}
	if r.Len() > 3 {
		t.Fatalf("%d keys kept, want at most 3", r.Len())
	}
}

// TestRecentMap: a RecentMap keeps the values of at most Max keys, forgetting the oldest
// put; putting a key already there changes its value and keeps its place.
func TestRecentMap(t *testing.T) {
	r := RecentMap[string, int]{Max: 2}
	if !r.Put("a", 1) || !r.Put("b", 2) || r.Put("a", 10) {
		t.Fatal("Put says new for a key already there, or not new for a new one")
	}
	r.Put("c", 3) // forgets a, the oldest put, though its value changed since
	if _, ok := r.Get("a"); ok {
		t.Fatal("the oldest key is still there")
	}
	got := map[string]int{}
	r.Range(func(k string, v int) bool { got[k] = v; return true })
	if len(got) != 2 || got["b"] != 2 || got["c"] != 3 || r.Len() != 2 {
		t.Fatalf("kept %v (Len %d), want b=2 c=3", got, r.Len())
	}
}
