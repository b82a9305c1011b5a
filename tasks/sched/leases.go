package sched

import "time"

// Leases is an owner's side of Ray's worker leases with one scheduler (a node): the owner
// asks the scheduler for a lease (resources held on a worker) per scheduling class, then
// pushes that class's tasks straight to the worker, several at a time, for as long as it
// has them; the scheduler sees a request and a release per lease, not every task. This
// takes the node's scheduler out of the per-task path, so it does not serialize a node's
// cores (Ray's direct task submission).
//
// Leases is the policy only: events in (tasks ready, leases granted or denied, results,
// tasks handed back), actions out (Pump: pushes, requests, releases). It is a plain data
// structure owned by one goroutine, with no I/O and no clock of its own. T is a task, W
// whatever the owner needs to reach a lease's worker.
//
// The policy:
//   - Depth: a lease of a class whose tasks are known to be short (Observe) gets up to
//     LeaseWork/mean of them at once (at most MaxDepth), so the worker never waits for the
//     owner between them and results come back in batches; a class not yet measured, or of
//     long tasks, gets one at a time, so tasks spread as leases come.
//   - Requests: while a class has tasks no lease can take, one more lease is asked for, up
//     to MaxPending outstanding requests per class.
//   - Release: a lease with nothing in flight and nothing waiting is kept IdleHold for the
//     next task of its class (a submitter that waits for each result before the next pays
//     no lease round trip per task), then released; one granted after its class ran dry,
//     that never got a task, goes back at once. A lease older than MaxAge takes no
//     more tasks and is released once drained, and a new request is made if work remains:
//     the scheduler's queue, oldest request first, then gives other owners their turn.
//   - Room: a class whose open leases have more free slots than it has tasks waiting can
//     take one more now (Room); the owner then queues a task of the class at this node
//     without a placement, which would count the owner's own lease against the node.
//   - Blocked: a lease whose running task blocked (its queued tasks were handed back) takes
//     no more tasks and is released once drained.
//   - Revoked: the scheduler asks for a lease back when another owner's request (or this
//     owner's request of another class) waits for its resources; it takes no more tasks
//     and is released once drained (at once if idle), so a lease kept for more work never
//     holds up other owners or classes. A lease revoked before it took a task (the
//     scheduler revokes a lease as it grants it while others wait) takes one push first,
//     so that owners taking turns on a busy node each run some of their tasks per lease.
//   - Stalled (spillback, paper §4.2.2): a class whose tasks wait while a lease request of
//     it has gone unanswered for a while after the node said it queued one (Queued) is one
//     the node has no room for soon; the owner may take its waiting tasks (Take) and place
//     them on another node. A request the node has not said a word about stalls only
//     after much longer: a node that is slow to answer (its process starved of CPU) is not
//     one without room, and moving its tasks away made more work for every node. A lease
//     granted later for tasks that left is released at once, as any lease that finds its
//     class dry.
//   - Starved: a class whose tasks have waited a given time with a request unanswered,
//     whatever Stalled reported meanwhile (the owner then looks for resources it holds
//     without knowing: internal/assembly/core's collections).
type Leases[T, W any] struct {
	classes []*leaseClass[T, W]
	leases  map[string]*lease[T, W]
}

// Lease policy constants (see Leases).
const (
	// LeaseWork is how much measured work a lease is given at once.
	LeaseWork = time.Millisecond
	// MaxDepth bounds the tasks in flight on one lease.
	MaxDepth = 128
	// MaxPending bounds the outstanding lease requests of one class.
	MaxPending = 8
	// MaxAge is how long a lease takes new tasks: Ray's worker_lease_timeout_milliseconds
	// (500 ms). Other owners do not wait for it (the scheduler revokes a lease another
	// owner's request waits for, and another class's of the same owner); at 20 ms, a busy
	// class cost a request, a grant and two releases every 20 ms per lease, a count per
	// unit of time that grew per task as a node's task rate fell (benchmarks/scale -nodes).
	MaxAge = 500 * time.Millisecond
	// FastTask: a class whose mean run time is under it is given more than one task at a
	// time.
	FastTask = 500 * time.Microsecond
	// IdleHold is how long a lease with nothing to do is kept for more.
	IdleHold = time.Millisecond
)

