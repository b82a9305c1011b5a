package raylet

import (
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/tasks/sched"
)

// liveAgrees checks that h's Live gives what Stats gives (after a Stats round trip, the
// raylet has handled and published everything sent before) and returns it.
func (h *harness) liveAgrees() Load {
	h.t.Helper()
	st := h.stats()
	l, ok := h.live.Load(0)
	if !ok {
		h.t.Fatal("no live load after the raylet handled messages")
	}
	if !l.Available.Equal(st.Available) || l.Queued != st.Queued {
		h.t.Fatalf("live load %v queued %d, Stats %v queued %d", l.Available, l.Queued, st.Available, st.Queued)
	}
	return l
}

// TestLiveLoadFollowsLeases: the load a raylet publishes (Config.Live) is its Stats' free
// resources and queue after every grant, wait and release, under a new version each time
// they change and the same version while they do not; a reader that passes the version
// it has gets no figures.
func TestLiveLoadFollowsLeases(t *testing.T) {
	h := newHarness(t, map[string]float64{sched.CPU: 2}, 2)
	idle := h.liveAgrees()
	if idle.Available.Get(sched.CPU) != 2*sched.Unit || idle.Queued != 0 {
		t.Fatalf("idle: %+v", idle)
	}
	h.ask(h.owner, cpu1)
	g := h.grants(h.owner, 1)
	one := h.liveAgrees()
	if one.Available.Get(sched.CPU) != sched.Unit || one.Version <= idle.Version {
		t.Fatalf("one lease: %+v (idle was version %d)", one, idle.Version)
	}
	h.ask(h.owner, cpu1)
	h.ask(h.owner, cpu1) // waits: the node is full
	g = append(g, h.grants(h.owner, 1)...)
	full := h.liveAgrees()
	if full.Available.Get(sched.CPU) != 0 || full.Queued != 3 || full.Version <= one.Version {
		t.Fatalf("full with one waiting: %+v", full)
	}
	// Stats and a repeated release change nothing: same version, no figures.
	h.stats()
	if l, _ := h.live.Load(full.Version); l.Version != full.Version || !l.Available.IsZero() || l.Queued != 0 {
		t.Fatalf("nothing changed: got %+v, want version %d and no figures", l, full.Version)
	}
	h.send(release(g[0]))
	g = append(g, h.grants(h.owner, 1)...)
	h.send(release(g[1]), release(g[2]), release(g[2]))
	end := h.liveAgrees()
	if end.Available.Get(sched.CPU) != 2*sched.Unit || end.Queued != 0 || end.Version <= full.Version {
		t.Fatalf("after every release: %+v", end)
	}
}

// TestLiveLoadIsTheMachines: with a machine ledger the live figure is the machine's, as
// Stats': what the raylet holds free plus what the machine has free, so another job's
// leases on the same machine show in it although this raylet handled nothing.
func TestLiveLoadIsTheMachines(t *testing.T) {
	_, a, b := twoJobs(t)
	eventually.True(t, 10*time.Second, "b's live load shows the machine's 2 free CPUs", func() bool {
		l, ok := b.live.Load(0)
		return ok && l.Available.Get(sched.CPU) == 2*sched.Unit
	})
	a.ask(a.owner, cpu1)
	a.ask(a.owner, cpu1)
	ga := a.grants(a.owner, 2)
	eventually.True(t, 10*time.Second, "b's live load shows a's 2 CPUs in use", func() bool {
		l, _ := b.live.Load(0)
		return l.Available.Get(sched.CPU) == 0
	})
	eventually.True(t, 10*time.Second, "a's live load with 2 leases on the 2-CPU machine: none free", func() bool {
		l, _ := a.live.Load(0)
		return l.Available.Get(sched.CPU) == 0
	})
	a.send(release(ga[0]), release(ga[1]))
	eventually.True(t, 10*time.Second, "b's live load shows the CPUs back", func() bool {
		l, _ := b.live.Load(0)
		return l.Available.Get(sched.CPU) == 2*sched.Unit
	})
}
