package lineage

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// world is a simulated owner for the scenario scripts and the fuzz test: the tables the
// planner's facts come from (futures, lineage records, the cluster view), a shard (the
// runs it holds, its mailbox of rerun requests, the old copies being freed, the tasks
// waiting for arguments), the Gets in progress and the lineage a dead owner left in the
// GCS. It carries out the planner's actions as internal/assembly/core does, and checks
// the planner's promises (check) as it goes. Objects and tasks have names in the scripts;
// a task's return object has the task's name, and the output shows names for IDs.
type world struct {
	self string // the owner's node

	objs  map[string]*wobject
	tasks map[string]*wtask // the owner's lineage records, by task name
	dead  map[string]bool   // nodes gone
	gcs   map[string]*wrecord

	held     map[string]*heldRun        // task -> the shard's pending run
	mailbox  []*RerunRequest            // rerun requests not yet delivered
	freeing  map[string][]*RerunRequest // task -> requests whose old copy is being freed
	awaiting map[string]map[string]bool // task -> arguments it waits for
	gets     map[string]*wget           // Gets in progress, by name
	taskOf   map[ids.TaskID]string      // task ID -> name
	objOf    map[ids.ObjectID]string    // object ID -> name
	puts     uint32                     // Put counter of the driver task
	replacer *strings.Replacer          // IDs -> names, rebuilt when names are added
	adopting map[*Adoption]int          // ReadLineage actions per adoption (at most one)
	adopts   map[*Adoption]int          // Adopt calls per adoption
	started  map[*RerunRequest]bool     // requests that started their task

	out   []string
	depth int
	err   error // the first broken promise
	steps int   // guard against plans that never end
}

type wobject struct {
	name     string
	id       ids.ObjectID
	state    State
	val      Value // Gone is computed from the dead nodes
	corrupt  bool  // its bytes fail to read (a corrupt spill file)
	borrowed bool  // owned by another runtime (until its owner dies and it is adopted)
}

type wtask struct {
	name       string
	args       []string
	attempt    int32
	maxRetries int32
}

// wrecord is a lineage record a dead owner left in the GCS.
type wrecord struct {
	args    []string
	corrupt bool // does not decode
	badArg  bool // names an argument that is not an object ID
}

// heldRun is what the shard holds for a task: a rerun request's run, or (req nil) the
// task's first run.
type heldRun struct{ req *RerunRequest }

type wget struct {
	name   string
	obj    string
	g      Get
	parked bool // waits for its object's value
	err    Failure
}

func newWorld() *world {
	return &world{
		self: "n1", objs: map[string]*wobject{}, tasks: map[string]*wtask{}, dead: map[string]bool{},
		gcs: map[string]*wrecord{}, held: map[string]*heldRun{}, freeing: map[string][]*RerunRequest{},
		awaiting: map[string]map[string]bool{}, gets: map[string]*wget{}, taskOf: map[ids.TaskID]string{},
		objOf: map[ids.ObjectID]string{}, adopting: map[*Adoption]int{}, adopts: map[*Adoption]int{}, started: map[*RerunRequest]bool{},
	}
}

// taskID derives a readable task ID from a name.
func taskID(name string) ids.TaskID {
	var t ids.TaskID
	copy(t[:], name)
	return t
}

// object returns the object called name, registering it (as a task's return) if new.
func (w *world) object(name string) *wobject {
	if o := w.objs[name]; o != nil {
		return o
	}
	tid := taskID(name)
	o := &wobject{name: name, id: ids.ReturnID(tid, 1)}
	w.objs[name] = o
	w.taskOf[tid] = name
	w.objOf[o.id] = name
	w.replacer = nil
	return o
}

// put registers a Put object called name (made by the driver's task).
func (w *world) put(name string) *wobject {
	if o := w.objs[name]; o != nil {
		return o
	}
	w.puts++
	driver := taskID("driver")
	o := &wobject{name: name, id: ids.PutID(driver, w.puts)}
	w.objs[name] = o
	w.taskOf[driver] = "driver"
	w.objOf[o.id] = name
	w.replacer = nil
	return o
}

func (w *world) taskName(t ids.TaskID) string {
	if n, ok := w.taskOf[t]; ok {
		return n
	}
	return t.String()
}

func (w *world) objName(id ids.ObjectID) string {
	if n, ok := w.objOf[id]; ok {
		return n
	}
	return id.String()
}

