package sched

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// leaseScript drives a Leases[int, string] through steps and checks what each Pump decides.
type leaseStep struct {
	name string
	do   func(l *Leases[int, string], now time.Time)
	// want: pushes as "lease:t1,t2", requests as "req:n" (n requests), releases as
	// "rel:lease"; in that order within a Pump.
	want []string
	at   time.Duration // the Pump's time, from the script's start
}

func describe(a Actions[int, string]) []string {
	var out []string
	for _, p := range a.Pushes {
		s := p.Lease + ":"
		for i, t := range p.Tasks {
			if i > 0 {
				s += ","
			}
			s += fmt.Sprint(t)
		}
		out = append(out, s)
	}
	if len(a.Requests) > 0 {
		out = append(out, fmt.Sprintf("req:%d", len(a.Requests)))
	}
	for _, r := range a.Releases {
		out = append(out, "rel:"+r.Lease)
	}
	return out
}

// runLeaseScript runs the script twice: with Pump, and with PumpInto reusing one Actions
// (which must decide the same).
func runLeaseScript(t *testing.T, steps []leaseStep) {
	t.Helper()
	for _, into := range []bool{false, true} {
		var l Leases[int, string]
		var a Actions[int, string]
		start := time.Unix(1000, 0)
		for i, s := range steps {
			now := start.Add(s.at)
			if s.do != nil {
				s.do(&l, now)
			}
			if into {
				l.PumpInto(now, &a)
			} else {
				a = l.Pump(now)
			}
			if got := describe(a); !slices.Equal(got, s.want) {
				t.Fatalf("step %d (%s): Pump (into a reused Actions: %v) gave %v, want %v", i, s.name, into, got, s.want)
			}
		}
	}
}

