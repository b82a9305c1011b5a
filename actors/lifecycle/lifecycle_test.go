package lifecycle

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// mustRun builds an actor with cfg and applies events, failing on any error.
func mustRun(t *testing.T, cfg Config, events ...Event) State {
	t.Helper()
	s, _, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		prev := s
		var acts []Action
		s, acts, err = Step(prev, e)
		if err != nil {
			t.Fatalf("%v: %v", e, err)
		}
		if cerr := checkStep(prev, e, s, acts, err); cerr != nil {
			t.Fatal(cerr)
		}
	}
	return s
}

var (
	cfg2  = Config{ActorID: "a", MaxRestarts: 2}
	alive = []Event{Placed{1, "n1"}, ConstructorSucceeded{1}}
)

func TestNewValidates(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		want string // substring of the error, "" for none
	}{
		{Config{ActorID: "a"}, ""},
		{Config{ActorID: "a", MaxRestarts: Infinite}, ""},
		{Config{ActorID: "a", MaxRestarts: 1 << 40, Detached: true, AtMostOnce: true}, ""},
		{Config{MaxRestarts: 1}, "empty actor ID"},
		{Config{ActorID: "a", MaxRestarts: -2}, "MaxRestarts -2"},
	} {
		s, acts, err := New(tt.cfg)
		if tt.want != "" {
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New(%+v) = %v, want ErrInvalidConfig with %q", tt.cfg, err, tt.want)
			}
			continue
		}
		if err != nil {
			t.Fatalf("New(%+v): %v", tt.cfg, err)
		}
		want := []Action{PublishState{State: s}, PlaceActor{Incarnation: 1}}
		if s.Phase != Pending || s.Incarnation != 1 || s.Config != tt.cfg || !reflect.DeepEqual(acts, want) {
			t.Errorf("New(%+v) = %v, %v", tt.cfg, s, acts)
		}
		if s.Err() != nil {
			t.Errorf("a pending actor has error %v", s.Err())
		}
	}
}

func TestStepRejectsInvalidStates(t *testing.T) {
	good := mustRun(t, cfg2, alive...)
	for _, tt := range []struct {
		name   string
		mutate func(*State)
	}{
		{"zero", func(s *State) { *s = State{} }},
		{"unknown phase", func(s *State) { s.Phase = 9 }},
		{"incarnation 0", func(s *State) { s.Incarnation = 0 }},
		{"restarts over max", func(s *State) { s.Restarts, s.Incarnation = 3, 4 }},
		{"incarnation not restarts+1", func(s *State) { s.Incarnation = 5 }},
		{"alive nowhere", func(s *State) { s.Node = "" }},
		{"cause while alive", func(s *State) { s.Cause = CauseKilled }},
		{"dead without cause", func(s *State) { s.Phase, s.Node = Dead, "" }},
		{"dead on a node", func(s *State) { s.Phase, s.Cause = Dead, CauseKilled }},
		{"owner dead, not detached", func(s *State) { s.OwnerDead = true }},
	} {
		s := good
		tt.mutate(&s)
		next, acts, err := Step(s, Kill{NoRestart: true})
		if !errors.Is(err, ErrInvalidState) || next != s || acts != nil {
			t.Errorf("%s: Step = %v, %v, %v; want ErrInvalidState and no change", tt.name, next, acts, err)
		}
	}
}

