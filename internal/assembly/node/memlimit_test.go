package node

import (
	"context"
	"math"
	"runtime/debug"
	"testing"

	"github.com/ray-go/ray/tasks/sched"
)

// fakeLimit records what softLimit sets, as debug.SetMemoryLimit would.
type fakeLimit struct{ cur int64 }

func (f *fakeLimit) set(v int64) int64 {
	old := f.cur
	if v >= 0 {
		f.cur = v
	}
	return old
}

// TestSoftLimitSumsStoresAndRestores: the limit is the sum of the nodes' store budgets plus
// the margin, follows nodes that stop, and the last one puts back "no limit".
func TestSoftLimitSumsStoresAndRestores(t *testing.T) {
	f := &fakeLimit{cur: math.MaxInt64}
	s := &softLimit{set: f.set}
	if !s.acquire(512 << 20) {
		t.Fatal("acquire with no limit set: refused")
	}
	if want := int64(512<<20 + SoftLimitMargin); f.cur != want {
		t.Fatalf("limit with one 512 MiB store: %d, want %d", f.cur, want)
	}
	if !s.acquire(64 << 20) {
		t.Fatal("second acquire refused")
	}
	if want := int64(576<<20 + SoftLimitMargin); f.cur != want {
		t.Fatalf("limit with 512 + 64 MiB stores: %d, want %d", f.cur, want)
	}
	s.release(512 << 20)
	if want := int64(64<<20 + SoftLimitMargin); f.cur != want {
		t.Fatalf("limit after the 512 MiB node stopped: %d, want %d", f.cur, want)
	}
	s.release(64 << 20)
	if f.cur != math.MaxInt64 {
		t.Fatalf("limit after the last node stopped: %d, want none (MaxInt64)", f.cur)
	}
	s.release(64 << 20) // one more release changes nothing
	if f.cur != math.MaxInt64 {
		t.Fatalf("an extra release set the limit to %d", f.cur)
	}
}

// TestSoftLimitLeavesTheUsersLimit: a limit the program runs with (GOMEMLIMIT, or its own
// debug.SetMemoryLimit) is never replaced nor reset.
func TestSoftLimitLeavesTheUsersLimit(t *testing.T) {
	f := &fakeLimit{cur: 3 << 30}
	s := &softLimit{set: f.set}
	if s.acquire(512 << 20) {
		t.Fatal("acquire took over a limit the program had set")
	}
	s.release(512 << 20)
	if f.cur != 3<<30 {
		t.Fatalf("the program's limit became %d, want %d", f.cur, int64(3<<30))
	}
}

// TestNodeSetsTheSoftMemoryLimit: a node started with SoftMemoryLimit sets the process's
// limit to its store plus the margin, and Stop puts the previous one back; without it the
// limit is untouched.
func TestNodeSetsTheSoftMemoryLimit(t *testing.T) {
	// The test runs as a program without a limit of its own (GOMEMLIMIT may be set for go
	// test), and puts the process's limit back at the end.
	orig := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetMemoryLimit(orig) })
	before := int64(math.MaxInt64)
	res, _ := sched.FromMap(map[string]float64{sched.CPU: 1})
	const store = 96 << 20
	plain, err := Start(context.Background(), Config{Dir: t.TempDir(), Resources: res, ObjectStoreBytes: store})
	if err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("a node without SoftMemoryLimit set the limit to %d", got)
	}
	if err := plain.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	n, err := Start(context.Background(), Config{Dir: t.TempDir(), Resources: res, ObjectStoreBytes: store, SoftMemoryLimit: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := debug.SetMemoryLimit(-1), int64(store+SoftLimitMargin); got != want {
		t.Errorf("limit while the node runs: %d, want %d", got, want)
	}
	if err := n.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Fatalf("limit after Stop: %d, want %d", got, before)
	}
}
