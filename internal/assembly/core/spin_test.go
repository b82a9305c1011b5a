package core

import (
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/spin"
)

// TestSpinRecvOneGoroutinePerTask: one goroutine of a task polls at a time, while the
// task's waits are short and none of its goroutines is blocked in a wait; the others, and
// every goroutine with one P, block at once.
func TestSpinRecvOneGoroutinePerTask(t *testing.T) {
	defer spin.Set(time.Hour, 2)()
	ready := make(chan struct{})
	close(ready)
	var tc TaskContext
	if _, ok := spinRecv(&tc, ready); !ok {
		t.Fatal("spinRecv of a closed channel = false")
	}
	if tc.spinning.Load() {
		t.Fatal("spinning still set after the poll")
	}
	tc.spinning.Store(true) // another goroutine of the task polls
	if _, ok := spinRecv(&tc, ready); ok {
		t.Fatal("a second goroutine of the task polled")
	}
	tc.spinning.Store(false)
	tc.waits.BlockedSince(time.Now().Add(-2 * time.Hour)) // a wait that outlasted the poll
	if _, ok := spinRecv(&tc, ready); ok {
		t.Fatal("polled after a wait that outlasted the poll")
	}
	tc.waits.BlockedSince(time.Now()) // a short one
	if _, ok := spinRecv(&tc, ready); !ok {
		t.Fatal("does not poll again after a short wait")
	}
	tc.waits.BlockedSince(time.Time{}) // not measured: changes nothing
	if _, ok := spinRecv(&tc, ready); !ok {
		t.Fatal("an unmeasured wait stopped the polls")
	}
	tc.blockedWaits.Add(1) // another goroutine of the task is blocked in a wait
	if _, ok := spinRecv(&tc, ready); ok {
		t.Fatal("polled while another goroutine of the task was blocked in a wait")
	}
	tc.blockedWaits.Add(-1)
	spin.Set(time.Hour, 1)
	if _, ok := spinRecv(&tc, make(chan struct{})); ok { // with a poll, an hour
		t.Fatal("spinRecv polled with one P")
	}
}
