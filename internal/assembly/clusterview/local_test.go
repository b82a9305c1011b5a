package clusterview

import (
	"sync"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/tasks/sched"
)

// fakeLocal is a local node's live load (Config.Local) the test sets.
type fakeLocal struct {
	t     *testing.T
	mu    sync.Mutex
	l     LocalLoad
	ok    bool
	fills int // calls that filled the figures
}

func (f *fakeLocal) load(known uint64) (LocalLoad, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case !f.ok:
		return LocalLoad{}, false
	case known == f.l.Version:
		return LocalLoad{Version: known}, true
	}
	f.fills++
	return f.l, true
}

// set publishes a new live load: avail CPUs free, queued tasks waiting.
func (f *fakeLocal) set(avail float64, queued int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.l = LocalLoad{Version: f.l.Version + 1, Available: res(f.t, avail), Queued: queued}
	f.ok = true
}

// twoNodes is a view of self "a" and a peer "b", 2 CPUs each, whose load reports say a has
// reportA CPUs free and b 2, with a's live load live (nil: the view has none).
func twoNodes(t *testing.T, reportA float64, live *fakeLocal) *fixture {
	f := newFixture(t, "a")
	f.putNode("a", "local", 2, "")
	f.putNode("b", "worker", 2, "")
	f.putLoad("a", reportA, 0)
	f.putLoad("b", 2, 0)
	if live != nil {
		f.local = live.load
	}
	f.start()
	eventually.True(t, 5*time.Second, "both load reports", func() bool {
		s := f.v.load()
		return s.reports[0] != 0 && s.reports[1] != 0
	})
	return f
}

// TestLocalNodeJudgedByItsLiveLoad: the local node is judged by its scheduler's live load,
// not by its last report, for the Default policy's choice and for spillback; peers by
// their reports. Each case is also run without a live load, where the stale report decides
// the other way (what placement did before).
func TestLocalNodeJudgedByItsLiveLoad(t *testing.T) {
	cpu1 := sched.Request{Resources: res(t, 1)}
	// 2 MB of the task's arguments on the local node: sched.Spill keeps such a task where
	// it waits while that node has room for it.
	withBytes := sched.Request{Resources: res(t, 1), ArgBytes: map[string]int64{"a": 2 << 20}}
	for _, c := range []struct {
		name              string
		reportA           float64 // a's last report: CPUs free
		liveA             float64 // a's scheduler now: CPUs free
		liveQueued        int
		spill             bool // Spill(req, from a) rather than Place(req)
		req               sched.Request
		want, wantReports ids.NodeID // "" for Spill: stays
	}{
		// A report that caught one lease shows a half busy (the threshold): its next task
		// went to the idle peer although a's lease had ended.
		{name: "stale busy report, idle now: stays local", reportA: 1, liveA: 2, req: cpu1, want: "a", wantReports: "b"},
		// A report that showed a idle kept tasks there while a's CPUs are all held and a
		// task waits.
		{name: "stale idle report, full now: to the peer", reportA: 2, liveA: 0, liveQueued: 1, req: cpu1, want: "b", wantReports: "a"},
		// A task waiting at a with its arguments there stayed while the report said a had
		// room; a is full, so it moves to the peer that can run it now.
		{name: "spill: stale idle report, full now: moves", reportA: 2, liveA: 0, liveQueued: 1, spill: true, req: withBytes, want: "b", wantReports: ""},
		// a has one CPU free now (its report counted the waiting task in): it stays.
		{name: "spill: room now: stays", reportA: 0, liveA: 1, liveQueued: 1, spill: true, req: withBytes, want: "", wantReports: ""},
	} {
		for _, live := range []bool{true, false} {
			var l *fakeLocal
			want := c.wantReports
			if live {
				l = &fakeLocal{t: t}
				l.set(c.liveA, c.liveQueued)
				want = c.want
			}
			f := twoNodes(t, c.reportA, l)
			p := f.v.Placer(0)
			var got ids.NodeID
			if c.spill {
				got, _ = p.Spill(c.req, "a")
			} else {
				var err error
				if got, err = p.Place(c.req); err != nil {
					t.Fatalf("%s (live %t): %v", c.name, live, err)
				}
			}
			if got != want {
				t.Errorf("%s (live load %t): went to %q, want %q", c.name, live, got, want)
			}
		}
	}
}

