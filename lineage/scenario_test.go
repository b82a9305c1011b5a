package lineage

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output in testdata/*.txt with the actual output")

// TestScenarios runs the scripts in testdata/*.txt against a simulated owner (world),
// which carries out the planner's actions as internal/assembly/core does. The format, the
// one of actors/lifecycle's scripts:
//
//	# a comment; comments and blank lines between blocks are kept by -rewrite
//	Command subject key=value key="quoted value" flag
//	----
//	expected output, up to the next blank line or the end of the file
//
// The first bare word after the command is its subject; later ones are flags (flag means
// flag=true). Every script starts from an empty owner on node n1. Setting up:
//
//	Task T [args=A,B] [attempt=N] [max-retries=N] [running]
//	    the owner holds T's lineage record (its return object is called T too);
//	    running: T's first run is pending in its shard
//	Object O (inline | store=NODE | err=KIND | pending | unknown) [put] [corrupt] [borrowed]
//	    O's future; put: O was made by Put; corrupt: its stored bytes fail to read;
//	    borrowed: owned by another runtime, adopted when that owner dies
//	Record T [args=A,B] [corrupt] [bad-arg]
//	    a lineage record a dead owner left in the GCS
//	NodeDied NODE
//
// Events, each the entry point of the I/O layer named:
//
//	Lost O                      reconstruct(O): Lost from O's facts
//	Deliver                     the shard takes the rerun requests in its mailbox (and
//	                            those their plans send)
//	Freed T                     the old copy a request of T freed is gone: OldFreed
//	Finish T (inline | store=NODE | err=KIND)
//	                            T's pending run completes (tasks waiting for it dispatch,
//	                            Gets waiting for it go on)
//	Cancel T                    T's pending run is cancelled
//	Failed T                    an attempt of T failed on a lost argument: ArgsLost
//	Get G obj=O                 a Get (named G) of O: it runs until it waits or ends
//	OwnerDied NODE [unreadable] the owner of the borrowed objects died on NODE: they are
//	                            adopted in name order (unreadable: its lineage cannot be read)
//
// The output is what the owner did, in order: "> Action" for each planner action (a
// plan the I/O layer asked for while carrying out an action is indented under it) and
// plain lines for what happened outside the planner (a request arriving, a Get reading,
// a task dispatched). Every step is also checked against the planner's promises (world's
// checks), whatever the script expects.
//
// go test ./lineage -run TestScenarios -rewrite regenerates the expected output; review
// the diff before committing it.
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
	w := newWorld()
	var out strings.Builder
	for _, b := range blocks {
		for _, p := range b.prefix {
			out.WriteString(p + "\n")
		}
		where := fmt.Sprintf("%s:%d", path, b.line)
		name, args, err := parseCommand(b.cmd)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		w.out = nil
		if err := w.run(name, args); err != nil {
			w.out = append(w.out, "error: "+err.Error())
		}
		if w.err != nil {
			t.Errorf("%s: %s: broken promise: %v", where, b.cmd, w.err)
			w.err = nil
		}
		got := w.out
		if len(got) == 0 {
			got = []string{"no actions"}
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

// run carries out one command; an error is the script's mistake or a refused event
// (printed as "error: ...").
func (w *world) run(name string, args map[string]string) error {
	r := &argReader{args: args}
	subject := r.str("_", false)
	need := func() error {
		if subject == "" {
			return fmt.Errorf("%s needs a subject", name)
		}
		return nil
	}
	switch name {
	case "Task":
		if err := need(); err != nil {
			return err
		}
		t := &wtask{name: subject, args: r.list("args"), attempt: int32(r.int("attempt")), maxRetries: int32(r.int("max-retries"))}
		running := r.bool("running")
		if err := r.done(); err != nil {
			return err
		}
		w.object(subject)
		for _, a := range t.args {
			w.object(a)
		}
		w.tasks[subject] = t
		line := fmt.Sprintf("%s args=%s attempt=%d max-retries=%d", subject, orDash(strings.Join(t.args, ",")), t.attempt, t.maxRetries)
		if running {
			w.held[subject] = &heldRun{}
			line += " running"
		}
		w.printf("%s", line)
	case "Object":
		if err := need(); err != nil {
			return err
		}
		var o *wobject
		if r.bool("put") {
			o = w.put(subject)
		} else {
			o = w.object(subject)
		}
		if err := w.setValue(o, r); err != nil {
			return err
		}
		o.corrupt, o.borrowed = r.bool("corrupt"), r.bool("borrowed")
		if err := r.done(); err != nil {
			return err
		}
		line := w.facts(subject).String()
		if o.corrupt {
			line += " corrupt"
		}
		if o.borrowed {
			line += " borrowed"
		}
		w.printf("%s", line)
	case "Record":
		if err := need(); err != nil {
			return err
		}
		rec := &wrecord{args: r.list("args"), corrupt: r.bool("corrupt"), badArg: r.bool("bad-arg")}
		if err := r.done(); err != nil {
			return err
		}
		w.object(subject)
		for _, a := range rec.args {
			w.object(a)
		}
		w.gcs[subject] = rec
		line := fmt.Sprintf("GCS record %s args=%s", subject, orDash(strings.Join(rec.args, ",")))
		if rec.corrupt {
			line += " corrupt"
		}
		if rec.badArg {
			line += " bad-arg"
		}
		w.printf("%s", line)
	case "NodeDied":
		if err := need(); err != nil {
			return err
		}
		if err := r.done(); err != nil {
			return err
		}
		w.dead[subject] = true
		w.printf("%s gone", subject)
	case "Lost":
		if err := need(); err != nil {
			return err
		}
		if err := r.done(); err != nil {
			return err
		}
		o := w.objs[subject]
		if o == nil {
			return fmt.Errorf("no object %s", subject)
		}
		w.reconstruct(o.id)
	case "Deliver":
		if err := r.done(); err != nil {
			return err
		}
		w.deliver()
	case "Freed":
		if err := need(); err != nil {
			return err
		}
		if err := r.done(); err != nil {
			return err
		}
		return w.freed(subject)
	case "Finish":
		if err := need(); err != nil {
			return err
		}
		o := &wobject{}
		if err := w.setValue(o, r); err != nil {
			return err
		}
		if err := r.done(); err != nil {
			return err
		}
		if o.state != Ready {
			return fmt.Errorf("Finish needs a value")
		}
		return w.finish(subject, o.val)
	case "Cancel":
		if err := need(); err != nil {
			return err
		}
		if err := r.done(); err != nil {
			return err
		}
		return w.cancel(subject)
	case "Failed":
		if err := need(); err != nil {
			return err
		}
		if err := r.done(); err != nil {
			return err
		}
		return w.argsFailed(subject)
	case "Get":
		if err := need(); err != nil {
			return err
		}
		obj := r.str("obj", true)
		if err := r.done(); err != nil {
			return err
		}
		return w.startGet(subject, obj)
	case "OwnerDied":
		if err := need(); err != nil {
			return err
		}
		unreadable := r.bool("unreadable")
		if err := r.done(); err != nil {
			return err
		}
		w.ownerDied(subject, unreadable)
	default:
		return fmt.Errorf("unknown command %q", name)
	}
	return nil
}

// setValue reads a value's keys: inline, store=NODE, err=KIND, pending, unknown.
func (w *world) setValue(o *wobject, r *argReader) error {
	set := 0
	if r.bool("inline") {
		o.state, o.val = Ready, Value{}
		set++
	}
	if n := r.str("store", false); n != "" {
		o.state, o.val = Ready, Value{InStore: true, Node: ids.NodeID(n)}
		set++
	}
	if k := r.str("err", false); k != "" {
		kind, ok := pb.ErrorInfo_Kind_value[k]
		if !ok {
			return fmt.Errorf("unknown error kind %q", k)
		}
		o.state, o.val = Ready, Value{Failed: true, Err: pb.ErrorInfo_Kind(kind)}
		set++
	}
	if r.bool("pending") {
		o.state, o.val = Pending, Value{}
		set++
	}
	if r.bool("unknown") {
		o.state, o.val = Unknown, Value{}
		set++
	}
	if set > 1 {
		return fmt.Errorf("more than one value")
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// parseCommand splits `Name subject k=v k="v w" flag` into the name and its arguments;
// the subject is the argument "_".
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
	for i, tok := range toks[1:] {
		k, v, ok := strings.Cut(tok, "=")
		switch {
		case !ok && i == 0:
			k, v = "_", tok
		case !ok:
			v = "true"
		case strings.HasPrefix(v, `"`):
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

func (r *argReader) int(k string) int {
	v := r.str(k, false)
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
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

func (r *argReader) list(k string) []string {
	v := r.str(k, false)
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
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