type leaseClass[T, W any] struct {
	shape   Resources
	waiting []T // ready, no lease has taken them yet (oldest first)
	head    int
	pending int // lease requests outstanding
	leases  []*lease[T, W]
	mean    float64 // nanoseconds per task; 0: unknown
	dirty   bool
	idle    int       // leases kept idle
	asked   time.Time // since when a request has been outstanding with no grant (zero: none)
	queued  bool      // the node said it queued a request of the class (since pending was last 0)
	starved time.Time // as asked, but not started again by Stalled (Starved)
}

type lease[T, W any] struct {
	id       string
	worker   W
	class    *leaseClass[T, W]
	inflight int
	since    time.Time
	idle     time.Time // when it ran out of work (zero: busy)
	used     bool      // it was given tasks (only such a lease is kept idle)
	closed   bool      // takes no more tasks (blocked, or older than MaxAge)
	once     bool      // revoked before its first push: closed after it
	released bool
}

// Push is an action: send tasks to the worker of a lease.
type Push[T, W any] struct {
	Lease  string
	Worker W
	Tasks  []T
}

// LeaseAsk is an action: ask the scheduler for one lease of shape; Backlog is how many
// tasks of the class wait (for the scheduler's load report).
type LeaseAsk struct {
	Shape   Resources
	Backlog int
}

// Release is an action: give a lease back to the scheduler.
type Release struct{ Lease string }

// Actions is what Pump decided.
type Actions[T, W any] struct {
	Pushes   []Push[T, W]
	Requests []LeaseAsk
	Releases []Release
	tasks    []T // the Tasks of Pushes (PumpInto)
}

func (l *Leases[T, W]) class(shape Resources) *leaseClass[T, W] {
	if c := l.find(shape); c != nil {
		return c
	}
	if len(l.classes) >= idleClasses {
		l.dropEmpty()
	}
	c := &leaseClass[T, W]{shape: shape}
	l.classes = append(l.classes, c)
	return c
}

// dropEmpty forgets the classes with nothing in them (no task waiting, no lease, no
// request outstanding), as Queue does once it holds more than idleClasses: an owner whose
// tasks come in ever new shapes (a placement group's bundle resources name the group, so
// every group is a shape of its own) keeps no class, and scans none on each Add and Pump,
// per shape it ever used. A class dropped loses its measured mean: the next task of its
// shape starts unmeasured, one at a time per lease.
func (l *Leases[T, W]) dropEmpty() {
	kept := l.classes[:0]
	for _, c := range l.classes {
		if c.head < len(c.waiting) || c.pending > 0 || len(c.leases) > 0 {
			kept = append(kept, c)
		}
	}
	clear(l.classes[len(kept):])
	l.classes = kept
}

// find is class without creating it (nil: no class of shape).
func (l *Leases[T, W]) find(shape Resources) *leaseClass[T, W] {
	for _, c := range l.classes {
		if c.shape.Equal(shape) {
			return c
		}
	}
	return nil
}

// Add queues a ready task of shape.
func (l *Leases[T, W]) Add(t T, shape Resources) {
	c := l.class(shape)
	c.waiting = append(c.waiting, t)
	c.dirty = true
}

// Waiting returns how many tasks wait for a lease.
func (l *Leases[T, W]) Waiting() int {
	n := 0
	for _, c := range l.classes {
		n += len(c.waiting) - c.head
	}
	return n
}

