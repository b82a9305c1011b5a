package lifecycle

import (
	"errors"
	"flag"
	"fmt"
	"github.com/ray-go/ray/internal/base/scenario"
	"reflect"
	"strconv"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output in testdata/*.txt with the actual output")

// TestScenarios runs the scripts in testdata/*.txt. The format, a hand-rolled cousin of
// the datadriven tests of etcd-io/raft:
//
//	# a comment; comments and blank lines between blocks are kept by -rewrite
//	Command key=value key="quoted value" flag
//	----
//	expected output, up to the next blank line or the end of the file
//
// Each command is one event applied with Step to the script's current actor, except New,
// which creates a fresh actor (a script may hold several). The commands and their keys:
//
//	New id=ID max-restarts=N|inf [detached] [at-most-once]
//	Placed inc=N node=NODE
//	PlacementFailed inc=N msg=TEXT [node-gone]
//	Waiting inc=N [node=NODE] [reason=TEXT]
//	ConstructorSucceeded inc=N
//	ConstructorFailed inc=N msg=TEXT [raised]
//	ProcessDied inc=N [msg=TEXT]
//	HostDied node=NODE
//	Kill [no-restart]
//	OwnerDied
//	OutOfScope
//	CheckpointTaken inc=N seq=N [ref=REF]
//
// A bare key means key=true. The output is the state (State.String), then one line
// "> action" per action (Action.String), or "no actions"; a refused event prints
// "error: ..." first, and the (unchanged) state after it. Every step is also checked
// against the invariants of checkStep, whatever the script expects.
//
// go test ./actors/lifecycle -run TestScenarios -rewrite regenerates the expected output;
// review the diff before committing it.
func TestScenarios(t *testing.T) {
	scenario.Run(t, "testdata/*.txt", scenario.Options{Rewrite: *rewrite}, func(t *testing.T) scenario.Step {
		var (
			s       State
			created bool
		)
		return func(where, name string, args map[string]string) []string {
			var (
				acts []Action
				serr error
			)
			if name == "New" {
				cfg, err := configFromArgs(args)
				if err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				s, acts, serr = New(cfg)
				created = serr == nil
				if serr != nil {
					return []string{"error: " + serr.Error()} // there is no state to show
				}
				return render(s, acts, serr)
			}
			if !created {
				t.Fatalf("%s: %s before New", where, name)
			}
			e, err := eventFromArgs(name, args)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			prev := s
			s, acts, serr = Step(prev, e)
			if err := checkStep(prev, e, s, acts, serr); err != nil {
				t.Errorf("%s: invariant: %v", where, err)
			}
			return render(s, acts, serr)
		}
	})
}

func render(s State, acts []Action, err error) []string {
	var lines []string
	if err != nil {
		lines = append(lines, "error: "+err.Error())
	}
	lines = append(lines, s.String())
	for _, a := range acts {
		lines = append(lines, "> "+a.String())
	}
	if err == nil && len(acts) == 0 {
		lines = append(lines, "no actions")
	}
	return lines
}

func configFromArgs(args map[string]string) (Config, error) {
	r := scenario.NewArgs(args)
	cfg := Config{ActorID: r.Str("id", true), Detached: r.Bool("detached"), AtMostOnce: r.Bool("at-most-once")}
	switch v := r.Str("max-restarts", true); v {
	case "inf":
		cfg.MaxRestarts = Infinite
	default:
		n, err := strconv.Atoi(v)
		if err != nil {
			r.Fail(fmt.Errorf("max-restarts=%q: %v", v, err))
		}
		cfg.MaxRestarts = n
	}
	return cfg, r.Done()
}

func eventFromArgs(name string, args map[string]string) (Event, error) {
	r := scenario.NewArgs(args)
	var e Event
	switch name {
	case "Placed":
		e = Placed{Incarnation: r.Uint("inc", true), Node: r.Str("node", true)}
	case "PlacementFailed":
		e = PlacementFailed{Incarnation: r.Uint("inc", true), Message: r.Str("msg", true), NodeGone: r.Bool("node-gone")}
	case "Waiting":
		e = Waiting{Incarnation: r.Uint("inc", true), Node: r.Str("node", false), Reason: r.Str("reason", false)}
	case "ConstructorSucceeded":
		e = ConstructorSucceeded{Incarnation: r.Uint("inc", true)}
	case "ConstructorFailed":
		e = ConstructorFailed{Incarnation: r.Uint("inc", true), Message: r.Str("msg", true), Raised: r.Bool("raised")}
	case "ProcessDied":
		e = ProcessDied{Incarnation: r.Uint("inc", true), Message: r.Str("msg", false)}
	case "HostDied":
		e = HostDied{Node: r.Str("node", true)}
	case "Kill":
		e = Kill{NoRestart: r.Bool("no-restart")}
	case "OwnerDied":
		e = OwnerDied{}
	case "OutOfScope":
		e = OutOfScope{}
	case "CheckpointTaken":
		e = CheckpointTaken{Incarnation: r.Uint("inc", true), Seq: r.Uint("seq", true), Ref: r.Str("ref", false)}
	default:
		return nil, fmt.Errorf("unknown command %q", name)
	}
	return e, r.Done()
}

// checkStep is the contract of Step, checked after every step of the scenarios, the
// table tests, the random walks and the fuzz test.
func checkStep(prev State, e Event, next State, acts []Action, err error) error {
	if err != nil {
		if next != prev || len(acts) != 0 {
			return fmt.Errorf("%v: error %q but the state changed (%v -> %v) or actions %v", e, err, prev, next, acts)
		}
		if !errors.Is(err, ErrInvalidTransition) && !errors.Is(err, ErrInvalidState) {
			return fmt.Errorf("%v: error %q matches neither ErrInvalidTransition nor ErrInvalidState", e, err)
		}
		if errors.Is(err, ErrTerminal) != (prev.Phase == Dead) {
			return fmt.Errorf("%v in %v: errors.Is(%q, ErrTerminal) = %v", e, prev.Phase, err, errors.Is(err, ErrTerminal))
		}
		return nil
	}
	if prev.Phase == Dead {
		return fmt.Errorf("%v accepted by a dead actor", e)
	}
	if verr := next.Validate(); verr != nil {
		return fmt.Errorf("%v: next state invalid: %v", e, verr)
	}
	if next.Config != prev.Config {
		return fmt.Errorf("%v changed the config: %+v -> %+v", e, prev.Config, next.Config)
	}
	if next.Incarnation < prev.Incarnation || next.Restarts < prev.Restarts {
		return fmt.Errorf("%v: incarnation %d -> %d, restarts %d -> %d", e, prev.Incarnation, next.Incarnation, prev.Restarts, next.Restarts)
	}
	if next.Checkpoint.Seq < prev.Checkpoint.Seq {
		return fmt.Errorf("%v: checkpoint went back %v -> %v", e, prev.Checkpoint, next.Checkpoint)
	}
	if next == prev {
		if len(acts) != 0 {
			return fmt.Errorf("%v: no state change but actions %v", e, acts)
		}
		return nil
	}
	if len(acts) == 0 || acts[0] != (PublishState{State: next}) {
		return fmt.Errorf("%v: state changed but the actions %v do not start with PublishState of it", e, acts)
	}
	count := map[string]int{}
	for _, a := range acts {
		name := reflect.TypeOf(a).Name()
		count[name]++
		switch a := a.(type) {
		case PublishState:
		case PlaceActor:
			if next.Phase != Restarting || a.Incarnation != next.Incarnation || next.Incarnation != prev.Incarnation+1 {
				return fmt.Errorf("%v: %v but %v -> %v", e, a, prev, next)
			}
		case StartInstance:
			if prev.Node != "" || a.Incarnation != next.Incarnation || a.Node != next.Node ||
				a.RestoreFromCheckpoint != !next.Checkpoint.IsZero() || (a.ReplayFromSeq == 0) != next.AtMostOnce {
				return fmt.Errorf("%v: %v but %v -> %v", e, a, prev, next)
			}
		case StopInstance:
			if a.Incarnation != prev.Incarnation || a.Node != prev.Node || a.Node == "" {
				return fmt.Errorf("%v: %v but the previous state is %v", e, a, prev)
			}
		case ReleaseResources:
			if a.Incarnation != prev.Incarnation || a.Node != prev.Node || a.Node == "" {
				return fmt.Errorf("%v: %v but the previous state is %v", e, a, prev)
			}
		case CancelPlacement:
			if a.Incarnation != prev.Incarnation || prev.Node != "" {
				return fmt.Errorf("%v: %v but the previous state is %v", e, a, prev)
			}
		case FailPendingCalls:
			if !errors.Is(a.Err, ErrActorDied) || !reflect.DeepEqual(error(a.Err), next.Err()) {
				return fmt.Errorf("%v: %v but the state's error is %v", e, a, next.Err())
			}
		case TruncateLog:
			if next.AtMostOnce || a.Through != next.Checkpoint.Seq || next.Checkpoint == prev.Checkpoint {
				return fmt.Errorf("%v: %v but %v -> %v", e, a, prev, next)
			}
		default:
			return fmt.Errorf("%v: unknown action %T", e, a)
		}
	}
	for name, n := range count {
		if n > 1 {
			return fmt.Errorf("%v: %d %s actions in %v", e, n, name, acts)
		}
	}
	if dying := next.Phase == Dead; dying != (count["FailPendingCalls"] == 1) {
		return fmt.Errorf("%v: %v -> %v with actions %v", e, prev.Phase, next.Phase, acts)
	}
	if count["StartInstance"] == 1 != (prev.Node == "" && next.Node != "") {
		return fmt.Errorf("%v: node %q -> %q with actions %v", e, prev.Node, next.Node, acts)
	}
	if count["PlaceActor"] == 1 != (next.Incarnation != prev.Incarnation) {
		return fmt.Errorf("%v: incarnation %d -> %d with actions %v", e, prev.Incarnation, next.Incarnation, acts)
	}
	return nil
}
