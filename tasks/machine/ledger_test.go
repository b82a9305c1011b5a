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
	if d := l.Ask("c", 1, res(t, map[string]float64{"CPU": 1}), false); len(d) != 0 {
		t.Fatalf("c's ask with no CPU free: %+v, want queued", d)
	}
	// d asks for a GPU, which is free: b waits for a CPU, which d does not take, so d goes
	// ahead of it.
	if d := l.Ask("d", 1, res(t, map[string]float64{"GPU": 1}), false); len(d) != 1 || d[0].Client != "d" || d[0].Granted.IsZero() {
		t.Fatalf("d's ask for a free GPU: %+v, want granted", d)
	}
	if l.Waiting() != 2 {
		t.Fatalf("waiting %d, want 2", l.Waiting())
	}
	d := l.Give("a", res(t, map[string]float64{"CPU": 1}))
	if len(d) != 1 || d[0].Client != "b" {
		t.Fatalf("a gave one CPU back: %+v, want b (the oldest) granted", d)
	}
	d = l.Give("a", res(t, map[string]float64{"CPU": 1}))
	if len(d) != 1 || d[0].Client != "c" {
		t.Fatalf("a gave its other CPU back: %+v, want c granted", d)
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
	l.Drop("d")
	if got, want := l.Free(), l.Total(); !got.Equal(want) {
		t.Fatalf("free %v after every client left, want %v", got, want)
	}
}

// TestLedgerLargeAskDoesNotBlockSmallOnes is the tester's case (three jobs on a 2-CPU
// machine): a holds one CPU for long, b waits for two, and c's one-CPU asks are served
// from the CPU that is free, again and again, instead of waiting behind b.
func TestLedgerLargeAskDoesNotBlockSmallOnes(t *testing.T) {
	l := NewLedger(res(t, map[string]float64{"CPU": 2}))
	one, two := res(t, map[string]float64{"CPU": 1}), res(t, map[string]float64{"CPU": 2})
	l.Ask("a", 1, one, false)
	if d := l.Ask("b", 1, two, false); len(d) != 0 {
		t.Fatalf("b's 2-CPU ask with one free: %+v, want queued", d)
	}
	for i := uint64(1); i <= 5; i++ {
		if d := l.Ask("c", i, one, false); len(d) != 1 || d[0].Client != "c" || !d[0].Granted.Equal(one) {
			t.Fatalf("c's ask %d with one CPU free while b waits for two: %+v, want granted", i, d)
		}
		if d := l.Give("c", one); len(d) != 0 {
			t.Fatalf("c gave its CPU back: %+v, want b still waiting (a holds the other)", d)
		}
		if l.Reserved() {
			t.Fatal("b reserves, yet what keeps it waiting is a's, not c's")
		}
	}
	if w := l.Wants(); len(w) != 0 {
		t.Fatalf("wants %v, want nothing (a holds its even share of the CPUs, c none)", w)
	}
	// a's task ends: b gets both CPUs.
	if d := l.Give("a", one); len(d) != 1 || d[0].Client != "b" || !d[0].Granted.Equal(two) {
		t.Fatalf("a gave its CPU back: %+v, want b granted two", d)
	}
}

