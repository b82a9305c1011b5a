package raylet

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks/machine"
	"github.com/ray-go/ray/tasks/sched"
)

// serveMachine serves a machine ledger of total on a socket in a test directory.
func serveMachine(t *testing.T, total map[string]float64) *machine.Server {
	t.Helper()
	s, err := machine.Serve(filepath.Join(t.TempDir(), "m.sock"), machine.NewLedger(res(t, total)),
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func res(t *testing.T, m map[string]float64) sched.Resources {
	t.Helper()
	r, err := sched.FromMap(m)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// twoJobs is a 2-CPU machine's ledger and the raylets of two jobs' worker processes on it.
func twoJobs(t *testing.T) (*machine.Server, *harness, *harness) {
	t.Helper()
	m := serveMachine(t, map[string]float64{sched.CPU: 2})
	return m, newHarnessOn(t, map[string]float64{sched.CPU: 2}, 2, m.Path()), newHarnessOn(t, map[string]float64{sched.CPU: 2}, 2, m.Path())
}

// eventuallyFree waits (bounded) until the ledger has want free.
func eventuallyFree(t *testing.T, s *machine.Server, want map[string]float64) {
	t.Helper()
	w := res(t, want)
	eventually.True(t, 10*time.Second, fmt.Sprintf("the machine to have %v free", w), func() bool { return s.Ledger().Free().Equal(w) })
}

// TestMachineSharedByTwoRaylets: two worker processes' raylets on one 2-CPU machine grant
// 2 CPUs of leases between them, never more: the second waits until the first's leases
// come back, and what a raylet no longer uses goes back to the machine.
func TestMachineSharedByTwoRaylets(t *testing.T) {
	m, a, b := twoJobs(t)
	a.ask(a.owner, cpu1)
	a.ask(a.owner, cpu1)
	ga := a.grants(a.owner, 2)
	b.ask(b.owner, cpu1)
	b.noGrant(b.owner)
	// A negative check: through a window of b's wait nothing may be granted (a bounded
	// sleep is the honest tool for "does not happen").
	time.Sleep(30 * time.Millisecond)
	b.noGrant(b.owner)
	if st := b.stats(); !st.Machine || st.Queued != 3 || st.Available.Get(sched.CPU) != 0 {
		t.Fatalf("b's stats while it waits: %+v", st)
	}
	if st := a.stats(); st.InUse.Get(sched.CPU) != 2*sched.Unit {
		t.Fatalf("a's stats: %+v, want 2 CPUs in use", st)
	}
	a.send(release(ga[0]))
	gb := b.grants(b.owner, 1)
	// a keeps its other lease; b now holds one CPU: the machine has none free.
	eventuallyFree(t, m, map[string]float64{})
	a.send(release(ga[1]))
	b.send(release(gb[0]))
	// Both trim what they no longer use.
	eventuallyFree(t, m, map[string]float64{sched.CPU: 2})
	// a's report counts the machine's free CPUs as available (FREE comes within ~20 ms).
	eventually.True(t, 10*time.Second, "a's stats once idle: nothing in use and the machine's 2 CPUs available", func() bool {
		st := a.stats()
		return st.InUse.IsZero() && st.Available.Get(sched.CPU) == 2*sched.Unit
	})
}

// TestMachineAloneAsksNothingWhileItHoldsAll: a raylet that holds its machine's every CPU
// (one job on the machine, more lease requests than CPUs) serves its queued requests from
// its own leases as they come back, without asking the ledger for what nobody else holds:
// before, each request that queued cost an ask and its withdrawal (in `benchmarks/scale
// -nodes`, ~1 ask and 1 grant per task, ~45% of the machine's CPU at 8 nodes).
func TestMachineAloneAsksNothingWhileItHoldsAll(t *testing.T) {
	m := serveMachine(t, map[string]float64{sched.CPU: 2})
	a := newHarnessOn(t, map[string]float64{sched.CPU: 2}, 2, m.Path())
	a.ask(a.owner, cpu1)
	a.ask(a.owner, cpu1)
	held := a.grants(a.owner, 2)
	eventuallyFree(t, m, map[string]float64{})
	before := a.asks.Load()
	for i := range 20 {
		a.ask(a.owner, cpu1) // queues: both CPUs are leased
		a.send(release(held[i%2]))
		held[i%2] = a.grants(a.owner, 1)[0]
	}
	if n := a.asks.Load() - before; n != 0 {
		t.Fatalf("%d asks of the ledger while the raylet held all of the machine's CPUs, want 0", n)
	}
	if m.Ledger().Waiting() != 0 {
		t.Fatalf("%d asks waiting at the ledger, want none", m.Ledger().Waiting())
	}
	// It still gives back what it no longer uses.
	a.send(release(held[0]))
	a.send(release(held[1]))
	eventuallyFree(t, m, map[string]float64{sched.CPU: 2})
}

// TestMachineNoHoldAndWait: each raylet holds one CPU and wants a 2-CPU lease: neither
// may keep its idle CPU while it waits for the other's, or both wait for ever.
func TestMachineNoHoldAndWait(t *testing.T) {
	m, a, b := twoJobs(t)
	a.ask(a.owner, cpu1)
	b.ask(b.owner, cpu1)
	ga, gb := a.grants(a.owner, 1), b.grants(b.owner, 1)
	cpu2 := map[string]float64{sched.CPU: 2}
	a.ask(a.owner, cpu2)
	b.ask(b.owner, cpu2)
	a.send(release(ga[0]))
	b.send(release(gb[0]))
	// One of them gets 2 CPUs; when it gives them back, the other does.
	var first, second *harness
	select {
	case g := <-a.owner.grants:
		first, second = a, b
		first.send(release(g))
	case g := <-b.owner.grants:
		first, second = b, a
		first.send(release(g))
	case <-time.After(10 * time.Second):
		t.Fatalf("neither 2-CPU lease granted (machine free %v, waiting asks %d): hold and wait", m.Ledger().Free(), m.Ledger().Waiting())
	}
	g := second.grants(second.owner, 1)
	second.send(release(g[0]))
	_ = first
	eventuallyFree(t, m, cpu2)
}

// TestMachineBundleNowOrNever: a bundle is committed only with what the machine has free
// now; a refusal says why, and a commit once it is free succeeds.
func TestMachineBundleNowOrNever(t *testing.T) {
	m, a, b := twoJobs(t)
	a.ask(a.owner, map[string]float64{sched.CPU: 2})
	ga := a.grants(a.owner, 1)
	if r := b.commit(bundleMsg("g1", 0, cpu1, false)); r.Ok || r.Message == "" {
		t.Fatalf("a bundle on a full machine: %+v, want refused with a reason", r)
	}
	a.send(release(ga[0]))
	eventuallyFree(t, m, map[string]float64{sched.CPU: 2})
	if r := b.commit(bundleMsg("g1", 0, cpu1, false)); !r.Ok {
		t.Fatalf("a bundle on a free machine: %+v", r)
	}
	eventuallyFree(t, m, map[string]float64{sched.CPU: 1})
	if r := b.commit(bundleMsg("g1", -1, nil, true)); !r.Ok {
		t.Fatalf("release: %+v", r)
	}
	eventuallyFree(t, m, map[string]float64{sched.CPU: 2})
}

// TestMachineClientGoneGivesBack: a worker process that dies (its connection closes)
// gives back what its raylet held.
func TestMachineClientGoneGivesBack(t *testing.T) {
	m := serveMachine(t, map[string]float64{sched.CPU: 2})
	c, err := machine.Dial(m.Path(), "doomed", func(*pb.MachineMsg) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ask(1, res(t, map[string]float64{sched.CPU: 2}), false); err != nil {
		t.Fatal(err)
	}
	eventuallyFree(t, m, map[string]float64{})
	_ = c.Close()
	eventuallyFree(t, m, map[string]float64{sched.CPU: 2})
}

// TestMachineReclaimFromABusyJob: a job that keeps its machine busy (more leases queued
// than the machine holds) gives back its excess when another job waits: its raylet revokes
// a lease, and when that lease comes back its CPU goes to the machine, not to its own
// queue, so the other job gets an even share.
func TestMachineReclaimFromABusyJob(t *testing.T) {
	_, a, b := twoJobs(t)
	for range 4 {
		a.ask(a.owner, cpu1)
	}
	ga := a.grants(a.owner, 2) // two run, two wait
	b.ask(b.owner, cpu1)
	var revoked *pb.LeaseRevoke
	select {
	case revoked = <-a.owner.revokes:
	case <-time.After(10 * time.Second):
		t.Fatal("a was not asked to give a lease back while b waits")
	}
	for _, g := range ga {
		if string(g.LeaseId) == string(revoked.LeaseId) {
			a.send(release(g))
		}
	}
	b.grants(b.owner, 1)
	a.noGrant(a.owner) // its own queue did not take the CPU back
	if st := a.stats(); st.InUse.Get(sched.CPU) != sched.Unit || st.Queued < 2 {
		t.Fatalf("a after giving one back: %+v, want 1 CPU in use and its queue waiting", st)
	}
}

// TestMachineLargeAskDoesNotBlockOtherJobs is the tester's case at the raylets: on a 2-CPU
// machine job a holds one CPU, job b waits for a 2-CPU lease, and job c's 1-CPU leases
// run one after another on the CPU that is free instead of waiting behind b (before, the
// ledger served asks strictly in order and c waited until a's lease ended).
func TestMachineLargeAskDoesNotBlockOtherJobs(t *testing.T) {
	m := serveMachine(t, map[string]float64{sched.CPU: 2})
	on := func() *harness { return newHarnessOn(t, map[string]float64{sched.CPU: 2}, 2, m.Path()) }
	a, b, c := on(), on(), on()
	a.ask(a.owner, cpu1)
	a.grants(a.owner, 1)
	b.ask(b.owner, map[string]float64{sched.CPU: 2})
	eventually.True(t, 10*time.Second, "b's 2-CPU ask to wait at the ledger", func() bool { return m.Ledger().Waiting() == 1 })
	for i := range 5 {
		c.ask(c.owner, cpu1)
		select {
		case g := <-c.owner.grants:
			c.send(release(g))
		case <-time.After(5 * time.Second):
			t.Fatalf("c's 1-CPU lease %d not granted while one CPU is free and b waits for two (free %v, waiting %d)",
				i, m.Ledger().Free(), m.Ledger().Waiting())
		}
	}
	b.noGrant(b.owner)
}

// TestMachineLargeAskDoesNotBlockItsOwnSmallOnes: the same within one job: its raylet
// waits for a 2-CPU lease while the machine has one CPU free; its 1-CPU requests that
// come after get that CPU (the raylet's ask is for what fits the machine, not only for its
// oldest demand), and the 2-CPU lease is granted once the machine has both.
func TestMachineLargeAskDoesNotBlockItsOwnSmallOnes(t *testing.T) {
	for _, alone := range []bool{false, true} {
		t.Run(map[bool]string{false: "another job holds a CPU", true: "alone"}[alone], func(t *testing.T) {
			m, a, b := twoJobs(t)
			holder := a
			if alone {
				holder = b
			}
			holder.ask(holder.owner, cpu1)
			held := holder.grants(holder.owner, 1)
			b.ask(b.owner, map[string]float64{sched.CPU: 2})
			b.noGrant(b.owner)
			for i := range 3 {
				b.ask(b.owner, cpu1)
				select {
				case g := <-b.owner.grants:
					b.send(release(g))
				case <-time.After(5 * time.Second):
					t.Fatalf("b's 1-CPU lease %d not granted while one CPU is free and its 2-CPU request waits (free %v, waiting %d)",
						i, m.Ledger().Free(), m.Ledger().Waiting())
				}
			}
			holder.send(release(held[0]))
			g := b.grants(b.owner, 1)
			b.send(release(g[0]))
			eventuallyFree(t, m, map[string]float64{sched.CPU: 2})
		})
	}
}

// TestMachineLargeAskNotStarvedByStreams: jobs a and c each run a stream of 1-CPU leases
// on a 2-CPU machine (every lease that ends is followed by the next request) while job b
// waits for a 2-CPU lease. The ledger lets smaller asks go ahead of b's only while they do
// not starve it: b is granted while a and c still have work. (The probe owners' channels
// of revokes and of words that a request waits are drained: full, they would block the
// owner and its grants, which looks like starvation and is not.)
func TestMachineLargeAskNotStarvedByStreams(t *testing.T) {
	m := serveMachine(t, map[string]float64{sched.CPU: 2})
	on := func() *harness { return newHarnessOn(t, map[string]float64{sched.CPU: 2}, 2, m.Path()) }
	a, b, c := on(), on(), on()
	a.ask(a.owner, cpu1)
	ga := a.grants(a.owner, 1)
	c.ask(c.owner, cpu1)
	gc := c.grants(c.owner, 1)
	eventuallyFree(t, m, map[string]float64{})
	b.ask(b.owner, map[string]float64{sched.CPU: 2})
	// Each stream keeps two requests waiting behind the lease it holds; every lease it gets
	// ends at once and is followed by the next request.
	for _, h := range []*harness{a, c} {
		h.ask(h.owner, cpu1)
		h.ask(h.owner, cpu1)
	}
	a.send(release(ga[0]))
	c.send(release(gc[0]))
	turns := 0
	deadline := time.After(10 * time.Second)
	for {
		select {
		case <-b.owner.grants:
			t.Logf("b's 2-CPU lease granted after %d leases of a and c", turns)
			return
		case g := <-a.owner.grants:
			turns++
			a.send(release(g))
			a.ask(a.owner, cpu1)
		case g := <-c.owner.grants:
			turns++
			c.send(release(g))
			c.ask(c.owner, cpu1)
		case <-a.owner.revokes:
		case <-c.owner.revokes:
		case <-a.owner.queued:
		case <-c.owner.queued:
		case <-b.owner.queued:
		case <-deadline:
			l := m.Ledger()
			t.Fatalf("b's 2-CPU lease not granted in 10 s while a and c ran %d leases (free %v, waiting %d, reserved %v, held %v %v %v, wants %v; stats a %+v c %+v)",
				turns, l.Free(), l.Waiting(), l.Reserved(), l.Held("c1"), l.Held("c2"), l.Held("c3"), l.Wants(), a.stats(), c.stats())
		}
	}
}
