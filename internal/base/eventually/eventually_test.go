package eventually

import (
	"sync/atomic"
	"testing"
	"time"
)

// fakeT records a failure instead of ending the goroutine's test.
type fakeT struct {
	testing.TB
	failed string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = format
	panic(f)
}

func TestTrue(t *testing.T) {
	var n atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		for n.Load() < 3 {
			n.Add(1)
		}
	}()
	<-done
	True(t, time.Minute, "n to reach 3", func() bool { return n.Load() == 3 })

	looks := 0
	AfterGC(t, time.Minute, "the third look", func() bool { looks++; return looks == 3 })
	if looks != 3 {
		t.Fatalf("AfterGC looked %d times, want 3", looks)
	}
}

func TestTimesOut(t *testing.T) {
	f := &fakeT{}
	func() {
		defer func() {
			if r := recover(); r != f {
				t.Fatalf("recovered %v, want the fake's Fatalf", r)
			}
		}()
		True(f, 0, "nothing", func() bool { return false })
	}()
	if f.failed == "" {
		t.Fatal("a condition that never holds did not fail the test")
	}
}
