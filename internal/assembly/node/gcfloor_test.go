package node

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
)

const mib = 1 << 20

// TestGCPercentFor: the tuner's decisions. The goal the runtime derives from the result,
// live + (live + roots) × GOGC/100, reaches the floor (capped at half the limit) and does
// not overshoot it by more than a percent point's worth; the program's GOGC comes back once
// its own goal reaches the floor; off is off.
func TestGCPercentFor(t *testing.T) {
	none := int64(math.MaxInt64)
	cases := []struct {
		name               string
		live, roots        int64
		gogc               int
		floor, limit       int64
		want               int
		wantGoalAtLeastMiB int64 // the runtime's goal from want (0: not checked)
	}{
		{"floor off", 50 * mib, 1 * mib, 100, 0, none, 100, 0},
		{"negative floor is off", 50 * mib, 1 * mib, 100, -1, none, 100, 0},
		{"GOGC off stays off", 50 * mib, 1 * mib, -1, 256 * mib, none, -1, 0},
		{"small live heap: goal is the floor", 50 * mib, 1 * mib, 100, 256 * mib, none, 404, 256},
		{"no roots", 64 * mib, 0, 100, 256 * mib, none, 300, 256},
		{"live heap past half the floor: GOGC's own", 128 * mib, 0, 100, 256 * mib, none, 100, 256},
		{"large live heap: GOGC's own", 1024 * mib, 8 * mib, 100, 256 * mib, none, 100, 0},
		{"the program's GOGC 50 is what comes back", 200 * mib, 0, 50, 256 * mib, none, 50, 0},
		{"GOGC 50 under the floor is raised", 100 * mib, 0, 50, 256 * mib, none, 156, 256},
		{"limit caps the floor at half", 50 * mib, 0, 100, 256 * mib, 300 * mib, 200, 150},
		{"limit small: GOGC's own", 100 * mib, 0, 100, 256 * mib, 300 * mib, 100, 0},
		// A tiny heap: the base is the runtime's 4 MiB minimum, and GOGC at most
		// floor/4 MiB × 100, so that the runtime's heap minimum (4 MiB × GOGC/100) is at
		// most the floor.
		{"empty heap", 0, 0, 100, 256 * mib, none, 6400, 0},
		{"1 MiB heap", 1 * mib, 0, 100, 256 * mib, none, 6375, 0},
		{"negative figures read as 0", -5, -5, 100, 256 * mib, none, 6400, 0},
		{"limit 0 means none", 50 * mib, 0, 100, 256 * mib, 0, 412, 256},
	}
	for _, c := range cases {
		got := gcPercentFor(c.live, c.roots, c.gogc, c.floor, c.limit)
		if got != c.want {
			t.Errorf("%s: gcPercentFor(live %d MiB, roots %d MiB, GOGC %d, floor %d MiB, limit %d) = %d, want %d",
				c.name, c.live/mib, c.roots/mib, c.gogc, c.floor/mib, c.limit, got, c.want)
			continue
		}
		if c.wantGoalAtLeastMiB > 0 {
			goal := float64(c.live) + float64(c.live+c.roots)*float64(got)/100
			if goal < float64(c.wantGoalAtLeastMiB*mib) || goal > float64(c.wantGoalAtLeastMiB*mib)+float64(c.live+c.roots)/100+1 {
				t.Errorf("%s: GOGC %d gives the goal %.1f MiB, want %d MiB", c.name, got, goal/mib, c.wantGoalAtLeastMiB)
			}
		}
		if heapMin := int64(gcMinHeap) * int64(got) / 100; c.floor > 0 && got > c.gogc && heapMin > c.floor {
			t.Errorf("%s: GOGC %d makes the runtime's heap minimum %d MiB, over the floor", c.name, got, heapMin/mib)
		}
	}
}

// fakeGC is the runtime as the tuner sees it: GOGC, the last cycle's figures, and the
// sentinel chain, run by hand with cycle.
type fakeGC struct {
	gogc        int
	live, roots int64
	limit       int64
	after       []func() bool
	sets        int
}

func (f *fakeGC) tuner() *gcTuner {
	return &gcTuner{
		setPercent: func(p int) int { old := f.gogc; f.gogc = p; f.sets++; return old },
		read:       func() gcReading { return gcReading{live: f.live, roots: f.roots, gogc: f.gogc, limit: f.limit} },
		arm:        func(fn func() bool) { f.after = append(f.after, fn) },
	}
}

// cycle ends a collection with the given live heap: the armed functions run, and those
// that say so run again after the next.
func (f *fakeGC) cycle(live int64) {
	f.live = live
	fns := f.after
	f.after = nil
	for _, fn := range fns {
		if fn() {
			f.after = append(f.after, fn)
		}
	}
}

