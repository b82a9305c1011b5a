package lifecycle

import (
	"errors"
	"fmt"
)

var (
	// ErrActorDied: a call to a dead actor, or one pending when it died. The root package
	// will export it as ray.ErrActorDied; every *DiedError matches it.
	ErrActorDied = errors.New("actor died")
	// ErrInvalidTransition: Step was given an event its state does not allow. Every
	// *TransitionError matches it.
	ErrInvalidTransition = errors.New("lifecycle: invalid transition")
	// ErrTerminal: Step was given an event for an actor that is already dead. Matched, with
	// ErrInvalidTransition, by the *TransitionError Step returns then.
	ErrTerminal = errors.New("lifecycle: actor is dead")
	// ErrInvalidConfig: New was given a Config that fails Validate.
	ErrInvalidConfig = errors.New("lifecycle: invalid config")
	// ErrInvalidState: Step was given a State that New and Step never produce.
	ErrInvalidState = errors.New("lifecycle: invalid state")
)

// DiedError is why an actor died: what every call to it fails with.
type DiedError struct {
	ActorID     string
	Cause       Cause
	Detail      string // e.g. "host n1 died (no restart left: 3 of 3 used)"
	Incarnation uint64 // the last incarnation
	Restarts    int    // restarts used
}

func (e *DiedError) Error() string {
	return fmt.Sprintf("actor %s died: %s", e.ActorID, e.Detail)
}

// Is makes errors.Is(err, ErrActorDied) true.
func (e *DiedError) Is(target error) bool { return target == ErrActorDied }

// TransitionError is an event Step refused; the state was left unchanged.
type TransitionError struct {
	ActorID string
	From    Phase
	Event   Event
	Reason  string
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("lifecycle: actor %s: %v in %v: %s", e.ActorID, e.Event, e.From, e.Reason)
}

// Is matches ErrInvalidTransition, and ErrTerminal when the actor was dead.
func (e *TransitionError) Is(target error) bool {
	return target == ErrInvalidTransition || (e.From == Dead && target == ErrTerminal)
}