// TestLiveLoadAccounting: the owner's placements on the local node count against its live
// load until the load changes (the scheduler heard of them), as against a report; Done
// gives them back; figures are copied only when the load's version moved; without a live
// load yet the report is used.
func TestLiveLoadAccounting(t *testing.T) {
	l := &fakeLocal{t: t}
	f := twoNodes(t, 2, l)
	p := f.v.Placer(0)
	req := sched.Request{Resources: res(t, 1)}
	// No live load yet: the report (a idle) keeps the task local.
	if n, err := p.Place(req); err != nil || n != "a" {
		t.Fatalf("without a live load: %v %v, want a by its report", n, err)
	}
	p.Done("a", req.Resources)
	l.set(2, 0)
	if n, err := p.Place(req); err != nil || n != "a" {
		t.Fatalf("first task: %v %v, want a", n, err)
	}
	// The live load has not moved: a counts the first task, is at the threshold, and the
	// next task goes to the idle peer (the hybrid policy).
	if n, err := p.Place(req); err != nil || n != "b" {
		t.Fatalf("second task, a's lease not granted yet: %v %v, want b", n, err)
	}
	if a := p.own["a"]; !a.avail.Equal(res(t, 1)) || a.report != liveMark|1 {
		t.Fatalf("a's account: %v at %x, want 1 CPU at the live version 1", a.avail, a.report)
	}
	// The lease was granted (1 CPU free), then the task ended and its lease went back.
	l.set(1, 0)
	p.Done("a", req.Resources)
	if a := p.own["a"]; !a.avail.Equal(res(t, 2)) || a.report != liveMark|2 {
		t.Fatalf("after Done at version 2: %v at %x, want 2 CPUs", a.avail, a.report)
	}
	l.set(2, 0)
	fills := l.fills
	for i := 0; i < 3; i++ {
		if n, err := p.Place(req); err != nil {
			t.Fatal(err)
		} else {
			p.Done(n, req.Resources)
		}
	}
	if l.fills != fills+1 {
		t.Fatalf("3 placements with the live load unchanged filled its figures %d times, want once", l.fills-fills)
	}
	// Another placer of the view does not see this one's placements, only the live load.
	l.set(0, 2)
	if n, err := f.v.Placer(1).Place(req); err != nil || n != "b" {
		t.Fatalf("a full by its live load: %v %v, want b", n, err)
	}
}

// TestLoadsNotFollowedWhileTheLocalNodeKeepsItsWork: with the local node judged by its live
// load, a Default placement that the local node keeps whatever the peers' loads (the
// policy's fast path: room, under the threshold, no argument bytes elsewhere) does not make
// the view follow the peers' load reports; one that needs them (the local node at the
// threshold) does. Without a live load every Default placement follows them, as before.
func TestLoadsNotFollowedWhileTheLocalNodeKeepsItsWork(t *testing.T) {
	cpu1 := sched.Request{Resources: res(t, 1)}
	live := &fakeLocal{t: t}
	live.set(4, 0)
	f := newFixture(t, "a")
	f.loadsIdle = 50 * time.Millisecond
	f.putNode("a", "local", 4, "")
	f.putNode("b", "worker", 4, "")
	f.local = live.load
	f.start()
	p := f.v.Placer(0)
	for range 20 {
		if n, err := p.Place(cpu1); err != nil || n != "a" {
			t.Fatalf("a task the idle local node keeps: %v %v", n, err)
		}
		p.Done("a", cpu1.Resources)
	}
	if f.v.FollowingLoads() || f.loadWatches.Load() != 0 {
		t.Fatalf("after placements the local node kept: following %v, %d load watches opened, want none", f.v.FollowingLoads(), f.loadWatches.Load())
	}
	live.set(2, 0) // half of the node busy: at the threshold, the policy compares with b
	if _, err := p.Place(cpu1); err != nil {
		t.Fatal(err)
	}
	if !f.v.FollowingLoads() {
		t.Fatal("a placement with the local node at the threshold did not follow the load reports")
	}
	// A view without a live load follows them for any Default placement.
	g := newFixture(t, "a")
	g.putNode("a", "local", 4, "")
	g.putNode("b", "worker", 4, "")
	g.start()
	if _, err := g.v.Placer(0).Place(cpu1); err != nil {
		t.Fatal(err)
	}
	if !g.v.FollowingLoads() {
		t.Fatal("without a live load, a Default placement did not follow the load reports")
	}
}