// Granted records a lease the scheduler granted for a request of shape.
func (l *Leases[T, W]) Granted(shape Resources, id string, worker W, now time.Time) {
	c := l.class(shape)
	c.answered(now)
	if l.leases == nil {
		l.leases = map[string]*lease[T, W]{}
	}
	ls := &lease[T, W]{id: id, worker: worker, class: c, since: now}
	l.leases[id] = ls
	c.leases = append(c.leases, ls)
	c.dirty = true
}

// Denied records a request of shape the scheduler can never grant (the node does not have
// the resources): it returns the class's waiting tasks, which are the caller's to fail.
func (l *Leases[T, W]) Denied(shape Resources) []T {
	c := l.class(shape)
	c.answered(time.Time{})
	out := append([]T(nil), c.waiting[c.head:]...)
	clear(c.waiting)
	c.waiting, c.head = c.waiting[:0], 0
	return out
}

// Done records n tasks of lease id finished (their results came back); mean, when
// positive, is their mean run time in nanoseconds.
func (l *Leases[T, W]) Done(id string, n int, mean float64) {
	ls := l.leases[id]
	if ls == nil {
		return
	}
	ls.inflight = max(0, ls.inflight-n)
	if mean > 0 {
		if c := ls.class; c.mean == 0 {
			c.mean = mean
		} else {
			c.mean = 0.7*c.mean + 0.3*mean
		}
	}
	ls.class.dirty = true
}

// Returned records tasks of lease id handed back unstarted (its running task blocked): they
// wait again, ahead of the others, and the lease takes no more.
func (l *Leases[T, W]) Returned(id string, tasks []T) {
	ls := l.leases[id]
	if ls == nil {
		return
	}
	ls.inflight = max(0, ls.inflight-len(tasks))
	ls.closed = true
	c := ls.class
	rest := c.waiting[c.head:]
	c.waiting = append(append(make([]T, 0, len(tasks)+len(rest)), tasks...), rest...)
	c.head = 0
	c.dirty = true
}

// Lost forgets lease id (its worker is gone) and returns nothing: the tasks in flight on it
// are the caller's to fail or retry.
func (l *Leases[T, W]) Lost(id string) {
	ls := l.leases[id]
	if ls == nil {
		return
	}
	l.drop(ls)
	ls.class.dirty = true
}

// Remove takes a waiting task back (a cancellation); it reports whether it was waiting.
func (l *Leases[T, W]) Remove(match func(T) bool) bool {
	for _, c := range l.classes {
		for i := c.head; i < len(c.waiting); i++ {
			if match(c.waiting[i]) {
				c.waiting = append(c.waiting[:i], c.waiting[i+1:]...)
				return true
			}
		}
	}
	return false
}

// Drain takes every waiting task out (the node is gone) and forgets every lease and
// request; it returns the waiting tasks.
func (l *Leases[T, W]) Drain() []T {
	var out []T
	for _, c := range l.classes {
		out = append(out, c.waiting[c.head:]...)
	}
	l.classes = nil
	l.leases = nil
	return out
}

// Idle reports whether leases are kept idle: Pump releases them IdleHold after they ran
// out of work, so the owner pumps again then.
func (l *Leases[T, W]) Idle() bool {
	for _, c := range l.classes {
		if c.idle > 0 {
			return true
		}
	}
	return false
}

// Revoke closes lease id at its scheduler's request (another owner waits): it takes no
// more tasks and is released once its tasks are done, at the next Pump if it has none. A
// lease that has not taken a task yet takes one push of what waits first (none waiting:
// it is released at the next Pump).
func (l *Leases[T, W]) Revoke(id string) {
	ls := l.leases[id]
	if ls == nil {
		return
	}
	if ls.used {
		ls.closed = true
	} else {
		ls.once = true
	}
	ls.class.dirty = true
}

// answered counts the answer to one of c's requests: the node is making progress on them,
// so the stall clock starts again at now (or stops, with none left outstanding).
func (c *leaseClass[T, W]) answered(now time.Time) {
	if c.pending > 0 {
		c.pending--
	}
	if c.pending == 0 {
		c.asked, c.starved, c.queued = time.Time{}, time.Time{}, false
	} else {
		c.asked, c.starved = now, now
	}
}

