package core

import "testing"

// TestNewArgs checks a spec's argument list: n entries, nil until the caller points them
// at its arguments, list and arguments in one allocation up to 4, and no room to grow
// into the other's memory.
func TestNewArgs(t *testing.T) {
	for n := 0; n <= 6; n++ {
		ptrs, vals := newArgs(n)
		if len(ptrs) != n || len(vals) != n || cap(ptrs) != n || cap(vals) != n || ptrs == nil {
			t.Fatalf("n=%d: len %d/%d cap %d/%d nil %v", n, len(ptrs), len(vals), cap(ptrs), cap(vals), ptrs == nil)
		}
		for i := range ptrs {
			if ptrs[i] != nil {
				t.Fatalf("n=%d: entry %d set", n, i)
			}
			vals[i].Data = []byte{byte(i)}
			ptrs[i] = &vals[i]
		}
		for i := range ptrs {
			if len(ptrs[i].Data) != 1 || ptrs[i].Data[0] != byte(i) {
				t.Fatalf("n=%d: entry %d reads %v", n, i, ptrs[i].Data)
			}
		}
		want := 1.0
		switch {
		case n == 0:
			want = 0
		case n > 4:
			want = 2
		}
		if got := testing.AllocsPerRun(20, func() { ptrs, vals = newArgs(n) }); got != want {
			t.Fatalf("n=%d: %v allocations, want %v", n, got, want)
		}
	}
}
