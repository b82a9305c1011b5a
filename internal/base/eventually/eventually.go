// Package eventually is how tests wait for a condition that other goroutines or processes
// make true and that sends no event the test could wait on: poll it until it holds, and
// fail the test, saying what was awaited, if it still does not after a generous bound (the
// bound is a guard against hangs, not an assertion about speed). Only tests import it.
package eventually

import (
	"runtime"
	"testing"
	"time"
)

// poll is the pause between two looks at a condition.
const poll = 5 * time.Millisecond

// True polls cond until it returns true and returns how long that took. If cond is still
// false after d, it fails t with what (Fatalf: call it from the test's goroutine).
func True(t testing.TB, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	return wait(t, d, what, cond, false)
}

// AfterGC is True with a garbage collection before each look, for conditions that
// finalizers make true (a dropped ObjectRef's reference given back).
func AfterGC(t testing.TB, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	return wait(t, d, what, cond, true)
}

func wait(t testing.TB, d time.Duration, what string, cond func() bool, gc bool) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		if gc {
			runtime.GC()
		}
		if cond() {
			return time.Since(start)
		}
		if time.Since(start) > d {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(poll)
	}
}