// Queued records the node's word that a request of class shape waits in its queue (its
// resources are held by other leases): the request is still outstanding.
func (l *Leases[T, W]) Queued(shape Resources) {
	if c := l.find(shape); c != nil && c.pending > 0 {
		c.queued = true
	}
}

// Stalled returns the shapes of the classes whose tasks wait while a lease request of
// theirs has gone unanswered for at least after since the node said it queued one (or
// since the last answer, if later), or for at least silent with no word from the node at
// all: the node has no room for more of them soon (or does not answer), and the owner
// may place their waiting tasks elsewhere (Take). It starts those classes' stall clocks
// again, so that a class the owner could not move is reported once per interval, not at
// every call.
func (l *Leases[T, W]) Stalled(now time.Time, after, silent time.Duration) []Resources {
	var out []Resources
	for _, c := range l.classes {
		if c.pending == 0 || len(c.waiting) == c.head || c.asked.IsZero() {
			continue
		}
		if wait := now.Sub(c.asked); c.queued && wait >= after || wait >= silent {
			out = append(out, c.shape)
			c.asked = now
		}
	}
	return out
}

// Starved reports whether the tasks of a class have waited at least after while a lease
// request of theirs went unanswered (no grant or denial since it was made, or since the
// last answer), whatever Stalled reported meanwhile: the node has had no room for them
// for that long.
func (l *Leases[T, W]) Starved(now time.Time, after time.Duration) bool {
	for _, c := range l.classes {
		if c.pending > 0 && len(c.waiting) > c.head && !c.starved.IsZero() && now.Sub(c.starved) >= after {
			return true
		}
	}
	return false
}

// Take takes out the waiting tasks of class shape that move says go (oldest first; move is
// called once per waiting task, in order) and returns them: the owner places them on
// another node.
func (l *Leases[T, W]) Take(shape Resources, move func(T) bool) []T {
	var out []T
	for _, c := range l.classes {
		if !c.shape.Equal(shape) {
			continue
		}
		kept := c.waiting[:c.head]
		for _, t := range c.waiting[c.head:] {
			if move(t) {
				out = append(out, t)
			} else {
				kept = append(kept, t)
			}
		}
		clear(c.waiting[len(kept):])
		c.waiting = kept
		if c.head == len(c.waiting) {
			c.waiting, c.head = c.waiting[:0], 0
		}
		c.dirty = true
	}
	return out
}

// Room reports whether the leases of class shape can take one more task now beyond the
// class's tasks that wait: a lease that takes tasks (not closed, not older than MaxAge)
// has a free slot of the class's depth for it. The owner may then queue a task of the
// class at this node without choosing a node for it, as Ray's owner gives a leased
// worker the next task of the worker's scheduling class: its own lease counts against
// the node's load, and a placement would judge the node busier by it.
func (l *Leases[T, W]) Room(shape Resources, now time.Time) bool {
	c := l.find(shape)
	if c == nil {
		return false
	}
	d, free := c.depth(), 0
	for _, ls := range c.leases {
		if !ls.closed && now.Sub(ls.since) <= MaxAge && ls.inflight < d {
			free += d - ls.inflight
		}
	}
	return len(c.waiting)-c.head < free
}

// Leased reports whether lease id is held.
func (l *Leases[T, W]) Leased(id string) bool { return l.leases[id] != nil }

func (l *Leases[T, W]) drop(ls *lease[T, W]) {
	delete(l.leases, ls.id)
	c := ls.class
	if !ls.idle.IsZero() {
		c.idle--
	}
	for i, x := range c.leases {
		if x == ls {
			c.leases = append(c.leases[:i], c.leases[i+1:]...)
			break
		}
	}
}