// TestLeasesPumpIntoReuses: pumping into one Actions allocates nothing once its slices
// have grown.
func TestLeasesPumpIntoReuses(t *testing.T) {
	var l Leases[int, string]
	var a Actions[int, string]
	now := time.Unix(0, 0)
	l.Add(0, cpuShape)
	l.PumpInto(now, &a)
	l.Granted(cpuShape, "A", "w", now)
	l.PumpInto(now, &a)
	task := 1
	allocs := testing.AllocsPerRun(100, func() {
		l.Done("A", 1, float64(time.Second)) // slow: one task at a time
		l.Add(task, cpuShape)
		l.PumpInto(now, &a)
		if len(a.Pushes) != 1 || len(a.Pushes[0].Tasks) != 1 || a.Pushes[0].Tasks[0] != task {
			t.Fatalf("task %d: %v", task, describe(a))
		}
		task++
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per pump of one task, want 0", allocs)
	}
}

var cpuShape, _ = FromMap(map[string]float64{CPU: 1})

func add(ts ...int) func(*Leases[int, string], time.Time) {
	return func(l *Leases[int, string], _ time.Time) {
		for _, t := range ts {
			l.Add(t, cpuShape)
		}
	}
}

func grant(id string) func(*Leases[int, string], time.Time) {
	return func(l *Leases[int, string], now time.Time) { l.Granted(cpuShape, id, "w-"+id, now) }
}

func done(id string, n int, mean time.Duration) func(*Leases[int, string], time.Time) {
	return func(l *Leases[int, string], _ time.Time) { l.Done(id, n, float64(mean)) }
}

func TestLeasesUnknownClassOneAtATime(t *testing.T) {
	runLeaseScript(t, []leaseStep{
		{name: "a task asks for a lease", do: add(1), want: []string{"req:1"}},
		{name: "the grant takes it", do: grant("A"), want: []string{"A:1"}},
		{name: "two more: one per lease while the class is unmeasured", do: add(2, 3), want: []string{"req:2"}},
		{name: "A's task is done (slow): A takes the next (the two requests are out still)", do: done("A", 1, 5*time.Millisecond), want: []string{"A:2"}},
		{name: "A's second is done: the last", do: done("A", 1, 5*time.Millisecond), want: []string{"A:3"}},
		{name: "A drains, nothing waits: A is kept", do: done("A", 1, 5*time.Millisecond), want: nil},
		{name: "the next task takes the idle lease, no request", do: add(4), at: IdleHold / 2, want: []string{"A:4"}},
		{name: "drained again", do: done("A", 1, 5*time.Millisecond), at: IdleHold, want: nil},
		{name: "idle for IdleHold: A goes back", at: 2 * IdleHold, want: []string{"rel:A"}},
	})
}

func TestLeasesShortTasksArePipelined(t *testing.T) {
	many := make([]int, 300)
	for i := range many {
		many[i] = 10 + i
	}
	runLeaseScript(t, []leaseStep{
		{name: "first task", do: add(1), want: []string{"req:1"}},
		{name: "granted", do: grant("A"), want: []string{"A:1"}},
		{name: "measured fast (10 µs): depth LeaseWork/10µs = 100", do: done("A", 1, 10*time.Microsecond), want: nil},
		{name: "300 tasks: A takes 100, two more leases' worth are asked for", do: add(many...), want: []string{"A:" + seq(10, 100), "req:2"}},
		{name: "one grant takes its depth (100)", do: grant("B"), want: []string{"B:" + seq(110, 100)}},
		{name: "the second grant the next 100", do: grant("C"), want: []string{"C:" + seq(210, 100)}},
	})
}

func seq(from, n int) string {
	s := ""
	for i := 0; i < n; i++ {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprint(from + i)
	}
	return s
}

func TestLeasesSpreadOverOpenLeases(t *testing.T) {
	runLeaseScript(t, []leaseStep{
		{name: "measure", do: func(l *Leases[int, string], now time.Time) { add(0)(l, now) }, want: []string{"req:1"}},
		{name: "grant A", do: grant("A"), want: []string{"A:0"}},
		{name: "fast", do: done("A", 1, 100*time.Microsecond), want: nil},
		{name: "two grants that come after the work: never used, they go at once", do: func(l *Leases[int, string], now time.Time) {
			l.Granted(cpuShape, "B", "w-B", now)
			l.Granted(cpuShape, "C", "w-C", now)
		}, want: []string{"rel:B", "rel:C"}},
		{name: "A, used, goes after IdleHold", at: IdleHold, want: []string{"rel:A"}},
	})
	var l Leases[int, string]
	now := time.Unix(0, 0)
	l.Add(0, cpuShape)
	l.Pump(now)
	l.Granted(cpuShape, "A", "w", now)
	l.Pump(now)
	l.Done("A", 1, float64(100*time.Microsecond))
	l.Add(1, cpuShape)
	l.Add(2, cpuShape)
	l.Add(3, cpuShape)
	l.Add(4, cpuShape)
	l.Add(5, cpuShape)
	l.Add(6, cpuShape)
	l.Granted(cpuShape, "B", "w", now)
	a := l.Pump(now)
	if len(a.Pushes) != 2 || len(a.Pushes[0].Tasks) != 3 || len(a.Pushes[1].Tasks) != 3 {
		t.Fatalf("6 tasks over two open leases: %v, want 3 and 3", describe(a))
	}
}

func TestLeasesBlockedAndOld(t *testing.T) {
	runLeaseScript(t, []leaseStep{
		{name: "a task", do: add(1), want: []string{"req:1"}},
		{name: "granted", do: grant("A"), want: []string{"A:1"}},
		{name: "fast class, two more", do: func(l *Leases[int, string], now time.Time) {
			l.Done("A", 1, float64(10*time.Microsecond))
			l.Add(2, cpuShape)
			l.Add(3, cpuShape)
		}, want: []string{"A:2,3"}},
		// Task 2 blocks: 3 comes back, A takes no more; 3 asks for a lease of its own.
		{name: "handed back", do: func(l *Leases[int, string], _ time.Time) { l.Returned("A", []int{3}) }, want: []string{"req:1"}},
		{name: "a new lease takes 3", do: grant("B"), want: []string{"B:3"}},
		{name: "2 finishes: A, closed and drained, goes at once", do: done("A", 1, 10*time.Microsecond), want: []string{"rel:A"}},
		// B is older than MaxAge when more arrive: it takes none, a new lease is asked for,
		// and B goes once drained.
		{name: "B grows old", do: add(4), at: 2 * MaxAge, want: []string{"req:1"}},
		{name: "B drains", do: done("B", 1, 10*time.Microsecond), at: 2 * MaxAge, want: []string{"rel:B"}},
		{name: "C takes 4", do: grant("C"), at: 2 * MaxAge, want: []string{"C:4"}},
	})
}

func TestLeasesDeniedRemoveDrain(t *testing.T) {
	var l Leases[int, string]
	now := time.Unix(0, 0)
	for _, x := range []int{1, 2, 3} {
		l.Add(x, cpuShape)
	}
	if a := l.Pump(now); len(a.Requests) != 3 {
		t.Fatalf("requests %d, want 3", len(a.Requests))
	}
	if !l.Remove(func(x int) bool { return x == 2 }) || l.Remove(func(x int) bool { return x == 9 }) {
		t.Fatal("Remove: want 2 found, 9 not")
	}
	if got := l.Denied(cpuShape); !slices.Equal(got, []int{1, 3}) {
		t.Fatalf("Denied returned %v, want [1 3]", got)
	}
	if l.Waiting() != 0 {
		t.Fatalf("%d still waiting after the denial", l.Waiting())
	}
	l.Add(4, cpuShape)
	l.Granted(cpuShape, "A", "w", now)
	l.Pump(now)
	l.Add(5, cpuShape)
	if got := l.Drain(); !slices.Equal(got, []int{5}) || l.Leased("A") {
		t.Fatalf("Drain returned %v (A still leased %v), want [5]", got, l.Leased("A"))
	}
}

func TestLeasesRevoked(t *testing.T) {
	runLeaseScript(t, []leaseStep{
		{name: "a task", do: add(1), want: []string{"req:1"}},
		{name: "granted", do: grant("A"), want: []string{"A:1"}},
		{name: "done: kept idle", do: done("A", 1, 5*time.Millisecond), want: nil},
		{name: "revoked while idle: released at once", do: func(l *Leases[int, string], _ time.Time) { l.Revoke("A") }, want: []string{"rel:A"}},
		{name: "another task", do: add(2), want: []string{"req:1"}},
		{name: "granted", do: grant("B"), want: []string{"B:2"}},
		{name: "revoked while busy, a task waits: B takes it not, a lease is asked for", do: func(l *Leases[int, string], now time.Time) {
			l.Revoke("B")
			add(3)(l, now)
		}, want: []string{"req:1"}},
		{name: "B's task done: B goes", do: done("B", 1, 5*time.Millisecond), want: []string{"rel:B"}},
	})
}

// TestLeasesRevokedAtGrant: a lease revoked before it took a task (the scheduler revokes a
// lease as it grants it while other owners wait) takes one push of what waits, then no
// more, and goes back once that is done; with nothing waiting it goes back at once. Were it
// given back unused, two owners revoking each other's fresh leases would trade them
// without running a task.
func TestLeasesRevokedAtGrant(t *testing.T) {
	revoke := func(id string) func(*Leases[int, string], time.Time) {
		return func(l *Leases[int, string], _ time.Time) { l.Revoke(id) }
	}
	runLeaseScript(t, []leaseStep{
		{name: "a task", do: add(1), want: []string{"req:1"}},
		{name: "granted and revoked in one turn: it takes what waits", do: func(l *Leases[int, string], now time.Time) {
			grant("A")(l, now)
			revoke("A")(l, now)
		}, want: []string{"A:1"}},
		{name: "a task after its push: A takes it not, a lease is asked for", do: add(2), want: []string{"req:1"}},
		{name: "A's task done: A goes (not kept idle)", do: done("A", 1, 5*time.Millisecond), want: []string{"rel:A"}},
		{name: "granted: B takes the waiting task", do: grant("B"), want: []string{"B:2"}},
		{name: "revoked after its push: closed as before", do: func(l *Leases[int, string], now time.Time) {
			revoke("B")(l, now)
			add(3)(l, now)
		}, want: []string{"req:1"}},
		{name: "B done: B goes", do: done("B", 1, 5*time.Millisecond), want: []string{"rel:B"}},
		{name: "C granted: takes task 3", do: grant("C"), want: []string{"C:3"}},
		{name: "C done: kept idle", do: done("C", 1, 5*time.Millisecond), want: nil},
		{name: "D granted and revoked with nothing waiting: goes at once, unused", do: func(l *Leases[int, string], now time.Time) {
			grant("D")(l, now)
			revoke("D")(l, now)
		}, want: []string{"rel:D"}},
	})
}

// Spillback: a class whose request has gone unanswered for a while is reported stalled
// (once per interval), an answer restarts the clock, and Take moves out the tasks the
// owner places elsewhere, leaving the rest in order.
func TestLeasesStalledAndTake(t *testing.T) {
	var l Leases[int, string]
	cpu := R(map[string]float64{"CPU": 1})
	start := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	for i := 1; i <= 5; i++ {
		l.Add(i, cpu)
	}
	if a := l.Pump(at(0)); len(a.Requests) != 5 {
		t.Fatalf("requests = %d, want 5 (unknown task length: one task per lease)", len(a.Requests))
	}
	l.Queued(cpu) // the node says it queued one
	if s := l.Stalled(at(40*time.Millisecond), 50*time.Millisecond, time.Second); len(s) != 0 {
		t.Fatalf("stalled after 40 ms: %v", s)
	}
	// A grant restarts the clock; the class keeps asking for more (4 tasks wait).
	l.Granted(cpu, "L1", "w1", at(45*time.Millisecond))
	if got := describe(l.Pump(at(45 * time.Millisecond))); !slices.Equal(got, []string{"L1:1"}) {
		t.Fatalf("after the grant: %v, want [L1:1]", got)
	}
	if s := l.Stalled(at(90*time.Millisecond), 50*time.Millisecond, time.Second); len(s) != 0 {
		t.Fatalf("stalled 45 ms after a grant: %v", s)
	}
	s := l.Stalled(at(100*time.Millisecond), 50*time.Millisecond, time.Second)
	if len(s) != 1 || !s[0].Equal(cpu) {
		t.Fatalf("stalled 55 ms after the last answer = %v, want the CPU class", s)
	}
	if s := l.Stalled(at(120*time.Millisecond), 50*time.Millisecond, time.Second); len(s) != 0 {
		t.Fatalf("reported again within the interval: %v", s)
	}
	moved := l.Take(cpu, func(t int) bool { return t%2 == 0 })
	if !slices.Equal(moved, []int{2, 4}) {
		t.Fatalf("Take moved %v, want [2 4]", moved)
	}
	if l.Waiting() != 2 {
		t.Fatalf("waiting = %d, want 2", l.Waiting())
	}
	l.Done("L1", 1, 0)
	old := 45*time.Millisecond + MaxAge + time.Millisecond // L1 is past MaxAge by then
	l.Granted(cpu, "L2", "w2", at(old))
	if got := describe(l.Pump(at(old))); !slices.Equal(got, []string{"L2:3", "rel:L1"}) {
		t.Fatalf("the rest keep their order: %v, want [L2:3 rel:L1] (L1 is past MaxAge)", got)
	}
	// Every request answered: nothing is stalled, however long tasks wait.
	l.Denied(R(map[string]float64{"GPU": 1})) // another class: no effect on this one
	for i := range 3 {                        // the 3 requests still outstanding
		l.Granted(cpu, fmt.Sprint("M", i), "w", at(old+10*time.Millisecond))
	}
	if s := l.Stalled(at(time.Hour), 50*time.Millisecond, time.Second); len(s) != 0 {
		t.Fatalf("stalled with no request outstanding: %v", s)
	}
}

// TestLeasesStallOnlyLateWithoutWord: a request the node has said nothing about stalls
// its class only after silent, not after; once the node says it queued one, after
// applies; with no request left outstanding the word is forgotten.
func TestLeasesStallOnlyLateWithoutWord(t *testing.T) {
	var l Leases[int, string]
	start := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	const after, silent = 50 * time.Millisecond, time.Second
	l.Add(1, cpuShape)
	l.Add(2, cpuShape)
	l.Pump(at(0))
	if s := l.Stalled(at(900*time.Millisecond), after, silent); len(s) != 0 {
		t.Fatalf("stalled 900 ms into a silence shorter than %v: %v", silent, s)
	}
	if s := l.Stalled(at(silent), after, silent); len(s) != 1 {
		t.Fatalf("not stalled after %v of silence: %v", silent, s)
	}
	// The clock started again at 1 s; the node now says it queued a request.
	l.Queued(cpuShape)
	if s := l.Stalled(at(silent+after), after, silent); len(s) != 1 {
		t.Fatalf("not stalled %v after the node queued the request: %v", after, s)
	}
	// Both requests answered: nothing outstanding, the word forgotten.
	l.Granted(cpuShape, "A", "w", at(2*silent))
	l.Granted(cpuShape, "B", "w", at(2*silent))
	l.Pump(at(2 * silent))
	l.Add(3, cpuShape)
	l.Add(4, cpuShape)
	l.Add(5, cpuShape)
	l.Pump(at(2 * silent)) // both leases run one unmeasured task each: more requests
	if s := l.Stalled(at(2*silent+2*after), after, silent); len(s) != 0 {
		t.Fatalf("a new request stalled on an earlier request's word: %v", s)
	}
	// Word for a class with nothing outstanding is ignored.
	var m Leases[int, string]
	m.Queued(cpuShape)
	if s := m.Stalled(at(time.Hour), after, silent); len(s) != 0 {
		t.Fatalf("stalled with nothing asked: %v", s)
	}
}

// TestLeasesRoom: a class has room for one more task when its open leases' free slots
// (of the class's depth) outnumber its waiting tasks; a closed lease, one older than
// MaxAge, a class not seen and a full unmeasured lease have none.
func TestLeasesRoom(t *testing.T) {
	start := time.Unix(1000, 0)
	var l Leases[int, string]
	if l.Room(cpuShape, start) {
		t.Fatal("room in a class never seen")
	}
	l.Add(1, cpuShape)
	l.Pump(start)
	if l.Room(cpuShape, start) {
		t.Fatal("room with a request out and no lease")
	}
	l.Granted(cpuShape, "A", "w", start)
	l.Pump(start) // A takes task 1
	if l.Room(cpuShape, start) {
		t.Fatal("room on an unmeasured lease running its one task")
	}
	l.Done("A", 1, float64(5*time.Millisecond)) // slow: depth 1
	l.Pump(start)                               // A is kept idle
	if !l.Room(cpuShape, start) {
		t.Fatal("no room on a lease kept idle")
	}
	l.Add(2, cpuShape)
	if l.Room(cpuShape, start) {
		t.Fatal("room for a second task on an idle lease of depth 1 with one waiting")
	}
	l.Pump(start) // A takes task 2
	for range 20 {
		l.Done("A", 0, float64(10*time.Microsecond)) // measured fast (the mean moves 30% a time)
	}
	l.Done("A", 1, float64(10*time.Microsecond))
	l.Add(3, cpuShape)
	l.Pump(start) // A takes task 3: one in flight of the depth
	if !l.Room(cpuShape, start) {
		t.Fatal("no room on a lease of a short class with free slots")
	}
	if l.Room(cpuShape, start.Add(MaxAge+time.Millisecond)) {
		t.Fatal("room on a lease older than MaxAge")
	}
	l.Revoke("A")
	if l.Room(cpuShape, start) {
		t.Fatal("room on a revoked lease")
	}
}

// TestLeasesForgetEmptyClasses: an owner whose tasks come in ever new shapes (a placement
// group per trial, each with its own bundle resources) keeps at most idleClasses classes
// with nothing in them; a class with a task waiting, a lease or a request outstanding is
// kept, and one dropped comes back unmeasured when its shape does.
func TestLeasesForgetEmptyClasses(t *testing.T) {
	var l Leases[int, string]
	now := time.Unix(1000, 0)
	shape := func(i int) Resources {
		r, err := FromMap(map[string]float64{fmt.Sprintf("CPU_group_%d", i): 1})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// A class kept busy throughout: a lease held, measured fast.
	busy := cpuShape
	l.Add(-1, busy)
	l.Pump(now)
	l.Granted(busy, "busy", "w", now)
	l.Pump(now)
	l.Done("busy", 1, float64(time.Microsecond))
	for i := range 200 {
		l.Add(i, shape(i))
		a := l.Pump(now) // a request for the new shape
		if len(a.Requests) != 1 {
			t.Fatalf("shape %d: %d requests, want 1", i, len(a.Requests))
		}
		id := fmt.Sprint("lease-", i)
		l.Granted(shape(i), id, "w", now)
		a = l.Pump(now)
		if len(a.Pushes) != 1 || a.Pushes[0].Tasks[0] != i {
			t.Fatalf("shape %d: pushes %v, want task %d on the new lease", i, describe(a), i)
		}
		l.Done(id, 1, float64(time.Microsecond))
		l.Lost(id) // released: the class is empty now
		if len(l.classes) > idleClasses+2 {
			t.Fatalf("after %d shapes: %d classes kept, want at most %d", i+1, len(l.classes), idleClasses+2)
		}
	}
	if c := l.find(busy); c == nil || len(c.leases) != 1 || c.mean == 0 {
		t.Fatalf("the busy class: %+v, want it kept with its lease and mean", c)
	}
	if c := l.find(shape(0)); c != nil {
		t.Fatal("the first shape's empty class is still kept")
	}
	// Its shape again: a class of its own, unmeasured (one task per lease).
	l.Add(1000, shape(0))
	if c := l.find(shape(0)); c == nil || c.mean != 0 || c.depth() != 1 {
		t.Fatalf("the first shape again: %+v, want a new unmeasured class", c)
	}
}

// TestLeasesStarved: a class starves once its tasks have waited `after` with a request
// unanswered, however often Stalled reported it meanwhile; an answer starts the wait
// again; with every request answered, or no task waiting, it does not starve.
func TestLeasesStarved(t *testing.T) {
	var l Leases[int, string]
	cpu := R(map[string]float64{"CPU": 1})
	start := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	if l.Starved(at(time.Hour), time.Second) {
		t.Fatal("an empty Leases starves")
	}
	l.Add(1, cpu)
	l.Add(2, cpu)
	if a := l.Pump(at(0)); len(a.Requests) != 2 {
		t.Fatalf("requests = %d, want 2", len(a.Requests))
	}
	l.Queued(cpu)
	for d := 100 * time.Millisecond; d < time.Second; d += 100 * time.Millisecond {
		l.Stalled(at(d), 50*time.Millisecond, time.Second) // spillback's checks: no effect here
		if l.Starved(at(d), time.Second) {
			t.Fatalf("starved after %v, before a second", d)
		}
	}
	if !l.Starved(at(time.Second), time.Second) {
		t.Fatal("not starved after a second without an answer (Stalled's reports in between)")
	}
	// A grant is progress: the wait starts again from it.
	l.Granted(cpu, "L1", "w1", at(1500*time.Millisecond))
	l.Pump(at(1500 * time.Millisecond)) // task 1 goes to L1; task 2 still waits
	if l.Starved(at(2*time.Second), time.Second) {
		t.Fatal("starved half a second after a grant")
	}
	if !l.Starved(at(2500*time.Millisecond), time.Second) {
		t.Fatal("not starved a second after the last answer with a task still waiting")
	}
	// Nothing waits once the last task has a lease: no starving, whatever the clock.
	l.Granted(cpu, "L2", "w2", at(2600*time.Millisecond))
	if got := describe(l.Pump(at(2600 * time.Millisecond))); !slices.Equal(got, []string{"L2:2"}) {
		t.Fatalf("the second grant: %v, want [L2:2]", got)
	}
	if l.Starved(at(time.Hour), time.Second) {
		t.Fatal("starved with no task waiting")
	}
}