// names replaces the IDs in s by names: object IDs first (a task ID is their prefix).
func (w *world) names(s string) string {
	if w.replacer == nil {
		var pairs []string
		for id, n := range w.objOf {
			pairs = append(pairs, id.String(), n)
		}
		for t, n := range w.taskOf {
			pairs = append(pairs, t.String(), n)
		}
		w.replacer = strings.NewReplacer(pairs...)
	}
	return w.replacer.Replace(s)
}

func (w *world) printf(format string, args ...any) {
	line := w.names(fmt.Sprintf(format, args...))
	// protobuf-go puts a non-breaking space in some of its errors at random, so that
	// nobody depends on their text; the scripts show a plain one.
	line = strings.ReplaceAll(strings.ReplaceAll(line, "\u00a0", " "), `\u00a0`, " ")
	w.out = append(w.out, strings.Repeat("  ", w.depth)+line)
}

// act prints an action at the current depth.
func (w *world) act(a Action) { w.printf("> %v", a) }

// nested runs f, which carries out a plan the I/O layer asked for while carrying out an
// action: its output is indented under the action.
func (w *world) nested(f func()) {
	w.depth++
	defer func() { w.depth-- }()
	f()
}

// broke records a broken promise (the first one wins).
func (w *world) broke(format string, args ...any) {
	if w.err == nil {
		w.err = errors.New(w.names(fmt.Sprintf(format, args...)))
	}
}

// step counts a unit of work; a plan that does not end within the budget is a bug.
func (w *world) step() bool {
	w.steps++
	if w.steps > 10000 {
		w.broke("the plan does not end")
		return false
	}
	return true
}

// facts is what the owner's tables say about an object.
func (w *world) facts(name string) Object {
	o := w.objs[name]
	f := Object{ID: o.id, State: o.state}
	if o.state == Ready {
		f.Value = o.val
		f.Value.Gone = o.val.InStore && w.dead[string(o.val.Node)]
	}
	_, f.Record = w.tasks[w.taskName(o.id.Task())]
	return f
}

func (w *world) factsOf(id ids.ObjectID) Object { return w.facts(w.objName(id)) }

// setReady gives an object a value and wakes what waits for it.
func (w *world) setReady(name string, v Value) {
	o := w.objs[name]
	o.state, o.val, o.corrupt = Ready, v, false
	w.wake()
}

