package lineage

import (
	"fmt"
	"testing"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// FuzzOwner drives the simulated owner of the scenario tests with random setups and
// command sequences: the planner must never panic, every plan must end, and every step
// must keep the promises world checks (one run of a task at a time, no rerun of a Put or
// of a task without a record, a Get's recoveries bounded, the lineage read once per
// adoption, new attempts counting up, ...).
//
//	go test ./lineage -run '^$' -fuzz FuzzOwner -fuzztime 30s
func FuzzOwner(f *testing.F) {
	f.Add([]byte{0x31, 0x05, 0x12, 0x40, 0x07, 0x21, 0x63, 0x18, 0x20, 0x11, 0x51, 0x72, 0x10, 0x20, 0x30, 0x01})
	f.Add([]byte{0xff, 0x13, 0x23, 0x33, 0x43, 0x53, 0x01, 0x02, 0x12, 0x00, 0x10, 0x20, 0x35, 0x46, 0x58, 0x90, 0x10, 0x20})
	f.Add([]byte{0x08, 0x28, 0x48, 0x68, 0x88, 0x18, 0x38, 0x58, 0x78, 0x98, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06})
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := simulate(data); err != nil {
			t.Fatal(err)
		}
	})
}

var (
	fuzzTasks = []string{"t0", "t1", "t2", "t3", "t4"}
	fuzzPuts  = []string{"p0", "p1"}
	fuzzNodes = []string{"n1", "n2", "n3"}
)

// simulate decodes data into a world (two bytes per task, one per Put) and commands (two
// bytes each: kind and argument) and runs them.
func simulate(data []byte) error {
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	w := newWorld()
	value := func(o *wobject, b byte) {
		switch b % 8 {
		case 0:
			o.state = Unknown
		case 1:
			o.state = Pending
		case 2:
			o.state, o.val = Ready, Value{}
		case 3, 4, 5:
			o.state, o.val = Ready, Value{InStore: true, Node: ids.NodeID(fuzzNodes[b%8-3])}
		case 6:
			o.state, o.val = Ready, Value{Failed: true, Err: pb.ErrorInfo_OBJECT_LOST}
		case 7:
			o.state, o.val = Ready, Value{Failed: true, Err: pb.ErrorInfo_APPLICATION}
		}
	}
	for _, p := range fuzzPuts {
		o := w.put(p)
		b := next()
		value(o, b)
		o.corrupt, o.borrowed = b&0x10 != 0, b&0x20 != 0
	}
	for i, name := range fuzzTasks {
		o := w.object(name)
		b, c := next(), next()
		value(o, b)
		o.corrupt, o.borrowed = b&0x10 != 0, b&0x20 != 0
		var args []string
		for j, a := range append(fuzzTasks[:i:i], fuzzPuts...) {
			if c&(1<<j) != 0 {
				args = append(args, a)
			}
		}
		if c&0x80 != 0 && i > 0 {
			args = append(args, args...) // an argument taken twice
		}
		// Without a limit on its retries, or with one retry (a rerun, then no more).
		retries := int32(-1)
		if b&0x08 != 0 {
			retries = 1
		}
		switch (b >> 6) & 3 {
		case 0: // the owner holds the record
			w.tasks[name] = &wtask{name: name, args: args, maxRetries: retries}
		case 1: // and its first run is still going
			w.tasks[name] = &wtask{name: name, args: args, maxRetries: retries}
			w.held[name] = &heldRun{}
		case 2: // a dead owner's record in the GCS
			w.gcs[name] = &wrecord{args: args}
		case 3:
			w.gcs[name] = &wrecord{args: args, corrupt: c&0x40 != 0, badArg: c&0x40 == 0}
		}
	}
	gets := 0
	for len(data) > 0 {
		kind, arg := next(), next()
		obj := append(fuzzTasks[:len(fuzzTasks):len(fuzzTasks)], fuzzPuts...)[int(arg)%(len(fuzzTasks)+len(fuzzPuts))]
		task := fuzzTasks[int(arg)%len(fuzzTasks)]
		node := fuzzNodes[int(arg>>4)%len(fuzzNodes)]
		w.out, w.steps = nil, 0 // the step budget is per command: a long input is not a plan that does not end
		var cmd string
		switch kind % 10 {
		case 0:
			cmd = "Lost " + obj
			w.reconstruct(w.objs[obj].id)
		case 1:
			cmd = "Deliver"
			w.deliver()
		case 2:
			cmd = "Freed " + task
			_ = w.freed(task)
		case 3:
			cmd = "Finish " + task
			o := &wobject{}
			value(o, arg>>3|2) // a ready value
			_ = w.finish(task, o.val)
		case 4:
			cmd = "Cancel " + task
			_ = w.cancel(task)
		case 5:
			gets++
			cmd = fmt.Sprintf("Get g%d obj=%s", gets, obj)
			_ = w.startGet(fmt.Sprintf("g%d", gets), obj)
		case 6:
			cmd = "Failed " + task
			_ = w.argsFailed(task)
		case 7:
			if node != w.self {
				cmd = "NodeDied " + node
				w.dead[node] = true
			}
		case 8:
			cmd = "OwnerDied " + node
			w.ownerDied(node, arg&1 == 1)
		case 9:
			cmd = "Corrupt " + obj
			w.objs[obj].corrupt = true
		}
		if w.err != nil {
			return fmt.Errorf("after %s: %v", cmd, w.err)
		}
	}
	// Whatever is left: the mailbox drains, and the parked Gets wait for pending objects.
	w.deliver()
	for _, g := range w.gets {
		if g.parked && w.objs[g.obj].state != Pending {
			return fmt.Errorf("%s parked on %s, which is %v", g.name, g.obj, w.objs[g.obj].state)
		}
	}
	return w.err
}