// TestEdges tables single steps from a prepared state: whether they are accepted,
// ignored (no change, no actions) or refused, and the resulting phase.
func TestEdges(t *testing.T) {
	type outcome int
	const (
		applied outcome = iota
		ignored
		refused
	)
	for _, tt := range []struct {
		name  string
		cfg   Config
		setup []Event
		event Event
		want  outcome
		phase Phase
		inc   uint64
	}{
		{"nil event", cfg2, nil, nil, refused, Pending, 1},
		{"placed on empty node", cfg2, nil, Placed{1, ""}, refused, Pending, 1},
		{"placed twice, same node", cfg2, alive[:1], Placed{1, "n1"}, ignored, Pending, 1},
		{"placed twice, other node", cfg2, alive[:1], Placed{1, "n2"}, refused, Pending, 1},
		{"placed, future incarnation", cfg2, nil, Placed{2, "n1"}, refused, Pending, 1},
		{"placed, incarnation 0", cfg2, nil, Placed{0, "n1"}, refused, Pending, 1},
		{"succeeded before placement", cfg2, nil, ConstructorSucceeded{1}, refused, Pending, 1},
		{"succeeded twice", cfg2, alive, ConstructorSucceeded{1}, ignored, Alive, 1},
		{"failed after success", cfg2, alive, ConstructorFailed{Incarnation: 1, Message: "x"}, refused, Alive, 1},
		{"process died before placement", cfg2, nil, ProcessDied{1, ""}, refused, Pending, 1},
		{"process died while constructing", cfg2, alive[:1], ProcessDied{1, ""}, applied, Restarting, 2},
		{"host died, empty node", cfg2, alive, HostDied{""}, refused, Alive, 1},
		{"host died, other node", cfg2, alive, HostDied{"n2"}, ignored, Alive, 1},
		{"host died while waiting for a node", cfg2, nil, HostDied{"n1"}, ignored, Pending, 1},
		{"kill while waiting for a node", cfg2, nil, Kill{}, ignored, Pending, 1},
		{"kill while restarting, no node", cfg2, append(alive, HostDied{"n1"}), Kill{}, ignored, Restarting, 2},
		{"kill no-restart while restarting", cfg2, append(alive, HostDied{"n1"}), Kill{NoRestart: true}, applied, Dead, 2},
		{"placement failed after placement", cfg2, alive[:1], PlacementFailed{Incarnation: 1, Message: "x"}, refused, Pending, 1},
		{"placement failed, infinite restarts", Config{ActorID: "a", MaxRestarts: Infinite}, nil, PlacementFailed{Incarnation: 1, Message: "x"}, applied, Dead, 1},
		{"checkpoint while constructing", cfg2, alive[:1], CheckpointTaken{1, 3, "r"}, refused, Pending, 1},
		{"checkpoint at 0", cfg2, alive, CheckpointTaken{1, 0, "r"}, refused, Alive, 1},
		{"checkpoint from the future", cfg2, alive, CheckpointTaken{2, 3, "r"}, refused, Alive, 1},
		{"older checkpoint", cfg2, append(alive, CheckpointTaken{1, 5, "r5"}), CheckpointTaken{1, 4, "r4"}, ignored, Alive, 1},
		{"owner died, detached, twice", Config{ActorID: "a", Detached: true}, append(alive, OwnerDied{}), OwnerDied{}, ignored, Alive, 1},
		{"owner died while restarting", cfg2, append(alive, HostDied{"n1"}), OwnerDied{}, applied, Dead, 2},
		{"out of scope, detached", Config{ActorID: "a", Detached: true}, alive, OutOfScope{}, refused, Alive, 1},
		{"out of scope while restarting", cfg2, append(alive, HostDied{"n1"}), OutOfScope{}, applied, Dead, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := mustRun(t, tt.cfg, tt.setup...)
			next, acts, err := Step(s, tt.event)
			if cerr := checkStep(s, tt.event, next, acts, err); cerr != nil {
				t.Fatal(cerr)
			}
			var got outcome
			switch {
			case err != nil:
				got = refused
			case next == s:
				got = ignored
			default:
				got = applied
			}
			if got != tt.want || next.Phase != tt.phase || next.Incarnation != tt.inc {
				t.Errorf("got outcome %d, %v (err %v); want outcome %d, phase %v, inc %d", got, next, err, tt.want, tt.phase, tt.inc)
			}
			if err != nil && (!errors.Is(err, ErrInvalidTransition) || errors.Is(err, ErrTerminal)) {
				t.Errorf("error %v: want ErrInvalidTransition, not ErrTerminal", err)
			}
		})
	}
}

