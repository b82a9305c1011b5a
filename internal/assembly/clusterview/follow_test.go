package clusterview

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/tasks/sched"
)

// TestRingSetWatchesEveryNodeKTimes: with the ring of 64 node IDs and k = 4, each view
// watches its own report and 4 peers', and each node's report is watched by exactly 4
// peers' views: the views a report goes to do not grow with the cluster.
func TestRingSetWatchesEveryNodeKTimes(t *testing.T) {
	var all []string
	for i := range 64 {
		all = append(all, fmt.Sprintf("%016x", uint64(i+1)*0x9e3779b97f4a7c15))
	}
	watchedBy := map[string]int{}
	for _, self := range all {
		var peers []string
		for _, id := range all {
			if id != self {
				peers = append(peers, id)
			}
		}
		set := ringSet(peers, self, 4)
		if len(set) != 5 || !set[self] {
			t.Fatalf("the set of %s is %v, want itself and 4 peers", self, set)
		}
		for id := range set {
			if id != self {
				watchedBy[id]++
			}
		}
	}
	for _, id := range all {
		if watchedBy[id] != 4 {
			t.Fatalf("%s is watched by %d views, want 4", id, watchedBy[id])
		}
	}
	// A driver's runtime (not in the ring) watches 4 nodes too.
	if set := ringSet(all, "driver", 4); len(set) != 5 {
		t.Fatalf("a driver's set is %v, want itself and 4 nodes", set)
	}
}

// watching is how many watches of node id's report are open.
func (f *fixture) watching(id string) int64 {
	c, ok := f.keyWatching.Load(gcs.LoadKey(id))
	if !ok {
		return 0
	}
	return c.(*atomic.Int64).Load()
}

func (f *fixture) avail(id string) sched.Resources {
	s := f.v.load()
	return s.nodes[s.index[id]].Available
}

// TestViewWatchesABoundedSetOfPeers: in a cluster of more peers than FollowPeers, a view
// that follows the loads watches its own report and those of the FollowPeers peers after
// it in the ring, no prefix; the others' reports stay as the listing had them.
func TestViewWatchesABoundedSetOfPeers(t *testing.T) {
	f := newFixture(t, "a")
	f.followPeers, f.loadsIdle = 2, time.Minute
	peers := []string{"b", "c", "d", "e", "f", "g", "h"}
	f.putNode("a", "local", 2, "")
	for _, id := range peers {
		f.putNode(id, "local", 2, "")
		f.putLoad(id, 2, 0)
	}
	f.start()
	p := f.v.Placer(0)
	if _, err := p.Place(sched.Request{Resources: res(t, 1)}); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 5*time.Second, "the watches of a, b and c", func() bool {
		return f.watching("a") == 1 && f.watching("b") == 1 && f.watching("c") == 1
	})
	for _, id := range peers[2:] {
		if n := f.watching(id); n != 0 {
			t.Fatalf("%d watches of %s's report, want none (not among a's 2 peers)", n, id)
		}
	}
	if n := f.loadWatching.Load(); n != 0 {
		t.Fatalf("%d watches of every report open, want none", n)
	}
	for _, id := range peers {
		f.putLoad(id, 0, 0)
	}
	eventually.True(t, 5*time.Second, "b's and c's reports", func() bool {
		return f.avail("b").IsZero() && f.avail("c").IsZero()
	})
	// Listed by Start and by the follower, not since.
	if got := f.avail("d"); !got.Equal(res(t, 2)) || f.loadLists.Load() != 2 {
		t.Fatalf("d (not watched) is at %v after %d listings, want its listed 2 CPUs after 2", got, f.loadLists.Load())
	}
	// Available reads every node's report as it is now.
	if got := f.v.Available()["d"]; !got.IsZero() {
		t.Fatalf("Available()[d] = %v after d reported none free, want 0", got)
	}
}

func (f *fixture) gets() []string {
	f.getMu.Lock()
	defer f.getMu.Unlock()
	return append([]string(nil), f.loadGets...)
}

