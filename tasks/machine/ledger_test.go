package machine

import (
	"testing"

	"github.com/ray-go/ray/tasks/sched"
)

func res(t *testing.T, m map[string]float64) sched.Resources {
	t.Helper()
	r, err := sched.FromMap(m)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestLedgerGrantsOldestFirstAndTakesBack(t *testing.T) {
	l := NewLedger(res(t, map[string]float64{"CPU": 2, "GPU": 1}))
	if d := l.Ask("a", 1, res(t, map[string]float64{"CPU": 2}), false); len(d) != 1 || d[0].Granted.IsZero() {
		t.Fatalf("a's ask with the machine free: %+v, want granted", d)
	}
	if d := l.Ask("b", 1, res(t, map[string]float64{"CPU": 1}), false); len(d) != 0 {
		t.Fatalf("b's ask with no CPU free: %+v, want queued", d)
	}
	// c asks for a GPU, which is free, but b is first in line: c waits (no starving b).
	if d := l.Ask("c", 1, res(t, map[string]float64{"GPU": 1}), false); len(d) != 0 {
		t.Fatalf("c's ask behind b: %+v, want queued", d)
	}
	if l.Waiting() != 2 {
		t.Fatalf("waiting %d, want 2", l.Waiting())
	}
	d := l.Give("a", res(t, map[string]float64{"CPU": 1}))
	if len(d) != 2 || d[0].Client != "b" || d[1].Client != "c" {
		t.Fatalf("a gave one CPU back: %+v, want b then c granted", d)
	}
	if got := l.Free(); !got.IsZero() {
		t.Fatalf("free %v, want nothing", got)
	}
	// Giving back more than held gives back only what is held.
	if d := l.Give("b", res(t, map[string]float64{"CPU": 5})); len(d) != 0 {
		t.Fatalf("%+v", d)
	}
	if got, want := l.Free(), res(t, map[string]float64{"CPU": 1}); !got.Equal(want) {
		t.Fatalf("free %v, want %v", got, want)
	}
	// A client that goes gives back everything.
	l.Drop("a")
	l.Drop("c")
	if got, want := l.Free(), l.Total(); !got.Equal(want) {
		t.Fatalf("free %v after every client left, want %v", got, want)
	}
}

func TestLedgerDeniesInfeasibleAndNowAsks(t *testing.T) {
	l := NewLedger(res(t, map[string]float64{"CPU": 2}))
	if d := l.Ask("a", 1, res(t, map[string]float64{"CPU": 3}), false); len(d) != 1 || d[0].Denied == "" {
		t.Fatalf("an ask over the machine's total: %+v, want denied", d)
	}
	if d := l.Ask("a", 2, res(t, map[string]float64{"accel": 1}), false); len(d) != 1 || d[0].Denied == "" {
		t.Fatalf("an ask for a resource the machine lacks: %+v, want denied", d)
	}
	l.Ask("a", 3, res(t, map[string]float64{"CPU": 2}), false)
	if d := l.Ask("b", 1, res(t, map[string]float64{"CPU": 1}), true); len(d) != 1 || d[0].Denied == "" {
		t.Fatalf("a now-ask with nothing free: %+v, want denied", d)
	}
	if l.Waiting() != 0 {
		t.Fatal("a denied now-ask must not wait")
	}
}

func TestLedgerAskReplacesAndWithdraws(t *testing.T) {
	l := NewLedger(res(t, map[string]float64{"CPU": 2}))
	l.Ask("a", 1, res(t, map[string]float64{"CPU": 2}), false)
	l.Ask("b", 1, res(t, map[string]float64{"CPU": 2}), false)
	l.Ask("c", 1, res(t, map[string]float64{"CPU": 1}), false)
	// b asks for less: its ask is replaced in its place, before c.
	if d := l.Ask("b", 2, res(t, map[string]float64{"CPU": 1}), false); len(d) != 0 {
		t.Fatalf("%+v", d)
	}
	d := l.Give("a", res(t, map[string]float64{"CPU": 1}))
	if len(d) != 1 || d[0].Client != "b" || d[0].ID != 2 {
		t.Fatalf("one CPU back: %+v, want b's second ask granted", d)
	}
	// c withdraws: an ask for nothing is granted at once and c no longer waits.
	d = l.Ask("c", 2, sched.Resources{}, false)
	if len(d) != 1 || d[0].Client != "c" || d[0].ID != 2 || !d[0].Granted.IsZero() || d[0].Denied != "" {
		t.Fatalf("withdrawal: %+v", d)
	}
	if l.Waiting() != 0 {
		t.Fatalf("waiting %d after the withdrawal", l.Waiting())
	}
}

func TestLedgerWantsAnEvenShare(t *testing.T) {
	l := NewLedger(res(t, map[string]float64{"CPU": 4}))
	l.Ask("a", 1, res(t, map[string]float64{"CPU": 4}), false)
	if w := l.Wants(); len(w) != 0 {
		t.Fatalf("nobody waits, yet %v", w)
	}
	l.Ask("b", 1, res(t, map[string]float64{"CPU": 1}), false)
	if w := l.Wants(); len(w) != 1 || !w["a"].Equal(res(t, map[string]float64{"CPU": 1})) {
		t.Fatalf("b waits for 1 CPU: wants %v, want a to give back 1", w)
	}
	l.Ask("b", 2, res(t, map[string]float64{"CPU": 3}), false)
	if w := l.Wants(); !w["a"].Equal(res(t, map[string]float64{"CPU": 2})) {
		t.Fatalf("b waits for 3 CPUs: wants %v, want a to give back 2 (down to an even share)", w)
	}
	l.Give("a", res(t, map[string]float64{"CPU": 3}))
	if w := l.Wants(); len(w) != 0 {
		t.Fatalf("b was served, yet %v", w)
	}
}
