package lifecycle

import (
	"fmt"
	"testing"
)

// FuzzStep feeds random event sequences to one actor: Step must never panic, every step
// must satisfy checkStep (errors leave the state unchanged, the incarnation never
// decreases, transitions publish first, ...), and a dead actor stays dead.
//
//	go test ./actors/lifecycle -run '^$' -fuzz FuzzStep -fuzztime 30s
func FuzzStep(f *testing.F) {
	f.Add([]byte{2, 0, 0})
	f.Add([]byte{1, 0, 0, 0, 1, 0, 2, 1, 0, 5, 0, 0, 0, 1, 1, 2, 1, 1})
	f.Add([]byte{0, 1, 0, 0, 1, 0, 2, 1, 0, 7, 0, 0, 6, 0, 0, 0, 2, 1})
	f.Add([]byte{4, 2, 1, 0, 1, 0, 2, 1, 0, 9, 1, 7, 3, 1, 0, 4, 1, 0, 0, 1, 1, 2, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := walk(data); err != nil {
			t.Fatal(err)
		}
	})
}

var fuzzNodes = []string{"", "n1", "n2", "n3"}

// walk decodes data into a Config (first 3 bytes) and events (3 bytes each: kind,
// incarnation offset, node or sequence number) and applies them, checking each step.
// Incarnations are drawn around the current one so that stale, current and future
// events all occur.
func walk(data []byte) error {
	if len(data) < 3 {
		return nil
	}
	cfg := Config{
		ActorID:     "a",
		MaxRestarts: int(data[0]%6) - 1, // -1 .. 4
		Detached:    data[1]&1 == 1,
		AtMostOnce:  data[2]&1 == 1,
	}
	s, _, err := New(cfg)
	if err != nil {
		return err
	}
	wasDead := false
	for data = data[3:]; len(data) >= 3; data = data[3:] {
		kind, off, arg := data[0], data[1], data[2]
		inc := s.Incarnation
		switch off % 4 {
		case 0:
			// current
		case 1:
			inc = max(inc, 2) - 1 // the previous one (or current)
		case 2:
			inc++ // never issued
		case 3:
			inc = 0
		}
		node := fuzzNodes[int(arg)%len(fuzzNodes)]
		if off >= 128 && s.Node != "" {
			node = s.Node // aim at the actor's own node often
		}
		var e Event
		switch kind % 10 {
		case 0:
			e = Placed{Incarnation: inc, Node: node}
		case 1:
			e = ConstructorSucceeded{Incarnation: inc}
		case 2:
			e = ConstructorFailed{Incarnation: inc, Message: "boom", Raised: arg&1 == 1}
		case 3:
			e = ProcessDied{Incarnation: inc}
		case 4:
			e = HostDied{Node: node}
		case 5:
			e = Kill{NoRestart: arg&1 == 1}
		case 6:
			if arg&1 == 1 {
				e = OutOfScope{}
			} else {
				e = OwnerDied{}
			}
		case 7:
			e = CheckpointTaken{Incarnation: inc, Seq: uint64(arg), Ref: fmt.Sprint("c", arg)}
		case 8:
			e = PlacementFailed{Incarnation: inc, Message: "infeasible", NodeGone: arg&1 == 1}
		case 9:
			if arg&3 == 3 {
				e = Waiting{Incarnation: inc, Node: node, Reason: fmt.Sprint("busy", arg&4)}
			} else if arg&3 == 2 {
				e = Waiting{Incarnation: inc, Reason: "no node"}
			} else {
				e = nil
			}
		}
		prev := s
		next, acts, err := Step(prev, e)
		if cerr := checkStep(prev, e, next, acts, err); cerr != nil {
			return cerr
		}
		if wasDead && next.Phase != Dead {
			return fmt.Errorf("%v left Dead: %v", e, next)
		}
		wasDead = next.Phase == Dead
		s = next
	}
	return nil
}
