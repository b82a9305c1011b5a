package node

import (
	"testing"
	"time"

	"github.com/ray-go/ray/internal/assembly/membership"
)

// TestOwnerDeathConfirmed: a process reported gone is dead as an owner at once when its
// address refuses connections, never when its node (or another process) registers at the
// address again, and otherwise only at the deadline.
func TestOwnerDeathConfirmed(t *testing.T) {
	m := membership.MemberInfo{ID: "sys#1", NodeID: "n1", Address: "127.0.0.1:1"}
	type probe struct {
		nodes   map[string]membership.MemberInfo // after the first look
		refused bool
	}
	cases := []struct {
		name      string
		probe     probe
		deadline  time.Duration
		wantGone  bool
		wantBack  bool
		wantLooks int // at most
	}{
		{"refused: dead at once", probe{refused: true}, time.Hour, true, false, 1},
		{"the same node again: alive", probe{nodes: map[string]membership.MemberInfo{"n1": m}}, time.Hour, false, true, 2},
		{"another process at the address: not this owner's death", probe{nodes: map[string]membership.MemberInfo{"n2": {NodeID: "n2", Address: m.Address}}}, time.Hour, false, false, 2},
		{"another address only, listening: dead at the deadline", probe{nodes: map[string]membership.MemberInfo{"n1": {NodeID: "n1", Address: "127.0.0.1:2"}}}, 30 * time.Millisecond, true, false, 1 << 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			looks, gone, back := 0, false, false
			d := ownerDeath{
				deadline: time.Now().Add(c.deadline),
				stopped:  func() bool { return false },
				memberAt: func() (bool, bool) {
					looks++
					if looks == 1 {
						return memberAt(nil, m) // just reported gone: not in the index
					}
					return memberAt(c.probe.nodes, m)
				},
				refused: func() bool { return c.probe.refused },
				wait:    func() { time.Sleep(time.Millisecond) },
				back:    func() { back = true },
			}
			d.confirm(func() { gone = true })
			if gone != c.wantGone || back != c.wantBack || looks > c.wantLooks {
				t.Fatalf("gone %v back %v after %d looks; want gone %v back %v within %d", gone, back, looks, c.wantGone, c.wantBack, c.wantLooks)
			}
		})
	}
	// A stopped node decides nothing.
	called := false
	ownerDeath{deadline: time.Now(), stopped: func() bool { return true }}.confirm(func() { called = true })
	if called {
		t.Fatal("a stopped node declared an owner dead")
	}
}
