package core

import (
	"testing"
	"unsafe"

	"github.com/ray-go/ray/internal/base/ids"
)

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

// TestNewPendingArgs: a pending with its spec and n arguments, the spec's ID its own; one
// allocation for up to two arguments, newPending's and newArgs' beyond.
func TestNewPendingArgs(t *testing.T) {
	tid := ids.ChildTaskID(ids.NewRootTaskID(), 1)
	for n := 0; n <= 5; n++ {
		p, ptrs, vals := newPendingArgs(tid, n)
		if p.tid != tid || p.spec != &p.specBuf || &p.spec.TaskId[0] != &p.tid[0] || len(p.spec.TaskId) != ids.TaskIDLen {
			t.Fatalf("n=%d: the pending's spec is not its own, or its ID not the pending's", n)
		}
		if len(ptrs) != n || len(vals) != n || cap(ptrs) != n || cap(vals) != n || ptrs == nil {
			t.Fatalf("n=%d: len %d/%d cap %d/%d nil %v", n, len(ptrs), len(vals), cap(ptrs), cap(vals), ptrs == nil)
		}
		for i := range ptrs {
			vals[i].Data = []byte{byte(i)}
			ptrs[i] = &vals[i]
		}
		lo, hi := uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(p))+unsafe.Sizeof(*p)
		for i := range vals {
			if a := uintptr(unsafe.Pointer(&vals[i])); a+unsafe.Sizeof(vals[i]) > lo && a < hi {
				t.Fatalf("n=%d: argument %d overlaps the pending", n, i)
			}
			if a := uintptr(unsafe.Pointer(&ptrs[i])); a+unsafe.Sizeof(ptrs[i]) > lo && a < hi {
				t.Fatalf("n=%d: the list's entry %d overlaps the pending", n, i)
			}
		}
		want := 1.0
		switch {
		case n == 0:
			want = 1 // the pending; an empty list costs nothing
		case n > 4:
			want = 3
		case n > 2:
			want = 2
		}
		if got := testing.AllocsPerRun(20, func() { p, ptrs, vals = newPendingArgs(tid, n) }); got != want {
			t.Fatalf("n=%d: %v allocations, want %v", n, got, want)
		}
	}
}
