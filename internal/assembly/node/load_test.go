package node

import (
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks"
	"github.com/ray-go/ray/tasks/sched"
)

func cpus(t *testing.T, n float64) sched.Resources {
	t.Helper()
	r, err := sched.FromMap(map[string]float64{"CPU": n})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func loadOf(t *testing.T, avail float64, queued int) *pb.NodeLoad {
	return &pb.NodeLoad{NodeId: "n", Available: tasks.ResourcesToPB(cpus(t, avail)), Queued: int32(queued)}
}

// feed runs a reportGate over one figure per LoadReportInterval from t0 (as the reporter's
// loop does) and returns the indexes of the figures it wrote.
func feed(g *reportGate, total sched.Resources, t0 time.Time, loads []*pb.NodeLoad) []int {
	var wrote []int
	for i, l := range loads {
		now := t0.Add(time.Duration(i) * LoadReportInterval)
		if g.due(l, total, 1, now) {
			g.wrote(l, 1, now)
			wrote = append(wrote, i)
		}
	}
	return wrote
}

// TestLoadReportsPerUnitOfChange: a queue that grows by one task every look (within a
// factor of two of the last report) is reported once per loadReportSettle, not at every
// look; an unchanged load once per loadReportRefresh.
func TestLoadReportsPerUnitOfChange(t *testing.T) {
	total := cpus(t, 8)
	t0 := time.Unix(1000, 0)
	const looks = 100 // ten seconds
	var growing, still []*pb.NodeLoad
	for i := range looks {
		growing = append(growing, loadOf(t, 0, 100+i)) // 100 .. 199: never doubles
	}
	span := time.Duration(looks) * LoadReportInterval
	if got, want := len(feed(&reportGate{}, total, t0, growing)), int(span/loadReportSettle); got != want {
		t.Fatalf("a queue growing by one a look for %v: %d reports written, want %d (one per %v)", span, got, want, loadReportSettle)
	}
	for range 3 * loadReportRefresh / LoadReportInterval {
		still = append(still, loadOf(t, 3, 0))
	}
	span = time.Duration(len(still)) * LoadReportInterval
	wrote := feed(&reportGate{}, total, t0, still)
	if got, want := len(wrote), int(span/loadReportRefresh); got != want {
		t.Fatalf("an unchanged load for %v: %d reports written (%v), want %d (one per %v)", span, got, wrote, want, loadReportRefresh)
	}
	// Refreshed within the refresh period: the writes are loadReportRefresh apart.
	for i := 1; i < len(wrote); i++ {
		if gap := time.Duration(wrote[i]-wrote[i-1]) * LoadReportInterval; gap > loadReportRefresh {
			t.Fatalf("an unchanged report went %v without a refresh (writes at looks %v)", gap, wrote)
		}
	}
}

// TestLoadReportRewrittenOnANewLease: an unchanged report is written again at once when
// the node's GCS lease changed (the one written on the old lease goes when it lapses), and
// not again while the lease stays.
func TestLoadReportRewrittenOnANewLease(t *testing.T) {
	total := cpus(t, 2)
	t0 := time.Unix(1000, 0)
	var g reportGate
	l := loadOf(t, 2, 0)
	if !g.due(l, total, 1, t0) {
		t.Fatal("the first report is not due")
	}
	g.wrote(l, 1, t0)
	next := t0.Add(LoadReportInterval)
	if g.due(loadOf(t, 2, 0), total, 1, next) {
		t.Fatal("an unchanged report on the same lease is due again at the next look")
	}
	if !g.due(loadOf(t, 2, 0), total, 2, next) {
		t.Fatal("an unchanged report is not due on a new lease")
	}
}

// TestLoadReportThresholdCrossingsAreReportedAtOnce: every look whose figures cross a
// threshold that placement uses so that the node has less room is written, however soon
// after the last report; one that gives it room is written at once after a quiet
// loadReportDamp, else once that long after the last write.
func TestLoadReportThresholdCrossingsAreReportedAtOnce(t *testing.T) {
	total := cpus(t, 2)
	t0 := time.Unix(1000, 0)
	// A 2-CPU node going idle, busy, queueing, its queue doubled: each takes room away.
	seq := []*pb.NodeLoad{loadOf(t, 2, 0), loadOf(t, 0, 0), loadOf(t, 0, 3), loadOf(t, 0, 6)}
	if got := feed(&reportGate{}, total, t0, seq); len(got) != len(seq) {
		t.Fatalf("crossings written at looks %v, want every one of %d", got, len(seq))
	}
	// Half busy, then idle at the next look (room given: held), then full (room taken
	// from the report's half: at once).
	g := &reportGate{}
	g.wrote(loadOf(t, 1, 0), 1, t0)
	if g.due(loadOf(t, 2, 0), total, 1, t0.Add(LoadReportInterval)) {
		t.Fatalf("a node idle %v after its report of half busy was written at once, want it held for %v", LoadReportInterval, loadReportDamp)
	}
	if !g.due(loadOf(t, 0, 0), total, 1, t0.Add(2*LoadReportInterval)) {
		t.Fatalf("a node full %v after its report of half busy was not written at once", 2*LoadReportInterval)
	}
	// Room given after a quiet loadReportDamp: written at once.
	g = &reportGate{}
	g.wrote(loadOf(t, 0, 2), 1, t0)
	if !g.due(loadOf(t, 2, 0), total, 1, t0.Add(loadReportDamp)) {
		t.Fatalf("a node idle %v after its last report was not written at once", loadReportDamp)
	}
	// A change of the store's figures only waits for loadReportSettle.
	g = &reportGate{}
	base := loadOf(t, 1, 0)
	g.wrote(base, 1, t0)
	stored := loadOf(t, 1, 0)
	stored.StoreInMemory = 1 << 20
	if g.due(stored, total, 1, t0.Add(LoadReportInterval)) {
		t.Fatal("a change of the store's bytes was written at the next look, want it held for loadReportSettle")
	}
	if !g.due(stored, total, 1, t0.Add(loadReportSettle)) {
		t.Fatalf("a change of the store's bytes was not written %v after the last report", loadReportSettle)
	}
}

// TestLoadReportFlipsAreDamped: a 2-CPU node whose lease comes and goes at every look
// (idle, half busy: the policy's threshold) for 3 s is written at most once per
// loadReportDamp, not at every look, and never more than loadReportDamp late.
func TestLoadReportFlipsAreDamped(t *testing.T) {
	total := cpus(t, 2)
	t0 := time.Unix(1000, 0)
	var seq []*pb.NodeLoad
	for i := range 30 {
		seq = append(seq, loadOf(t, float64(2-i%2), 0))
	}
	wrote := feed(&reportGate{}, total, t0, seq)
	span := time.Duration(len(seq)) * LoadReportInterval
	if max := int(span/loadReportDamp) + 1; len(wrote) > max || len(wrote) < max/2 {
		t.Fatalf("a load flipping at every look for %v: %d writes (%v), want between %d and %d", span, len(wrote), wrote, max/2, max)
	}
	for i := 1; i < len(wrote); i++ {
		gap := time.Duration(wrote[i]-wrote[i-1]) * LoadReportInterval
		if gap < loadReportDamp || gap > loadReportDamp+2*LoadReportInterval {
			t.Fatalf("writes %v apart (looks %v), want %v to %v", gap, wrote, loadReportDamp, loadReportDamp+2*LoadReportInterval)
		}
	}
}

func TestLostRoom(t *testing.T) {
	for _, c := range []struct {
		name            string
		total, from, to float64
		qFrom, qTo      int
		want            bool
	}{
		{"queue starts", 8, 0, 0, 0, 1, true},
		{"queue doubles", 8, 0, 0, 3, 6, true},
		{"queue grows less", 8, 0, 0, 3, 5, false},
		{"queue empties", 8, 0, 0, 3, 0, false},
		{"none free", 8, 0.5, 0, 0, 0, true},
		{"less than one free", 8, 1, 0.5, 0, 0, true},
		{"half the total crossed down", 8, 4.5, 3.5, 0, 0, false},
		{"idle to half busy", 2, 2, 1, 0, 0, false},
		{"half busy to full", 2, 1, 0, 0, 0, true},
		{"room given", 2, 0, 2, 0, 0, false},
	} {
		was, now := loadOf(t, c.from, c.qFrom), loadOf(t, c.to, c.qTo)
		if got := lostRoom(was, now, cpus(t, c.total)); got != c.want {
			t.Errorf("%s: %v CPUs of %v free -> %v, queue %d -> %d: lost room %v, want %v", c.name, c.from, c.total, c.to, c.qFrom, c.qTo, got, c.want)
		}
	}
}

func TestSignificantChange(t *testing.T) {
	for _, c := range []struct {
		name            string
		total, from, to float64
		qFrom, qTo      int
		want            bool
	}{
		{"unchanged", 8, 3, 3, 2, 2, false},
		{"queue empties", 8, 3, 3, 1, 0, true},
		{"queue starts", 8, 3, 3, 0, 1, true},
		{"queue doubles", 8, 3, 3, 3, 6, true},
		{"queue halves", 8, 3, 3, 4, 2, true},
		{"queue grows less than twofold", 8, 3, 3, 3, 5, false},
		{"queue shrinks less than twofold", 8, 3, 3, 3, 2, false},
		{"some free from none", 8, 0, 0.5, 0, 0, true},
		{"none free", 8, 0.5, 0, 0, 0, true},
		{"one CPU free", 8, 0.5, 1, 0, 0, true},
		{"half the total crossed", 8, 3.5, 4.5, 0, 0, true},
		{"idle", 8, 7.5, 8, 0, 0, true},
		{"small step", 8, 2, 2.5, 0, 0, false},
		{"an eighth of the total", 8, 2, 3, 0, 0, true},
		{"small step on a large node", 64, 20, 25, 0, 0, false},
		{"large step on a large node", 64, 20, 28, 0, 0, true},
		{"fractional node: some free", 0.5, 0, 0.25, 0, 0, true},
	} {
		was, now := loadOf(t, c.from, c.qFrom), loadOf(t, c.to, c.qTo)
		if got := significantChange(was, now, cpus(t, c.total)); got != c.want {
			t.Errorf("%s: %v CPUs of %v free -> %v, queue %d -> %d: significant %v, want %v", c.name, c.from, c.total, c.to, c.qFrom, c.qTo, got, c.want)
		}
	}
	// A resource the total lacks changed: significant (nothing to measure it against).
	was := loadOf(t, 1, 0)
	now := &pb.NodeLoad{NodeId: "n", Available: tasks.ResourcesToPB(cpus(t, 1).With("lane", sched.Unit))}
	if !significantChange(was, now, cpus(t, 8)) {
		t.Error("a resource outside the total appeared: not significant")
	}
}