// wake dispatches the tasks whose arguments are all ready and resumes the Gets whose
// objects are, in name order.
func (w *world) wake() {
	for _, t := range sortedKeys(w.awaiting) {
		ready := true
		for a := range w.awaiting[t] {
			if o := w.objs[a]; o.state == Pending {
				ready = false
			}
		}
		if ready {
			delete(w.awaiting, t)
			w.printf("dispatch %s", t)
		}
	}
	for _, n := range sortedKeys(w.gets) {
		if g := w.gets[n]; g.parked && w.objs[g.obj].state != Pending {
			g.parked = false
			w.runGet(g, g.g.Seen(w.facts(g.obj)))
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// reconstruct is core's reconstruct: Lost from the facts now, carried out.
func (w *world) reconstruct(id ids.ObjectID) bool {
	name := w.objName(id)
	f := w.facts(name)
	acts, err := Lost(f)
	if err != nil {
		if !errors.Is(err, ErrNotReconstructible) {
			w.broke("Lost(%v) failed with %v, not ErrNotReconstructible", f, err)
		}
		if isReturn(id) && f.Record {
			w.broke("Lost refused %v, a task's return with a record: %v", f, err)
		}
		w.printf("refused: %v", err)
		return false
	}
	if !isReturn(id) || !f.Record {
		w.broke("Lost accepted %v: a Put, or no record", f)
	}
	for _, a := range acts {
		w.act(a)
		switch a := a.(type) {
		case CreateFuture:
			if f.State != Unknown {
				w.broke("CreateFuture for %v", f)
			}
			w.objs[name].state = Pending
		case ResetFuture:
			if f.State != Ready {
				w.broke("ResetFuture for %v", f)
			}
			w.objs[name].state = Pending
		case Rerun:
			if a.Task != id.Task() {
				w.broke("Lost(%v) reruns %v", f, a.Task)
			}
			w.mailbox = append(w.mailbox, NewRerunRequest(a))
		default:
			w.broke("Lost gave %v", a)
		}
	}
	return true
}

// holds is what the shard holds for r's task.
func (w *world) holds(r *RerunRequest) Held {
	h := w.held[w.taskName(r.Task)]
	switch {
	case h == nil:
		return HeldNone
	case h.req == r:
		return HeldThis
	}
	return HeldOther
}

// deliver hands the shard the requests in its mailbox, including those its work sends.
func (w *world) deliver() {
	for len(w.mailbox) > 0 && w.step() {
		r := w.mailbox[0]
		w.mailbox = w.mailbox[1:]
		h := w.holds(r)
		w.printf("rerun %s arrives (held: %v)", w.taskName(r.Task), h)
		w.rerunActs(r, h, r.Arrived(h))
	}
}

// freed reports the old copy of task's first request being freed.
func (w *world) freed(task string) error {
	q := w.freeing[task]
	if len(q) == 0 {
		return fmt.Errorf("no old copy of %s is being freed", task)
	}
	r := q[0]
	w.freeing[task] = q[1:]
	h := w.holds(r)
	w.printf("old copy of %s freed (held: %v)", task, h)
	w.rerunActs(r, h, r.OldFreed(h))
	return nil
}

func (w *world) rerunActs(r *RerunRequest, h Held, acts []Action) {
	task := w.taskName(r.Task)
	for _, a := range acts {
		w.act(a)
		switch a := a.(type) {
		case Claim:
			if w.held[task] != nil {
				w.broke("Claim of %s, which the shard holds a run of: two runs of one task", task)
			}
			w.held[task] = &heldRun{req: r}
		case FreeOld:
			if !r.Old.InStore || a.Node != r.Old.Node {
				w.broke("%v for a request whose old value is %v", a, r.Old)
			}
			w.freeing[task] = append(w.freeing[task], r)
		case Start:
			if w.held[task] == nil || w.held[task].req != r {
				w.broke("Start of %s by a request that does not hold it", task)
			}
			if w.started[r] {
				w.broke("a request started %s twice", task)
			}
			w.started[r] = true
			w.nested(func() { w.restart(task, ArgsLostValue(r.Old)) })
		default:
			w.broke("a rerun request gave %v", a)
		}
	}
}

// restart is core's restart: Restart from the task's spec and its arguments' facts
// (argsLost: the value the run replaces is its last attempt's failure on a lost argument).
func (w *world) restart(task string, argsLost bool) {
	t := w.tasks[task]
	if t == nil {
		w.broke("Start of %s, which has no record", task)
		return
	}
	args := make([]Object, len(t.args))
	for i, a := range t.args {
		args[i] = w.facts(a)
	}
	for _, a := range Restart(Task{ID: taskID(task), Attempt: t.attempt, MaxRetries: t.maxRetries, ArgsLost: argsLost}, args) {
		w.act(a)
		switch a := a.(type) {
		case NewAttempt:
			// A run uses one of the task's retries, unless its function has not run yet.
			retries := t.maxRetries
			if argsLost && retries >= 0 {
				retries++
			}
			if a.Attempt != t.attempt+1 || a.MaxRetries != retries || retries >= 0 && t.attempt >= retries {
				w.broke("%v after attempt %d of %d", a, t.attempt, t.maxRetries)
			}
			t.attempt, t.maxRetries = a.Attempt, a.MaxRetries
		case NoRetries:
			if argsLost || t.maxRetries < 0 || t.attempt < t.maxRetries || a.Object != w.objs[task].id {
				w.broke("%v after attempt %d of %d", a, t.attempt, t.maxRetries)
			}
			// core completes the claimed run with an error that is not OBJECT_LOST (a
			// Get returns it, and does not take it for a loss to recreate again).
			delete(w.held, task)
			delete(w.awaiting, task)
			w.printf("%s failed: no retries left", task)
			w.setReady(task, Value{Failed: true, Err: pb.ErrorInfo_SYSTEM})
		case ResetFuture:
			if o := w.objs[task]; o.state == Ready {
				o.state = Pending
			}
		case HoldArgs:
		case Reconstruct:
			w.nested(func() { w.reconstruct(a.Object) })
		case AwaitArgs:
			w.await(task, a.Args)
		default:
			w.broke("Restart gave %v", a)
		}
	}
}

// await is the shard's awaitArgs: the task waits for its pending arguments.
func (w *world) await(task string, args []ids.ObjectID) {
	waiting := map[string]bool{}
	for _, a := range args {
		if n := w.objName(a); w.objs[n].state == Pending {
			waiting[n] = true
		}
	}
	if len(waiting) == 0 {
		w.printf("dispatch %s", task)
		return
	}
	w.awaiting[task] = waiting
	w.printf("%s waits for %s", task, strings.Join(sortedKeys(waiting), ","))
}

// argsFailed is core's recoverArgs and argsLost: an attempt of task failed on a lost
// argument.
func (w *world) argsFailed(task string) error {
	t := w.tasks[task]
	if t == nil || w.held[task] == nil {
		return fmt.Errorf("%s has no run", task)
	}
	args := make([]Object, len(t.args))
	for i, a := range t.args {
		args[i] = w.facts(a)
	}
	var lost []ids.ObjectID
	for _, a := range ArgsLost(args) {
		w.act(a)
		r, ok := a.(Reconstruct)
		if !ok {
			w.broke("ArgsLost gave %v", a)
			continue
		}
		if f := w.factsOf(r.Object); !(f.State == Ready && f.Value.Gone) {
			w.broke("ArgsLost recreates %v", f)
		}
		w.nested(func() {
			if w.reconstruct(r.Object) {
				lost = append(lost, r.Object)
			}
		})
	}
	a := ArgsRecreating(taskID(task), lost)
	w.act(a)
	if aw, ok := a.(AwaitArgs); ok {
		w.await(task, aw.Args)
	}
	return nil
}

// finish completes the run of task the shard holds, with value v.
func (w *world) finish(task string, v Value) error {
	if w.held[task] == nil {
		return fmt.Errorf("%s has no run", task)
	}
	delete(w.held, task)
	delete(w.awaiting, task)
	w.printf("%s ready %v", task, v)
	w.setReady(task, v)
	return nil
}

// cancel cancels the run of task the shard holds: its return fails.
func (w *world) cancel(task string) error {
	if w.held[task] == nil {
		return fmt.Errorf("%s has no run", task)
	}
	delete(w.held, task)
	delete(w.awaiting, task)
	w.printf("%s cancelled", task)
	w.setReady(task, Value{Failed: true, Err: pb.ErrorInfo_CANCELLED})
	return nil
}

// startGet starts a Get of obj called name.
func (w *world) startGet(name, obj string) error {
	if w.gets[name] != nil {
		return fmt.Errorf("get %s exists", name)
	}
	o := w.objs[obj]
	if o == nil || o.state == Unknown {
		return fmt.Errorf("%s is unknown here", obj)
	}
	g := &wget{name: name, obj: obj, g: Get{Object: o.id}}
	w.gets[name] = g
	if o.state == Pending {
		g.parked = true
		w.printf("%s waits for %s", name, obj)
		return nil
	}
	w.runGet(g, g.g.Seen(w.facts(obj)))
	return nil
}

// read is the outcome of reading an object's value.
func (w *world) read(name string) (Failure, bool) {
	o := w.objs[name]
	switch {
	case o.state != Ready:
		return FailOther, false // released meanwhile
	case o.val.Failed && o.val.Err == pb.ErrorInfo_OBJECT_LOST:
		return FailValueLost, false
	case o.val.Failed:
		return FailOther, false
	case o.val.InStore && (w.dead[string(o.val.Node)] || o.corrupt):
		return FailBytesLost, false
	}
	return 0, true
}

// runGet is core's getRecovering from act on, until the Get waits or ends.
func (w *world) runGet(g *wget, act Action) {
	for w.step() {
		w.printf("%s > %v", g.name, act)
		if g.g.Recoveries > MaxReconstructions {
			w.broke("%s recovered %d times", g.name, g.g.Recoveries)
		}
		switch a := act.(type) {
		case Read:
			f, ok := w.read(g.obj)
			if ok {
				w.printf("%s returns %v", g.name, w.objs[g.obj].val)
				delete(w.gets, g.name)
				return
			}
			g.err = f
			w.printf("%s read failed: %v", g.name, f)
			act = g.g.ReadFailed(f)
			continue
		case Reconstruct:
			if a.Object != g.g.Object {
				w.broke("%s reconstructs another object", g.name)
			}
			var ok bool
			w.nested(func() { ok = w.reconstruct(a.Object) })
			if !ok {
				act = g.g.Refused()
				continue
			}
		case AwaitAdoption:
			if o := w.objs[g.obj]; o.borrowed {
				// Its owner lives (or was not reported dead in time).
				w.printf("%s: no adoption of %s", g.name, g.obj)
				act = g.g.Refused()
				continue
			}
			act = g.g.AdoptionsDone(w.facts(g.obj))
			continue
		case Wait:
		case GiveUp:
			if !g.g.Done() {
				w.broke("%s gave up but is not done", g.name)
			}
			delete(w.gets, g.name)
			return
		default:
			w.broke("a Get gave %v", a)
			return
		}
		if w.objs[g.obj].state == Pending {
			g.parked = true
			w.printf("%s waits for %s", g.name, g.obj)
			return
		}
		act = g.g.Seen(w.facts(g.obj))
	}
}

// ownerDied is core's OwnerGone: the objects borrowed from the owner on node are
// adopted, in name order.
func (w *world) ownerDied(node string, unreadable bool) {
	var names []string
	for _, n := range sortedKeys(w.objs) {
		if o := w.objs[n]; o.borrowed {
			o.borrowed = false
			names = append(names, n)
		}
	}
	a := NewAdoption(ids.NodeID(node))
	for _, n := range names {
		w.adopt(a, n, unreadable)
	}
	w.printf("adopted %d: recreating %d, lost %d", len(names), a.Recreated, a.Lost)
	if a.Recreated+a.Lost > w.adopts[a] {
		w.broke("adoption counts %d recreated and %d lost of %d objects planned", a.Recreated, a.Lost, w.adopts[a])
	}
}

func (w *world) adopt(a *Adoption, name string, unreadable bool) {
	if !w.step() {
		return
	}
	w.adopts[a]++
	f := w.facts(name)
	w.printf("adopt %v", f)
	w.nested(func() { w.runAdoption(a, name, a.Adopt(f), unreadable) })
}

func (w *world) runAdoption(a *Adoption, name string, acts []Action, unreadable bool) {
	for _, act := range acts {
		w.act(act)
		switch x := act.(type) {
		case CreateFuture:
			if o := w.objs[w.objName(x.Object)]; o.state == Unknown {
				o.state = Pending
			} else {
				w.broke("%v of a known object", x)
			}
		case FailObject:
			if x.Task != x.Object.Task() || !strings.Contains(x.Message, x.Object.String()) {
				w.broke("%v: not about its object", x)
			}
			w.setReady(w.objName(x.Object), Value{Failed: true, Err: pb.ErrorInfo_OBJECT_LOST})
		case ReadLineage:
			if w.adopting[a]++; w.adopting[a] > 1 {
				w.broke("the lineage is read twice")
			}
			if unreadable {
				a.LineageRead(nil, errors.New("etcd unavailable"))
			} else {
				a.LineageRead(w.records(), nil)
			}
			w.nested(func() { w.adopt(a, name, unreadable) })
		case Recreate:
			if !isReturn(x.Object) {
				w.broke("%v of a Put", x)
			}
			args := make([]Object, len(x.Args))
			for i, id := range x.Args {
				args[i] = w.factsOf(id)
			}
			w.nested(func() { w.runAdoption(a, name, a.Recreate(x, args), unreadable) })
		case AdoptTask:
			t := &wtask{name: w.taskName(x.Task), attempt: x.Spec.Attempt, maxRetries: x.Spec.MaxRetries}
			for _, id := range x.Args {
				t.args = append(t.args, w.objName(id))
			}
			w.tasks[t.name] = t
		case Reconstruct:
			var ok bool
			w.nested(func() { ok = w.reconstruct(x.Object) })
			w.runAdoption(a, name, a.Reconstructed(x.Object, ok), unreadable)
		case Adopt:
			w.nested(func() { w.adopt(a, w.objName(x.Object), unreadable) })
		default:
			w.broke("an adoption gave %v", x)
		}
	}
}

// records encodes the dead owner's lineage as the GCS holds it.
func (w *world) records() map[string][]byte {
	recs := map[string][]byte{}
	for _, name := range sortedKeys(w.gcs) {
		r := w.gcs[name]
		tid := taskID(name)
		w.object(name)
		if r.corrupt {
			recs[string(tid[:])] = []byte{0x0a, 0xff} // a length past the end
			continue
		}
		spec := &pb.TaskSpec{TaskId: tid[:], Function: "f." + name, MaxRetries: -1}
		for _, a := range r.args {
			id := w.object(a).id
			spec.Args = append(spec.Args, &pb.Arg{IsRef: true, ObjectId: id[:]})
		}
		if r.badArg {
			spec.Args = append(spec.Args, &pb.Arg{IsRef: true, ObjectId: []byte{1, 2, 3}})
		}
		b, err := proto.Marshal(spec)
		if err != nil {
			panic(err)
		}
		recs[string(tid[:])] = b
	}
	return recs
}