// TestLedgerReservesForAnOvertakenAsk: a large ask is not starved by small asks that take
// turns: once what younger asks took ahead of it is all that keeps it waiting, it
// reserves: younger asks for what it lacks wait, their holders are asked for what they
// took ahead of it, and it is served as they give it back.
func TestLedgerReservesForAnOvertakenAsk(t *testing.T) {
	l := NewLedger(res(t, map[string]float64{"CPU": 2, "GPU": 1}))
	one, two := res(t, map[string]float64{"CPU": 1}), res(t, map[string]float64{"CPU": 2})
	l.Ask("a", 1, one, false)
	l.Ask("b", 1, two, false)
	if d := l.Ask("c", 1, one, false); len(d) != 1 || d[0].Client != "c" {
		t.Fatalf("c's ask with a CPU free: %+v, want granted (b lacks two)", d)
	}
	// a gives back and asks again: without a reservation a and c would take turns and
	// b would never see two CPUs free.
	if d := l.Give("a", one); len(d) != 0 {
		t.Fatalf("a gave its CPU back: %+v, want b still waiting", d)
	}
	if !l.Reserved() {
		t.Fatal("b waits only because c went ahead of it, yet it does not reserve")
	}
	if d := l.Ask("a", 2, one, false); len(d) != 0 {
		t.Fatalf("a asks again while b reserves: %+v, want queued behind b", d)
	}
	if d := l.Ask("d", 1, res(t, map[string]float64{"GPU": 1}), false); len(d) != 1 || d[0].Client != "d" {
		t.Fatalf("d asks for a GPU, which b does not need: %+v, want granted", d)
	}
	if d := l.Ask("e", 1, one, true); len(d) != 1 || d[0].Denied == "" {
		t.Fatalf("a now-ask for a CPU while b reserves: %+v, want denied", d)
	}
	if w := l.Wants(); !w["c"].Equal(one) {
		t.Fatalf("wants %v, want c to give back the CPU it took ahead of b", w)
	}
	d := l.Give("c", one)
	if len(d) != 1 || d[0].Client != "b" || !d[0].Granted.Equal(two) {
		t.Fatalf("c gave its CPU back: %+v, want b granted two", d)
	}
	if l.Reserved() || l.Waiting() != 1 {
		t.Fatalf("after b: reserved %v, waiting %d; want a's ask waiting unreserved", l.Reserved(), l.Waiting())
	}
	if d := l.Give("b", two); len(d) != 1 || d[0].Client != "a" {
		t.Fatalf("b gave back: %+v, want a granted", d)
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

// TestLedgerReservesAgainstTurnTaking: the holders of a 2-CPU machine give back a third
// of a CPU at a time (what an even share among three reclaims) and take it again at once
// while b waits for two CPUs. What each took again ahead of b counts while it holds it,
// so within a few turns b reserves, the turn-taking stops, and b is served once they give
// back what they took ahead of it.
func TestLedgerReservesAgainstTurnTaking(t *testing.T) {
	l := NewLedger(res(t, map[string]float64{"CPU": 2}))
	one, two, third := res(t, map[string]float64{"CPU": 1}), res(t, map[string]float64{"CPU": 2}), res(t, map[string]float64{"CPU": 1.0 / 3})
	l.Ask("a", 1, one, false)
	l.Ask("b", 1, two, false)
	l.Ask("c", 1, one, false) // granted: one CPU is free
	id := uint64(1)
	turns := 0
	for ; turns < 12 && !l.Reserved(); turns++ {
		x := []string{"a", "c"}[turns%2]
		if d := l.Give(x, third); len(d) != 0 {
			t.Fatalf("turn %d: %s gave back a third: %+v", turns, x, d)
		}
		if l.Reserved() {
			break
		}
		id++
		if d := l.Ask(x, id, third, false); len(d) != 1 || d[0].Client != x {
			t.Fatalf("turn %d: %s takes its third again: %+v, want granted (b not reserved yet)", turns, x, d)
		}
	}
	if !l.Reserved() {
		t.Fatalf("b does not reserve after %d turns of a and c taking back what they gave", turns)
	}
	if d := l.Ask("a", id+1, third, false); len(d) != 0 && d[0].Client == "a" {
		t.Fatalf("a asks again while b reserves: %+v, want it to wait", d)
	}
	w := l.Wants()
	if w["a"].IsZero() || w["c"].IsZero() {
		t.Fatalf("wants %v, want both a and c to give back what they took ahead of b", w)
	}
	var got []Decision
	for _, x := range []string{"a", "c"} {
		got = append(got, l.Give(x, l.Held(x))...)
	}
	if len(got) == 0 || got[0].Client != "b" || !got[0].Granted.Equal(two) {
		t.Fatalf("a and c gave back: %+v, want b granted two CPUs first", got)
	}
}