// TestGCTunerFollowsTheLiveHeap: the tuner sets the floor's GOGC at once and after each
// cycle, gives 100 back when the live heap outgrows the floor, takes the largest floor of
// its nodes, and restores GOGC 100 (and ends its sentinel chain) when the last node stops.
func TestGCTunerFollowsTheLiveHeap(t *testing.T) {
	f := &fakeGC{gogc: 100, live: 50 * mib, limit: math.MaxInt64}
	tu := f.tuner()
	if !tu.acquire(128 * mib) {
		t.Fatal("acquire with GOGC 100: refused")
	}
	if want := gcPercentFor(50*mib, 0, 100, 128*mib, math.MaxInt64); f.gogc != want || want <= 100 {
		t.Fatalf("GOGC after acquire: %d, want %d (> 100)", f.gogc, want)
	}
	if !tu.acquire(256 * mib) {
		t.Fatal("second acquire refused")
	}
	if want := gcPercentFor(50*mib, 0, 100, 256*mib, math.MaxInt64); f.gogc != want {
		t.Fatalf("GOGC with floors 128 and 256 MiB: %d, want the larger floor's %d", f.gogc, want)
	}
	f.cycle(200 * mib)
	if f.gogc != 100 {
		t.Fatalf("GOGC with 200 MiB live (past half the floor): %d, want 100", f.gogc)
	}
	f.cycle(20 * mib)
	if want := gcPercentFor(20*mib, 0, 100, 256*mib, math.MaxInt64); f.gogc != want {
		t.Fatalf("GOGC with 20 MiB live again: %d, want %d", f.gogc, want)
	}
	tu.release(256 * mib)
	f.cycle(20 * mib)
	if want := gcPercentFor(20*mib, 0, 100, 128*mib, math.MaxInt64); f.gogc != want {
		t.Fatalf("GOGC after the 256 MiB node stopped: %d, want the 128 MiB floor's %d", f.gogc, want)
	}
	tu.release(128 * mib)
	if f.gogc != 100 {
		t.Fatalf("GOGC after the last node stopped: %d, want 100 back", f.gogc)
	}
	f.cycle(20 * mib)
	if f.gogc != 100 || len(f.after) != 0 {
		t.Fatalf("after the last release a cycle set GOGC %d, %d sentinels still armed", f.gogc, len(f.after))
	}
	tu.release(128 * mib) // an extra release changes nothing
	if f.gogc != 100 {
		t.Fatalf("an extra release set GOGC %d", f.gogc)
	}
}

// TestGCTunerLeavesTheProgramsGOGC: a GOGC the program set before the first node (GOGC
// variable or debug.SetGCPercent) is never touched; one it sets while the tuner runs stops
// the tuning and stays after the last node stops.
func TestGCTunerLeavesTheProgramsGOGC(t *testing.T) {
	f := &fakeGC{gogc: 400, live: 10 * mib, limit: math.MaxInt64}
	tu := f.tuner()
	if tu.acquire(256 * mib) {
		t.Fatal("acquire took over GOGC 400 the program had set")
	}
	f.cycle(10 * mib)
	tu.release(256 * mib)
	if f.gogc != 400 || f.sets != 0 || len(f.after) != 0 {
		t.Fatalf("the program's GOGC 400: now %d after %d sets, %d sentinels armed", f.gogc, f.sets, len(f.after))
	}

	f = &fakeGC{gogc: -1, live: 10 * mib, limit: math.MaxInt64}
	if f.tuner().acquire(256*mib) || f.gogc != -1 {
		t.Fatalf("acquire with GOGC off: GOGC %d", f.gogc)
	}

	f = &fakeGC{gogc: 100, live: 10 * mib, limit: math.MaxInt64}
	tu = f.tuner()
	if tu.acquire(0) {
		t.Fatal("acquire with floor 0 (off) took the tuner")
	}
	if !tu.acquire(256 * mib) {
		t.Fatal("acquire refused")
	}
	f.gogc = 300 // the program's debug.SetGCPercent(300) while the node runs
	f.cycle(10 * mib)
	if f.gogc != 300 || len(f.after) != 0 {
		t.Fatalf("after the program set GOGC 300: GOGC %d, %d sentinels armed", f.gogc, len(f.after))
	}
	tu.release(256 * mib)
	if f.gogc != 300 {
		t.Fatalf("the last release replaced the program's GOGC 300 with %d", f.gogc)
	}
}

// TestGCTunerInThisProcess: the real runtime. With a floor the GOGC after a collection is
// the floor's (the live heap of a test binary is far below 256 MiB), and 100 again after
// release.
func TestGCTunerInThisProcess(t *testing.T) {
	if p := debug.SetGCPercent(100); p != 100 {
		debug.SetGCPercent(p)
		t.Fatalf("the test binary runs with GOGC %d; this test needs the default", p)
	}
	if !processGC.acquire(256 * mib) {
		t.Fatal("acquire refused with GOGC 100")
	}
	runtime.GC()
	runtime.GC() // the sentinel's finalizer ran after the first; the second's is queued
	r := readGC()
	want := gcPercentFor(r.live, r.roots, 100, 256*mib, r.limit)
	processGC.release(256 * mib)
	if want <= 100 {
		t.Fatalf("live heap %d MiB: the floor's GOGC is %d, want > 100", r.live/mib, want)
	}
	if after := readGC().gogc; after != 100 {
		t.Fatalf("GOGC after release: %d, want 100", after)
	}
	if r.gogc <= 100 {
		t.Fatalf("GOGC while the tuner ran: %d, want > 100 (about %d)", r.gogc, want)
	}
}
