package lifecycle

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
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
//	PlacementFailed inc=N msg=TEXT
//	ConstructorSucceeded inc=N
//	ConstructorFailed inc=N msg=TEXT
//	ProcessDied inc=N [msg=TEXT]
//	HostDied node=NODE
//	Kill [no-restart]
//	OwnerDied
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
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scenarios in testdata")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runScript(t, f) })
	}
}

type block struct {
	prefix   []string // comments and blank lines before the command
	line     int      // of the command
	cmd      string
	expected []string
}

func parseScript(t *testing.T, path string) (blocks []block, trailer []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var prefix []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			prefix = append(prefix, l)
			continue
		}
		b := block{prefix: prefix, line: i + 1, cmd: strings.TrimSpace(l)}
		prefix = nil
		if i+1 >= len(lines) || lines[i+1] != "----" {
			t.Fatalf("%s:%d: want ---- after the command", path, i+1)
		}
		for i += 2; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			b.expected = append(b.expected, lines[i])
		}
		if i < len(lines) {
			i-- // leave the blank line to the next block's prefix
		}
		blocks = append(blocks, b)
	}
	return blocks, prefix
}

func runScript(t *testing.T, path string) {
	blocks, trailer := parseScript(t, path)
	var (
		s       State
		created bool
		out     strings.Builder
	)
	for _, b := range blocks {
		for _, p := range b.prefix {
			out.WriteString(p + "\n")
		}
		where := fmt.Sprintf("%s:%d", path, b.line)
		name, args, err := parseCommand(b.cmd)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
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
		} else {
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
		}
		got := render(s, acts, serr)
		if name == "New" && serr != nil {
			got = []string{"error: " + serr.Error()} // there is no state to show
		}
		if !*rewrite && !reflect.DeepEqual(got, b.expected) {
			t.Errorf("%s: %s\n got:\n\t%s\nwant:\n\t%s", where, b.cmd,
				strings.Join(got, "\n\t"), strings.Join(b.expected, "\n\t"))
		}
		out.WriteString(b.cmd + "\n----\n")
		for _, l := range got {
			out.WriteString(l + "\n")
		}
	}
	for _, p := range trailer {
		out.WriteString(p + "\n")
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
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

// parseCommand splits `Name k=v k="v w" flag` into the name and its arguments.
func parseCommand(line string) (string, map[string]string, error) {
	var toks []string
	for i := 0; i < len(line); {
		if line[i] == ' ' || line[i] == '\t' {
			i++
			continue
		}
		j := i
		for j < len(line) && line[j] != ' ' && line[j] != '\t' {
			if line[j] == '"' { // a quoted value runs to its closing quote
				k := j + 1
				for k < len(line) && line[k] != '"' {
					if line[k] == '\\' {
						k++
					}
					k++
				}
				if k >= len(line) {
					return "", nil, fmt.Errorf("unterminated quote in %q", line)
				}
				j = k
			}
			j++
		}
		toks = append(toks, line[i:j])
		i = j
	}
	if len(toks) == 0 {
		return "", nil, fmt.Errorf("empty command")
	}
	args := map[string]string{}
	for _, tok := range toks[1:] {
		k, v, ok := strings.Cut(tok, "=")
		if !ok {
			v = "true"
		} else if strings.HasPrefix(v, `"`) {
			uv, err := strconv.Unquote(v)
			if err != nil {
				return "", nil, fmt.Errorf("bad quoted value %s: %v", v, err)
			}
			v = uv
		}
		if _, dup := args[k]; dup {
			return "", nil, fmt.Errorf("key %q given twice", k)
		}
		args[k] = v
	}
	return toks[0], args, nil
}

// argReader takes typed values out of a command's arguments and reports unknown keys.
type argReader struct {
	args map[string]string
	err  error
}

func (r *argReader) str(k string, required bool) string {
	v, ok := r.args[k]
	if !ok && required && r.err == nil {
		r.err = fmt.Errorf("missing %s=", k)
	}
	delete(r.args, k)
	return v
}

func (r *argReader) uint(k string) uint64 {
	v := r.str(k, true)
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil && r.err == nil {
		r.err = fmt.Errorf("%s=%q: %v", k, v, err)
	}
	return n
}

func (r *argReader) bool(k string) bool {
	v := r.str(k, false)
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil && r.err == nil {
		r.err = fmt.Errorf("%s=%q: %v", k, v, err)
	}
	return b
}

func (r *argReader) done() error {
	if r.err != nil {
		return r.err
	}
	for k := range r.args {
		return fmt.Errorf("unknown key %q", k)
	}
	return nil
}

func configFromArgs(args map[string]string) (Config, error) {
	r := &argReader{args: args}
	cfg := Config{ActorID: r.str("id", true), Detached: r.bool("detached"), AtMostOnce: r.bool("at-most-once")}
	switch v := r.str("max-restarts", true); v {
	case "inf":
		cfg.MaxRestarts = Infinite
	default:
		n, err := strconv.Atoi(v)
		if err != nil && r.err == nil {
			r.err = fmt.Errorf("max-restarts=%q: %v", v, err)
		}
		cfg.MaxRestarts = n
	}
	return cfg, r.done()
}

func eventFromArgs(name string, args map[string]string) (Event, error) {
	r := &argReader{args: args}
	var e Event
	switch name {
	case "Placed":
		e = Placed{Incarnation: r.uint("inc"), Node: r.str("node", true)}
	case "PlacementFailed":
		e = PlacementFailed{Incarnation: r.uint("inc"), Message: r.str("msg", true)}
	case "ConstructorSucceeded":
		e = ConstructorSucceeded{Incarnation: r.uint("inc")}
	case "ConstructorFailed":
		e = ConstructorFailed{Incarnation: r.uint("inc"), Message: r.str("msg", true)}
	case "ProcessDied":
		e = ProcessDied{Incarnation: r.uint("inc"), Message: r.str("msg", false)}
	case "HostDied":
		e = HostDied{Node: r.str("node", true)}
	case "Kill":
		e = Kill{NoRestart: r.bool("no-restart")}
	case "OwnerDied":
		e = OwnerDied{}
	case "CheckpointTaken":
		e = CheckpointTaken{Incarnation: r.uint("inc"), Seq: r.uint("seq"), Ref: r.str("ref", false)}
	default:
		return nil, fmt.Errorf("unknown command %q", name)
	}
	return e, r.done()
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
