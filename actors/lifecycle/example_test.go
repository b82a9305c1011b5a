package lifecycle_test

import (
	"errors"
	"fmt"

	"github.com/ray-go/ray/actors/lifecycle"
)

// An actor whose host dies restarts on another node; the I/O layer carries out the
// actions Step returns.
func Example() {
	s, acts, _ := lifecycle.New(lifecycle.Config{ActorID: "a1", MaxRestarts: 1})
	fmt.Println(s.Phase, acts)
	for _, e := range []lifecycle.Event{
		lifecycle.Placed{Incarnation: 1, Node: "n1"},
		lifecycle.ConstructorSucceeded{Incarnation: 1},
		lifecycle.HostDied{Node: "n1"},
		lifecycle.Placed{Incarnation: 2, Node: "n2"},
		lifecycle.ConstructorSucceeded{Incarnation: 2},
		lifecycle.HostDied{Node: "n2"},
	} {
		s, acts, _ = lifecycle.Step(s, e)
		fmt.Println(s.Phase, acts)
	}
	fmt.Println(errors.Is(s.Err(), lifecycle.ErrActorDied))
	// Output:
	// Pending [PublishState PlaceActor inc=1]
	// Pending [PublishState StartInstance inc=1 node=n1 restore=- replay-from=1]
	// Alive [PublishState]
	// Restarting [PublishState PlaceActor inc=2]
	// Restarting [PublishState StartInstance inc=2 node=n2 restore=- replay-from=1]
	// Alive [PublishState]
	// Dead [PublishState FailPendingCalls err="actor a1 died: host n2 died (no restart left: 1 of 1 used)"]
	// true
}