func TestDeadErrors(t *testing.T) {
	s := mustRun(t, Config{ActorID: "a7", MaxRestarts: 1}, Placed{1, "n1"}, ConstructorSucceeded{1},
		HostDied{"n1"}, Placed{2, "n2"}, ConstructorSucceeded{2}, HostDied{"n2"})
	err := s.Err()
	if !errors.Is(err, ErrActorDied) {
		t.Fatalf("Err() = %v, want ErrActorDied", err)
	}
	var de *DiedError
	if !errors.As(err, &de) || de.Cause != CauseHostDied || de.Incarnation != 2 || de.Restarts != 1 || de.ActorID != "a7" {
		t.Fatalf("Err() = %#v", err)
	}
	if want := "actor a7 died: host n2 died (no restart left: 1 of 1 used)"; err.Error() != want {
		t.Errorf("Err() = %q, want %q", err, want)
	}
	_, _, serr := Step(s, Kill{})
	var te *TransitionError
	if !errors.Is(serr, ErrTerminal) || !errors.Is(serr, ErrInvalidTransition) || !errors.As(serr, &te) ||
		te.From != Dead || te.Event != (Kill{}) || errors.Is(serr, ErrActorDied) {
		t.Errorf("Step after death = %#v", serr)
	}
	if s.RestartsLeft() != 0 {
		t.Errorf("RestartsLeft = %d", s.RestartsLeft())
	}
}

// TestKillReason: a kill's reason is in the dead record's Detail and in the error its
// callers get; without one the Detail is as before.
func TestKillReason(t *testing.T) {
	s := mustRun(t, cfg2, Placed{1, "n1"}, ConstructorSucceeded{1}, Kill{NoRestart: true, Reason: "its placement group g1 was removed"})
	if s.Phase != Dead || s.Cause != CauseKilled || s.Detail != "killed with no_restart: its placement group g1 was removed" {
		t.Fatalf("killed with a reason: %+v", s)
	}
	if err := s.Err(); !errors.Is(err, ErrActorDied) || !strings.Contains(err.Error(), "placement group g1 was removed") {
		t.Fatalf("Err() = %v", err)
	}
	if s := mustRun(t, cfg2, Kill{NoRestart: true}); s.Detail != "killed with no_restart" {
		t.Fatalf("killed without a reason: Detail %q", s.Detail)
	}
}

func TestRestartsLeft(t *testing.T) {
	inf := mustRun(t, Config{ActorID: "a", MaxRestarts: Infinite}, Placed{1, "n"}, HostDied{"n"})
	if inf.RestartsLeft() != Infinite || inf.Restarts != 1 {
		t.Errorf("infinite: %v left %d", inf, inf.RestartsLeft())
	}
	two := mustRun(t, cfg2, Placed{1, "n"}, HostDied{"n"})
	if two.RestartsLeft() != 1 {
		t.Errorf("two: %v left %d", two, two.RestartsLeft())
	}
}

func TestStartInstanceAfterCheckpoint(t *testing.T) {
	s := mustRun(t, cfg2, Placed{1, "n1"}, ConstructorSucceeded{1}, CheckpointTaken{1, 41, "obj"}, ProcessDied{1, "x"})
	_, acts, err := Step(s, Placed{2, "n2"})
	if err != nil {
		t.Fatal(err)
	}
	want := StartInstance{Incarnation: 2, Node: "n2", RestoreFromCheckpoint: true, Checkpoint: Checkpoint{41, "obj"}, ReplayFromSeq: 42}
	if len(acts) != 2 || acts[1] != want {
		t.Errorf("actions %v, want PublishState then %v", acts, want)
	}
}

func TestStepDoesNotAlias(t *testing.T) {
	s := mustRun(t, cfg2, alive...)
	before := s
	next, acts, _ := Step(s, HostDied{"n1"})
	if s != before {
		t.Fatal("Step modified its argument")
	}
	ps := acts[0].(PublishState)
	if ps.State != next {
		t.Fatalf("PublishState carries %v, Step returned %v", ps.State, next)
	}
}

// TestRandomWalks runs many seeded random event sequences through checkStep on every
// ordinary test run; FuzzStep explores further under go test -fuzz.
func TestRandomWalks(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	walks, steps := 2000, 60
	if testing.Short() {
		walks = 200
	}
	buf := make([]byte, 3+3*steps)
	for range walks {
		for i := range buf {
			buf[i] = byte(r.UintN(256))
		}
		if err := walk(buf); err != nil {
			t.Fatalf("walk %x: %v", buf, err)
		}
	}
}
