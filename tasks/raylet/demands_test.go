package raylet

import (
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks"
	"github.com/ray-go/ray/tasks/sched"
)

// TestStatsDemands: Stats says what waits here for resources, by shape, owner and
// placement group (rayctl status's Demands, through the load report): an owner's requests
// of one shape count its largest backlog once (each carries the whole backlog), two owners
// add up, actors waiting for a reservation count by shape, and a request inside a bundle
// shows its group and its shape in the resources' own names. Once the work runs or goes,
// nothing is left.
func TestStatsDemands(t *testing.T) {
	h := newHarness(t, map[string]float64{sched.CPU: 2}, 4)
	if r := h.commit(bundleMsg("g", 0, map[string]float64{sched.CPU: 1}, false)); !r.Ok {
		t.Fatalf("commit: %v", r.Message)
	}
	if st := h.stats(); len(st.Demands) != 0 || st.DemandsOmitted != 0 {
		t.Fatalf("an idle raylet reports demands %+v (%d omitted)", st.Demands, st.DemandsOmitted)
	}
	// The node's free CPU taken (1 left outside the bundle), then work that waits.
	h.ask(h.owner, cpu1)
	held := h.grants(h.owner, 1)[0]
	other := h.newOwner()
	askBacklog := func(o *owner, res map[string]float64, backlog int32) {
		r, err := sched.FromMap(res)
		if err != nil {
			t.Fatal(err)
		}
		h.n++
		h.send(&pb.LeaseRequest{RequestId: h.n, Resources: tasks.ResourcesToPB(r), Backlog: backlog,
			Owner: &pb.PID{Address: o.pid.Address, Id: o.pid.Id}})
	}
	cpuHalf := map[string]float64{sched.CPU: 0.5}
	askBacklog(h.owner, cpuHalf, 7)
	askBacklog(h.owner, cpuHalf, 9) // the same owner's second request of the shape
	askBacklog(other, cpuHalf, 2)
	inBundle := sched.InBundle("g", 0, sched.Resources{}.With(sched.CPU, sched.Unit)).Map()
	askBacklog(h.owner, inBundle, 1)
	h.grants(h.owner, 1) // it holds the bundle: the next one waits
	askBacklog(h.owner, inBundle, 4)
	h.send(&pb.ReserveResources{Key: "a/1", Resources: tasks.ResourcesToPB(sched.Resources{}.With(sched.CPU, sched.Unit))},
		&pb.ReserveResources{Key: "a/2", Resources: tasks.ResourcesToPB(sched.Resources{}.With(sched.CPU, sched.Unit))})
	st := h.stats()
	half, one := sched.Resources{}.With(sched.CPU, sched.Unit/2), sched.Resources{}.With(sched.CPU, sched.Unit)
	mine, its := ownerKey(h.owner.pid), ownerKey(other.pid)
	want := []Demand{
		{Shape: half, Owner: mine, Tasks: 9},
		{Shape: one, Owner: mine, Group: "g", Tasks: 4},
		{Shape: half, Owner: its, Tasks: 2},
		{Shape: one, Actors: 2},
	}
	if !sameDemands(st.Demands, want) || st.DemandsOmitted != 0 {
		t.Fatalf("demands %+v (%d omitted), want %+v", st.Demands, st.DemandsOmitted, want)
	}
	// The held lease goes: one reservation is granted (they go ahead of requests), the
	// other waits on.
	h.send(release(held))
	actors := func(st *StatsReply) int {
		n := 0
		for _, d := range st.Demands {
			n += d.Actors
		}
		return n
	}
	deadline := time.Now().Add(5 * time.Second)
	for st = h.stats(); actors(st) == 2 && time.Now().Before(deadline); st = h.stats() {
		time.Sleep(10 * time.Millisecond)
	}
	if actors(st) != 1 {
		t.Fatalf("after a CPU came free: demands %+v, want one actor still waiting", st.Demands)
	}
	// Every owner gone: their requests go, and nothing waits but what reservations do.
	h.sys.Root.Stop(h.owner.pid)
	h.sys.Root.Stop(other.pid)
	h.send(&pb.ReserveResources{Key: "a/1", Release: true}, &pb.ReserveResources{Key: "a/2", Release: true})
	deadline = time.Now().Add(5 * time.Second)
	for st = h.stats(); len(st.Demands) > 0 && time.Now().Before(deadline); st = h.stats() {
		time.Sleep(10 * time.Millisecond)
	}
	if len(st.Demands) != 0 {
		t.Fatalf("after the owners left and the actors were released: demands %+v", st.Demands)
	}
}

// sameDemands compares demands in order.
func sameDemands(got, want []Demand) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		g, w := got[i], want[i]
		if !g.Shape.Equal(w.Shape) || g.Owner != w.Owner || g.Group != w.Group || g.Tasks != w.Tasks || g.Actors != w.Actors {
			return false
		}
	}
	return true
}