// depth is how many tasks of c one lease may hold at once.
func (c *leaseClass[T, W]) depth() int {
	if c.mean <= 0 || c.mean >= float64(FastTask) {
		return 1
	}
	return min(MaxDepth, max(1, int(float64(LeaseWork)/c.mean)))
}

// Pump decides what to do now: push waiting tasks to leases with room, request leases for
// what remains, release leases that are done. Only classes that changed since the last
// Pump are looked at.
func (l *Leases[T, W]) Pump(now time.Time) Actions[T, W] {
	var a Actions[T, W]
	l.PumpInto(now, &a)
	return a
}

// PumpInto is Pump that writes the actions into a, reusing its slices (emptied first): a
// caller that pumps on every turn keeps one Actions and allocates nothing per push. The
// Tasks of a's pushes share one array, overwritten by the next PumpInto into a, and a's
// slices are too: the caller copies what it keeps.
func (l *Leases[T, W]) PumpInto(now time.Time, a *Actions[T, W]) {
	clear(a.Pushes) // let go of the last pump's tasks and workers
	clear(a.tasks)
	a.Pushes, a.Requests, a.Releases, a.tasks = a.Pushes[:0], a.Requests[:0], a.Releases[:0], a.tasks[:0]
	for _, c := range l.classes {
		if !c.dirty && c.idle == 0 {
			continue
		}
		c.dirty = false
		d := c.depth()
		waiting := len(c.waiting) - c.head
		open := 0
		for _, ls := range c.leases {
			if !ls.closed && now.Sub(ls.since) > MaxAge {
				ls.closed = true
			}
			if !ls.closed && ls.inflight < d {
				open++
			}
		}
		// Spread what waits over the leases with room rather than filling the first.
		share := waiting
		if open > 1 {
			share = (waiting + open - 1) / open
		}
		for _, ls := range c.leases {
			if ls.closed || waiting == 0 || ls.inflight >= d {
				continue
			}
			n := min(d-ls.inflight, waiting, share)
			ls.used = true
			if !ls.idle.IsZero() {
				ls.idle = time.Time{}
				c.idle--
			}
			from := len(a.tasks)
			a.tasks = append(a.tasks, c.waiting[c.head:c.head+n]...)
			tasks := a.tasks[from:len(a.tasks):len(a.tasks)]
			clear(c.waiting[c.head : c.head+n])
			c.head += n
			waiting -= n
			ls.inflight += n
			ls.closed = ls.once
			a.Pushes = append(a.Pushes, Push[T, W]{Lease: ls.id, Worker: ls.worker, Tasks: tasks})
		}
		if c.head == len(c.waiting) {
			c.waiting, c.head = c.waiting[:0], 0
		}
		// Requests: enough leases for what waits, at depth d each.
		want := 0
		if waiting > 0 {
			want = min(MaxPending, (waiting+d-1)/d)
		}
		for c.pending < want {
			if c.pending == 0 {
				c.asked, c.starved = now, now
			}
			c.pending++
			a.Requests = append(a.Requests, LeaseAsk{Shape: c.shape, Backlog: waiting})
		}
		// Releases: leases that are done with, and idle ones kept long enough.
		for i := 0; i < len(c.leases); {
			ls := c.leases[i]
			done := ls.inflight == 0 && (ls.closed || waiting == 0)
			if done && ls.closed && !ls.idle.IsZero() {
				ls.idle = time.Time{} // revoked while kept idle
				c.idle--
			}
			if done && !ls.closed && ls.used {
				if ls.idle.IsZero() {
					ls.idle = now
					c.idle++
				}
				done = now.Sub(ls.idle) >= IdleHold
			}
			if done {
				if !ls.idle.IsZero() {
					c.idle--
				}
				ls.released = true
				delete(l.leases, ls.id)
				c.leases = append(c.leases[:i], c.leases[i+1:]...)
				a.Releases = append(a.Releases, Release{Lease: ls.id})
				continue
			}
			i++
		}
	}
}
