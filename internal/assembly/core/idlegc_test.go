package core

import (
	"testing"
	"time"
)

// TestIdleGCRule: the idle collector collects when the process borrows refs and Go has
// not collected since the last look; a collection that gave nothing back doubles the
// period up to idleGCMax, one that gave refs back (or new borrows) starts again at
// idleGCEvery; a process with no borrows, or one that Go collects by itself, is not
// made to collect.
func TestIdleGCRule(t *testing.T) {
	type look struct {
		collected bool
		borrowed  int64
		wait      time.Duration
		collect   bool
	}
	e := idleGCEvery
	for name, looks := range map[string][]look{
		"no borrows": {{false, 0, e, false}, {false, 0, e, false}},
		"busy":       {{true, 5, e, false}, {true, 5, e, false}},
		"given back": {{false, 4, e, true}, {false, 0, e, false}},
		"some back":  {{false, 4, e, true}, {false, 2, e, true}, {false, 1, e, true}},
		"kept": {{false, 3, e, true}, {false, 3, 2 * e, true}, {false, 3, 4 * e, true}, {false, 3, 8 * e, true},
			{false, 3, 16 * e, true}, {false, 3, 32 * e, true}, {false, 3, idleGCMax, true}, {false, 3, idleGCMax, true},
			{false, 4, e, true}},
		"kept, then busy": {{false, 3, e, true}, {false, 3, 2 * e, true}, {true, 3, 4 * e, true}},
	} {
		var s idleGC
		for i, l := range looks {
			wait, collect := s.next(l.collected, l.borrowed)
			if wait != l.wait || collect != l.collect {
				t.Errorf("%s: look %d (collected %v, %d borrowed): wait %v, collect %v; want %v, %v", name, i, l.collected, l.borrowed, wait, collect, l.wait, l.collect)
			}
		}
	}
}