// TestPlacementReadsOthersWhenTheWatchedAreFull: when neither the local node nor the
// watched peers have room, a placement asks for a read of FollowPeers reports not
// watched (the next ones round the ring, one Get each, no listing), and the next
// placements go to the free node it shows; further placements within OthersRefresh read
// nothing more.
func TestPlacementReadsOthersWhenTheWatchedAreFull(t *testing.T) {
	f := ringFixture(t, 2, map[string]float64{"a": 0, "b": 0, "c": 0, "d": 0, "e": 0, "f": 0})
	p := f.v.Placer(0)
	one := sched.Request{Resources: res(t, 1)}
	if _, err := p.Place(one); err != nil { // starts following; the view was not
		t.Fatal(err)
	}
	eventually.True(t, 5*time.Second, "the watches of a, b and c", func() bool {
		return f.watching("a") == 1 && f.watching("b") == 1 && f.watching("c") == 1 && f.v.load().bounded
	})
	f.putLoad("e", 2, 0) // not watched
	if _, err := p.Place(one); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 5*time.Second, "e's report read", func() bool { return f.avail("e").Equal(res(t, 2)) })
	if n, err := p.Place(one); err != nil || n != "e" {
		t.Fatalf("a task placed with e free by the read went to %v (%v), want e", n, err)
	}
	for range 20 {
		if _, err := p.Place(one); err != nil {
			t.Fatal(err)
		}
		if _, ok := p.Spill(one, "a"); ok {
			p.Done("e", res(t, 1))
		}
	}
	if got, want := f.gets(), []string{gcs.LoadKey("d"), gcs.LoadKey("e")}; !slices.Equal(got, want) || f.loadLists.Load() != 2 || len(f.v.refresh) != 0 {
		t.Fatalf("reports read %v and %d listings (%d reads asked for), want %v and 2 (Start's, the follower's): one read within OthersRefresh", got, f.loadLists.Load(), len(f.v.refresh), want)
	}
	// The next reads go on round the ring: f, then d (after e).
	f.v.readOthers(context.Background())
	if got, want := f.gets()[2:], []string{gcs.LoadKey("f"), gcs.LoadKey("d")}; !slices.Equal(got, want) {
		t.Fatalf("the next read got %v, want %v", got, want)
	}
}

// TestWatchedSetFollowsTheMembership: a node that joins between a view's node and its
// watched peer takes the peer's place in the ring, and one reported gone gives it back.
func TestWatchedSetFollowsTheMembership(t *testing.T) {
	f := newFixture(t, "m")
	f.followPeers, f.loadsIdle = 1, time.Minute
	f.putNode("m", "local", 2, "")
	for _, id := range []string{"n", "p", "q"} {
		f.putNode(id, "local", 2, "")
	}
	f.start()
	p := f.v.Placer(0)
	if _, err := p.Place(sched.Request{Resources: res(t, 1)}); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 5*time.Second, "the watch of n", func() bool { return f.watching("m") == 1 && f.watching("n") == 1 })
	f.putNode("mm", "local", 2, "")
	eventually.True(t, 5*time.Second, "mm watched in n's place", func() bool { return f.watching("mm") == 1 && f.watching("n") == 0 })
	f.putLoad("mm", 0, 3)
	eventually.True(t, 5*time.Second, "mm's report", func() bool { return f.avail("mm").IsZero() })
	f.v.MarkGone("mm", "test")
	eventually.True(t, 5*time.Second, "n watched again", func() bool { return f.watching("mm") == 0 && f.watching("n") == 1 })
}

// TestSpillReadsOthersWhenNoWatchedNodeHasRoom: a spill that finds no watched node with
// room asks for a read of reports not watched, and a later spill goes to the free node
// it shows.
func TestSpillReadsOthersWhenNoWatchedNodeHasRoom(t *testing.T) {
	f := ringFixture(t, 1, map[string]float64{"a": 0, "b": 0, "c": 0, "d": 0})
	p := f.v.Placer(0)
	one := sched.Request{Resources: res(t, 1)}
	if _, ok := p.Spill(one, "a"); ok { // starts following
		t.Fatal("a spill with every node full went somewhere")
	}
	eventually.True(t, 5*time.Second, "the watches of a and b", func() bool {
		return f.watching("a") == 1 && f.watching("b") == 1 && f.v.load().bounded
	})
	f.putLoad("c", 2, 0) // not watched
	if _, ok := p.Spill(one, "a"); ok {
		t.Fatal("a spill went somewhere before c's report was read")
	}
	eventually.True(t, 5*time.Second, "c's report read", func() bool { return f.avail("c").Equal(res(t, 2)) })
	if n, ok := p.Spill(one, "a"); !ok || n != "c" {
		t.Fatalf("a spill with c free by the read went to %v (%v), want c", n, ok)
	}
	if got := f.gets(); !slices.Equal(got, []string{gcs.LoadKey("c")}) {
		t.Fatalf("reports read %v, want c's only (FollowPeers 1)", got)
	}
}

