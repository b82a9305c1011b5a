package lineage

import (
	"flag"
	"fmt"
	"github.com/ray-go/ray/internal/base/scenario"
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
//	    max-retries: -1 (no limit) if not given; running: T's first run is pending
//	    in its shard
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
	scenario.Run(t, "testdata/*.txt", scenario.Options{Rewrite: *rewrite, Subject: true}, func(t *testing.T) scenario.Step {
		w := newWorld()
		return func(where, name string, args map[string]string) []string {
			w.out = nil
			if err := w.run(name, args); err != nil {
				w.out = append(w.out, "error: "+err.Error())
			}
			if w.err != nil {
				t.Errorf("%s: %s: broken promise: %v", where, name, w.err)
				w.err = nil
			}
			if len(w.out) == 0 {
				return []string{"no actions"}
			}
			return w.out
		}
	})
}

// run carries out one command; an error is the script's mistake or a refused event
// (printed as "error: ...").
func (w *world) run(name string, args map[string]string) error {
	r := scenario.NewArgs(args)
	subject := r.Str("_", false)
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
		t := &wtask{name: subject, args: r.List("args"), attempt: int32(r.Int("attempt")), maxRetries: -1}
		if _, ok := args["max-retries"]; ok {
			t.maxRetries = int32(r.Int("max-retries"))
		}
		running := r.Bool("running")
		if err := r.Done(); err != nil {
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
		if r.Bool("put") {
			o = w.put(subject)
		} else {
			o = w.object(subject)
		}
		if err := w.setValue(o, r); err != nil {
			return err
		}
		o.corrupt, o.borrowed = r.Bool("corrupt"), r.Bool("borrowed")
		if err := r.Done(); err != nil {
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
		rec := &wrecord{args: r.List("args"), corrupt: r.Bool("corrupt"), badArg: r.Bool("bad-arg")}
		if err := r.Done(); err != nil {
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
		if err := r.Done(); err != nil {
			return err
		}
		w.dead[subject] = true
		w.printf("%s gone", subject)
	case "Lost":
		if err := need(); err != nil {
			return err
		}
		if err := r.Done(); err != nil {
			return err
		}
		o := w.objs[subject]
		if o == nil {
			return fmt.Errorf("no object %s", subject)
		}
		w.reconstruct(o.id)
	case "Deliver":
		if err := r.Done(); err != nil {
			return err
		}
		w.deliver()
	case "Freed":
		if err := need(); err != nil {
			return err
		}
		if err := r.Done(); err != nil {
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
		if err := r.Done(); err != nil {
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
		if err := r.Done(); err != nil {
			return err
		}
		return w.cancel(subject)
	case "Failed":
		if err := need(); err != nil {
			return err
		}
		if err := r.Done(); err != nil {
			return err
		}
		return w.argsFailed(subject)
	case "Get":
		if err := need(); err != nil {
			return err
		}
		obj := r.Str("obj", true)
		if err := r.Done(); err != nil {
			return err
		}
		return w.startGet(subject, obj)
	case "OwnerDied":
		if err := need(); err != nil {
			return err
		}
		unreadable := r.Bool("unreadable")
		if err := r.Done(); err != nil {
			return err
		}
		w.ownerDied(subject, unreadable)
	default:
		return fmt.Errorf("unknown command %q", name)
	}
	return nil
}

// setValue reads a value's keys: inline, store=NODE, err=KIND, pending, unknown.
func (w *world) setValue(o *wobject, r *scenario.Args) error {
	set := 0
	if r.Bool("inline") {
		o.state, o.val = Ready, Value{}
		set++
	}
	if n := r.Str("store", false); n != "" {
		o.state, o.val = Ready, Value{InStore: true, Node: ids.NodeID(n)}
		set++
	}
	if k := r.Str("err", false); k != "" {
		kind, ok := pb.ErrorInfo_Kind_value[k]
		if !ok {
			return fmt.Errorf("unknown error kind %q", k)
		}
		o.state, o.val = Ready, Value{Failed: true, Err: pb.ErrorInfo_Kind(kind)}
		set++
	}
	if r.Bool("pending") {
		o.state, o.val = Pending, Value{}
		set++
	}
	if r.Bool("unknown") {
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