// FuzzMachines feeds each state machine arbitrary event sequences, consistent or not:
// none may panic, and each keeps its own promises whatever it is told.
//
//	go test ./lineage -run '^$' -fuzz FuzzMachines -fuzztime 30s
func FuzzMachines(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
	f.Add([]byte{3, 0x41, 0x12, 0x33, 0x04, 0x25, 0x16, 0x07, 0x38, 0x29, 0x1a, 0x0b, 0xfc})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		var err error
		switch data[0] % 4 {
		case 0:
			err = fuzzRerun(data[1:])
		case 1:
			err = fuzzGet(data[1:])
		case 2:
			err = fuzzAdoption(data[1:])
		case 3:
			err = fuzzPlans(data[1:])
		}
		if err != nil {
			t.Fatal(err)
		}
	})
}

// fuzzObject decodes an object's facts from two bytes.
func fuzzObject(b, c byte) Object {
	tid := taskID(fuzzTasks[int(c)%len(fuzzTasks)])
	o := Object{ID: ids.ReturnID(tid, 1), State: State(b % 3), Record: b&4 != 0}
	if c&0x80 != 0 {
		o.ID = ids.PutID(tid, uint32(c&7)+1)
	}
	if o.State == Ready {
		switch (b >> 3) & 3 {
		case 0:
		case 1:
			o.Value = Value{InStore: true, Node: ids.NodeID(fuzzNodes[int(c>>4)%len(fuzzNodes)]), Gone: b&0x20 != 0}
		case 2:
			o.Value = Value{Failed: true, Err: pb.ErrorInfo_OBJECT_LOST}
		case 3:
			o.Value = Value{Failed: true, Err: pb.ErrorInfo_Kind(b >> 6)}
		}
	}
	return o
}

