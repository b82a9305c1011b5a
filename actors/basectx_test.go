package actors

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestStopContext: contexts derived from a grain's base are cancelled when it stops,
// also those derived before; a derived context that ends first leaves no registration
// behind; AfterFunc after the stop runs at once, and stop reports whether it prevented f.
func TestStopContext(t *testing.T) {
	base := newStopContext()
	var _ context.Context = base
	timed, cancelTimed := context.WithTimeout(base, time.Hour)
	child, cancelChild := context.WithCancel(base)
	defer cancelChild()
	if n := len(base.after); n != 2 {
		t.Fatalf("%d registrations for two derived contexts; want 2 (AfterFunc, not a goroutine or a map)", n)
	}
	cancelTimed()
	if base.after == nil || len(base.after) != 1 {
		t.Fatalf("registrations after one derived context ended: %d", len(base.after))
	}
	if !errors.Is(timed.Err(), context.Canceled) || child.Err() != nil || base.Err() != nil {
		t.Fatalf("before the stop: timed %v, child %v, base %v", timed.Err(), child.Err(), base.Err())
	}
	ran := make(chan struct{})
	stopF := base.AfterFunc(func() { close(ran) })
	never := base.AfterFunc(func() { t.Error("a stopped AfterFunc ran") })
	if !never() || never() {
		t.Fatal("stop: want true once, then false")
	}
	base.cancel()
	base.cancel() // a second stop does nothing
	select {
	case <-child.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a derived context was not cancelled by the stop")
	}
	if !errors.Is(child.Err(), context.Canceled) || !errors.Is(context.Cause(child), context.Canceled) || !errors.Is(base.Err(), context.Canceled) {
		t.Fatalf("after the stop: child %v (cause %v), base %v", child.Err(), context.Cause(child), base.Err())
	}
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("AfterFunc did not run at the stop")
	}
	if stopF() {
		t.Fatal("stop after f ran: want false")
	}
	if base.after != nil {
		t.Fatalf("%d registrations left after the stop", len(base.after))
	}
	late, cancelLate := context.WithTimeout(base, time.Hour)
	defer cancelLate()
	if !errors.Is(late.Err(), context.Canceled) {
		t.Fatalf("a context derived after the stop: %v; want Canceled", late.Err())
	}
	after := make(chan struct{})
	base.AfterFunc(func() { close(after) })
	select {
	case <-after:
	case <-time.After(10 * time.Second):
		t.Fatal("AfterFunc after the stop did not run")
	}
}
