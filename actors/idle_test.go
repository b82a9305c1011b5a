package actors

import (
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/spin"
)

// TestIdlePolicy: the executor polls for its next call only after a call of spinAfterRun or
// more and while its waits are short; a wait that outlasts the poll makes it block at once
// until a wait is short again.
func TestIdlePolicy(t *testing.T) {
	const poll = 200 * time.Millisecond
	defer spin.Set(poll, 2)()
	signal := make(chan struct{}, 1)
	var p idlePolicy

	p.ran(spinAfterRun / 2)
	if p.polls() {
		t.Fatal("polls after a call shorter than spinAfterRun")
	}
	signal <- struct{}{}
	p.wait(signal)

	p.ran(spinAfterRun)
	if !p.polls() {
		t.Fatal("does not poll after a call of spinAfterRun")
	}
	signal <- struct{}{} // the next call is there: the poll takes it
	p.wait(signal)
	p.ran(spinAfterRun)
	if !p.polls() {
		t.Fatal("does not poll after a wait the poll ended")
	}

	// The next call comes long after the poll gave up.
	go func() {
		time.Sleep(5 * poll)
		signal <- struct{}{}
	}()
	p.wait(signal)
	p.ran(spinAfterRun)
	if p.polls() {
		t.Fatal("polls again after a wait that outlasted the poll")
	}
	signal <- struct{}{} // short, not polled for: measured
	p.wait(signal)
	p.ran(spinAfterRun)
	if !p.polls() {
		t.Fatal("does not poll again after a short wait")
	}

	restore := spin.Set(poll, 1)
	if p.polls() {
		t.Error("polls with one P")
	}
	restore()
}