func fuzzRerun(data []byte) error {
	if len(data) < 2 {
		return nil
	}
	old := fuzzObject(data[0]|2, data[1]).Value // a ready value's
	r := NewRerunRequest(Rerun{Task: taskID("t0"), Old: old})
	claimed, started := false, false
	for _, b := range data[2:] {
		h := Held(b % 3)
		var acts []Action
		if b&0x80 != 0 {
			acts = r.OldFreed(h)
		} else {
			acts = r.Arrived(h)
		}
		for i, a := range acts {
			switch a := a.(type) {
			case Claim:
				if claimed || h != HeldNone || b&0x80 != 0 || i != 0 {
					return fmt.Errorf("%v (held %v, claimed %v) in %v", a, h, claimed, acts)
				}
				claimed = true
			case FreeOld:
				if !claimed || !old.InStore || a.Node != old.Node || a.Object != ids.ReturnID(r.Task, 1) {
					return fmt.Errorf("%v with old %v in %v", a, old, acts)
				}
			case Start:
				if started || !claimed || (h != HeldThis && !(h == HeldNone && b&0x80 == 0)) {
					return fmt.Errorf("%v (held %v, started %v) in %v", a, h, started, acts)
				}
				started = true
			default:
				return fmt.Errorf("a rerun request gave %v", a)
			}
		}
	}
	if r.Started() != started {
		return fmt.Errorf("Started() = %v after %v", r.Started(), started)
	}
	return nil
}

func fuzzGet(data []byte) error {
	g := Get{Object: ids.ReturnID(taskID("t0"), 1)}
	done := false
	for len(data) >= 3 {
		kind, b, c := data[0], data[1], data[2]
		data = data[3:]
		o := fuzzObject(b, c)
		o.ID = g.Object
		var act Action
		switch kind % 4 {
		case 0:
			act = g.Seen(o)
			if _, ok := act.(Reconstruct); ok && !(o.State == Ready && o.Value.InStore && o.Value.Gone) {
				return fmt.Errorf("Seen(%v) gave %v", o, act)
			}
		case 1:
			act = g.ReadFailed(Failure(b % 3))
		case 2:
			act = g.Refused()
		case 3:
			act = g.AdoptionsDone(o)
		}
		switch a := act.(type) {
		case Read, AwaitAdoption, Wait:
		case Reconstruct:
			if a.Object != g.Object {
				return fmt.Errorf("a Get reconstructs %v", a.Object)
			}
		case GiveUp:
			done = true
		default:
			return fmt.Errorf("a Get gave %v", act)
		}
		if _, ok := act.(GiveUp); done && !ok {
			return fmt.Errorf("a Get that gave up went on with %v", act)
		}
		if g.Done() != done {
			return fmt.Errorf("Done() = %v after %v", g.Done(), act)
		}
		if g.Recoveries > MaxReconstructions {
			return fmt.Errorf("%d recoveries", g.Recoveries)
		}
	}
	return nil
}

func fuzzAdoption(data []byte) error {
	a := NewAdoption("n2")
	w := newWorld()
	for _, n := range fuzzTasks {
		w.object(n)
		w.gcs[n] = &wrecord{args: fuzzTasks[:len(n)%2]}
	}
	w.gcs["t3"].corrupt = true
	read, calls := false, 0
	for len(data) >= 3 {
		kind, b, c := data[0], data[1], data[2]
		data = data[3:]
		o := fuzzObject(b, c)
		var acts []Action
		switch kind % 4 {
		case 0:
			calls++
			acts = a.Adopt(o)
			// A Put whose value is not known and live fails: nothing makes it again.
			if !isReturn(o.ID) && (o.State != Ready || a.needsRecovery(o.Value)) {
				if len(acts) == 0 {
					return fmt.Errorf("adopting %v: nothing", o)
				}
				if _, ok := acts[len(acts)-1].(FailObject); !ok {
					return fmt.Errorf("adopting %v: %v, want it failed", o, acts)
				}
			}
		case 1:
			if kind&0x80 != 0 {
				a.LineageRead(nil, fmt.Errorf("unreadable"))
			} else {
				a.LineageRead(w.records(), nil)
			}
			read = true
		case 2:
			calls++
			acts = a.Reconstructed(o.ID, b&1 == 1)
		case 3:
			var args []Object
			for _, x := range data {
				args = append(args, fuzzObject(x, c))
			}
			acts = a.Recreate(Recreate{Object: o.ID, Spec: &pb.TaskSpec{}, Args: []ids.ObjectID{o.ID}}, args)
		}
		for _, act := range acts {
			switch x := act.(type) {
			case ReadLineage:
				if read {
					return fmt.Errorf("ReadLineage after the lineage was read")
				}
			case Recreate:
				if !isReturn(x.Object) || !read {
					return fmt.Errorf("%v (lineage read: %v)", x, read)
				}
			case FailObject:
				if x.Task != x.Object.Task() {
					return fmt.Errorf("%v", x)
				}
			case CreateFuture, AdoptTask, Reconstruct, Adopt:
			default:
				return fmt.Errorf("an adoption gave %v", x)
			}
		}
		if a.Recreated+a.Lost > calls {
			return fmt.Errorf("%d recreated and %d lost of %d", a.Recreated, a.Lost, calls)
		}
	}
	return nil
}