// TestUnwatchedHolderOfTheArgumentsKeepsTheTask: a node the view does not watch, whose
// listed report showed it full, and that holds megabytes of a task's arguments gets the
// task (its report may be old; spillback moves the task if it is in fact full), where a
// task without such arguments goes to a watched node with room. Without the benefit of
// the doubt, the old report sent every such task away from its bytes until a read came.
func TestUnwatchedHolderOfTheArgumentsKeepsTheTask(t *testing.T) {
	// e is listed full, and is not among a's 2 watched peers (b, c).
	f := ringFixture(t, 2, map[string]float64{"a": 0, "b": 2, "c": 2, "d": 2, "e": 0, "f": 2})
	p := f.v.Placer(0)
	one := sched.Request{Resources: res(t, 1)}
	// No read of the others' reports within OthersRefresh (an hour) from now: the first
	// placement would otherwise ask for one, and a read that landed after e's report below
	// (the view's goroutine takes its time under -race) showed e free and reset what this
	// placer had counted there (5 of 15 runs under -race failed so).
	f.v.refreshAt.Store(time.Now().UnixNano())
	if _, err := p.Place(one); err != nil { // starts following
		t.Fatal(err)
	}
	eventually.True(t, 5*time.Second, "a bounded view", func() bool {
		return f.watching("b") == 1 && f.watching("c") == 1 && f.v.load().bounded
	})
	f.putLoad("e", 2, 0) // e is free now; the view does not watch it and reads nothing (OthersRefresh)
	big := sched.Request{Resources: res(t, 1), ArgBytes: map[string]int64{"e": 6 << 20}}
	for range 3 {
		if n, err := p.Place(big); err != nil || n != "e" {
			t.Fatalf("a task with 6 MiB of arguments on e went to %v (%v), want e", n, err)
		}
		p.Done("e", res(t, 1))
	}
	// Not beyond what this placer has put there itself: e has 2 CPUs.
	got := map[ids.NodeID]int{}
	for range 3 {
		n, err := p.Place(big)
		if err != nil {
			t.Fatal(err)
		}
		got[n]++
	}
	if got["e"] != 2 {
		t.Fatalf("3 tasks with their arguments on e (2 CPUs, idle by the benefit of the doubt) went to %v, want 2 on e; reads %v", got, f.gets())
	}
	small := sched.Request{Resources: res(t, 1), ArgBytes: map[string]int64{"e": 1 << 10}}
	if n, err := p.Place(small); err != nil || n == "e" {
		t.Fatalf("a task with 1 KiB of arguments on e went to %v (%v), want a node the view knows has room", n, err)
	}
}

// TestSpreadReadsOthers: Spread placements in a bounded view ask for reads of the reports
// not watched (one read per OthersRefresh), so that a node listed busy and free since
// comes back into the rotation.
func TestSpreadReadsOthers(t *testing.T) {
	// d is listed busy, and is not watched (a watches b and c).
	f := ringFixture(t, 2, map[string]float64{"a": 2, "b": 2, "c": 2, "d": 0, "e": 2})
	p := f.v.Placer(0)
	spread := sched.Request{Resources: res(t, 1), Strategy: sched.Spread}
	if _, err := p.Place(spread); err != nil { // starts following
		t.Fatal(err)
	}
	eventually.True(t, 5*time.Second, "a bounded view", func() bool { return f.v.load().bounded })
	f.putLoad("d", 2, 0)
	if _, err := p.Place(spread); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 5*time.Second, "d's report read", func() bool { return f.avail("d").Equal(res(t, 2)) })
	seen := map[ids.NodeID]bool{}
	for range 10 {
		n, err := p.Place(spread)
		if err != nil {
			t.Fatal(err)
		}
		seen[n] = true
		p.Done(n, res(t, 1))
	}
	if !seen["d"] {
		t.Fatalf("10 spread tasks went to %v, not to d, free by the read", seen)
	}
}

// ringFixture starts a view of node "a" in a cluster of 2-CPU nodes whose reports give
// the free CPUs of free (by node ID, "a" included), watching watch peers while it
// follows, following for a minute after a placement, and reading reports not watched at
// most once an hour.
func ringFixture(t *testing.T, watch int, free map[string]float64) *fixture {
	f := newFixture(t, "a")
	f.followPeers, f.loadsIdle, f.othersRefresh = watch, time.Minute, time.Hour
	for _, id := range slices.Sorted(maps.Keys(free)) {
		f.putNode(id, "local", 2, "")
		f.putLoad(id, free[id], 0)
	}
	f.start()
	return f
}