// fuzzPlans checks the stateless planners: Lost, Restart, ArgsLost and ArgsRecreating.
func fuzzPlans(data []byte) error {
	var args []Object
	for len(data) >= 2 {
		args = append(args, fuzzObject(data[0], data[1]))
		data = data[2:]
	}
	for _, o := range args {
		acts, err := Lost(o)
		if err != nil {
			if len(acts) != 0 || isReturn(o.ID) && o.Record {
				return fmt.Errorf("Lost(%v): %v with %v", o, err, acts)
			}
			continue
		}
		if !isReturn(o.ID) || !o.Record || len(acts) == 0 {
			return fmt.Errorf("Lost(%v) = %v", o, acts)
		}
		if r, ok := acts[len(acts)-1].(Rerun); !ok || r.Task != o.ID.Task() || (o.State != Ready && r.Old != Value{}) {
			return fmt.Errorf("Lost(%v) = %v", o, acts)
		}
	}
	if acts := Restart(Task{ID: taskID("t9"), Attempt: 3, MaxRetries: 3}, args); len(acts) != 1 {
		return fmt.Errorf("Restart with no retries left gives %v", acts)
	} else if a, ok := acts[0].(NoRetries); !ok || a.Attempt != 3 || a.MaxRetries != 3 || a.Object != ids.ReturnID(taskID("t9"), 1) {
		return fmt.Errorf("Restart with no retries left gives %v", acts[0])
	}
	t := Task{ID: taskID("t9"), Attempt: 2, MaxRetries: 3}
	seen := map[ids.ObjectID]bool{}
	acts := Restart(t, args)
	if a, ok := acts[0].(NewAttempt); !ok || a.Attempt != 3 || a.MaxRetries != 3 {
		return fmt.Errorf("Restart begins with %v", acts[0])
	}
	if a, ok := acts[len(acts)-1].(AwaitArgs); !ok || len(a.Args) != len(args) {
		return fmt.Errorf("Restart ends with %v", acts[len(acts)-1])
	}
	for _, a := range acts {
		if r, ok := a.(Reconstruct); ok {
			if seen[r.Object] {
				return fmt.Errorf("Restart recreates %v twice", r.Object)
			}
			seen[r.Object] = true
		}
	}
	var recreating []ids.ObjectID
	for _, a := range ArgsLost(args) {
		r, ok := a.(Reconstruct)
		if !ok {
			return fmt.Errorf("ArgsLost gave %v", a)
		}
		recreating = append(recreating, r.Object)
	}
	switch a := ArgsRecreating(t.ID, recreating).(type) {
	case Place:
		if len(recreating) != 0 {
			return fmt.Errorf("Place with %d arguments being recreated", len(recreating))
		}
	case AwaitArgs:
		if len(a.Args) != len(recreating) || len(a.Args) == 0 {
			return fmt.Errorf("%v for %d arguments being recreated", a, len(recreating))
		}
	}
	return nil
}
