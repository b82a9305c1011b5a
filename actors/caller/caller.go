package caller

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ray-go/ray/internal/base/seqring"
)

// ErrDied is the reason Die records when it is given none.
var ErrDied = errors.New("caller: the actor died")

// Kind says what an outbox entry asks of the actor.
type Kind uint8

const (
	// Call: run the call; its first send.
	Call Kind = iota + 1
	// Resend: the call again, after a restart, a bounce or a long silence. The actor
	// dedups by sequence number: a call it has seen is answered or left to finish, never
	// run twice.
	Resend
	// Skip: go past Seq. The call failed before it was sent (or, after a bounce, finished
	// meanwhile), and the calls after it must not wait for it.
	Skip
	// Checkpoint: not a call; take a checkpoint after the calls before it. Seq is 0.
	Checkpoint
	// Cancel: not a call; take call Seq back if it has not started (an at-most-once
	// actor answers it CANCELLED then, and never runs it). It goes before the call
	// whenever the call goes (again) with it: an instance that gets the cancel first
	// never starts the call.
	Cancel
)

func (k Kind) String() string {
	switch k {
	case Call:
		return "call"
	case Resend:
		return "resend"
	case Skip:
		return "skip"
	case Checkpoint:
		return "checkpoint"
	case Cancel:
		return "cancel"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Out is one entry of the outbox, in the order it is to reach the actor.
type Out[T any] struct {
	Kind Kind
	Seq  uint64 // 0 for Checkpoint
	Call T      // Call, Resend and Cancel: the call; zero otherwise
}

func (o Out[T]) String() string {
	switch o.Kind {
	case Call, Resend, Cancel:
		return fmt.Sprintf("%v %d:%v", o.Kind, o.Seq, o.Call)
	case Checkpoint:
		return o.Kind.String()
	}
	return fmt.Sprintf("%v %d", o.Kind, o.Seq)
}

// Config is what a Caller starts from.
type Config struct {
	// AtMostOnce and MaxTaskRetries are the actor's options until a Record says
	// otherwise: the runtime that created the actor knows them before its record exists.
	// MaxTaskRetries -1 resends an at-most-once actor's calls without limit.
	AtMostOnce     bool
	MaxTaskRetries int
	// ResendAfter is how long a sent call may go unanswered before ResendStale sends it
	// again; 0 or less: never.
	ResendAfter time.Duration
	// MaxResend bounds the calls one ResendStale queues again; 0 or less: no bound.
	MaxResend int
}

// Record is what the actor's record says that concerns its callers (actors.Table; the
// runtime converts it). A dead actor is reported with Die instead.
type Record struct {
	Incarnation uint64
	// Placed: the record names a node, so the incarnation's instance may be reachable.
	Placed         bool
	AtMostOnce     bool
	MaxTaskRetries int
}

// Update is what Changed decided.
type Update[T any] struct {
	// NewIncarnation: the record is of a newer incarnation. Forget the instance
	// resolved so far: the outbox goes to the new one once it can be reached.
	NewIncarnation bool
	// Flush: the outbox has entries to send now.
	Flush bool
	// Lost: calls of an at-most-once actor that were in flight when it restarted and
	// have no retry left. They stay unfinished until the runtime fails them (then
	// Finish, which has the new instance skip them: they count as not sent to it).
	Lost []T
}

// call is the bookkeeping of one unfinished call.
type call[T any] struct {
	v       T
	sent    bool      // given to the outbox with Send
	sentAt  time.Time // its last (re)send
	retries int       // resends after restarts of an at-most-once actor
	cancel  bool      // Cancel: a Cancel goes before it whenever it goes
}

// Caller is one caller's bookkeeping for one actor. It is not safe for concurrent use:
// its runtime guards it (a mutex) and does the I/O its answers call for. The zero value
// is not ready; use New.
type Caller[T any] struct {
	cfg     Config
	atMost  bool
	retries int // MaxTaskRetries

	seq   uint64               // the last seq given out
	low   uint64               // every seq below low is finished; low is unfinished, or seq+1
	inc   uint64               // the newest incarnation known; 0: none yet
	calls seqring.Map[call[T]] // by seq; every seq held is in [low, seq]
	out   []Out[T]
	dead  error

	scratch []uint64 // ResendStale's
}

// New returns a Caller that has given out no sequence number.
func New[T any](cfg Config) *Caller[T] {
	return &Caller[T]{cfg: cfg, atMost: cfg.AtMostOnce, retries: cfg.MaxTaskRetries, low: 1}
}

// Add gives call the next sequence number and keeps it until Finish. A dead actor takes
// no calls: Add returns the reason it died instead.
func (c *Caller[T]) Add(v T) (uint64, error) {
	if c.dead != nil {
		return 0, c.dead
	}
	c.seq++
	c.calls.Put(c.seq, c.low, call[T]{v: v})
	return c.seq, nil
}

// Send queues call seq for its first send (its arguments are ready), after everything
// queued so far, and reports whether it did. A call that is finished, or whose actor
// died, is not queued: it is being failed.
func (c *Caller[T]) Send(seq uint64, now time.Time) bool {
	e := c.calls.Ref(seq)
	if e == nil || e.sent || c.dead != nil {
		return false
	}
	e.sent, e.sentAt = true, now
	if e.cancel {
		c.out = append(c.out, Out[T]{Kind: Cancel, Seq: seq, Call: e.v})
	}
	c.out = append(c.out, Out[T]{Kind: Call, Seq: seq, Call: e.v})
	return true
}

// Cancel records that unfinished call seq is cancelled, and reports whether the outbox
// gained an entry to send. From now on a Cancel goes before the call whenever the call
// goes (Send, and the resends after a restart, a bounce or a long silence), so an
// instance that has the call from this caller has the cancel before it; a call already
// sent gets a Cancel now, before its entry if that is still in the outbox, else after
// everything queued (it is on its way, or at the instance: one that has not started it
// takes it back). A call finished, cancelled before, or whose actor died, is left as it
// is.
func (c *Caller[T]) Cancel(seq uint64) bool {
	e := c.calls.Ref(seq)
	if e == nil || e.cancel || c.dead != nil {
		return false
	}
	e.cancel = true
	o := Out[T]{Kind: Cancel, Seq: seq, Call: e.v}
	for i, q := range c.out {
		if q.Seq == seq && (q.Kind == Call || q.Kind == Resend) {
			c.out = slices.Insert(c.out, i, o)
			return true
		}
	}
	if !e.sent {
		return false
	}
	c.out = append(c.out, o)
	return true
}

// Cancelled reports whether unfinished call seq was cancelled (Cancel).
func (c *Caller[T]) Cancelled(seq uint64) bool {
	e, _ := c.calls.Get(seq)
	return e.cancel
}

// Finish forgets call seq: it has its result, or failed. It reports whether the outbox
// gained an entry to send: a call that was never sent (or was Lost: not sent to the
// current incarnation) gets a Skip, so the actor does not hold up the calls after it
// (unless the actor is dead: nothing is sent any more).
func (c *Caller[T]) Finish(seq uint64) bool {
	e := c.calls.Ref(seq)
	if e == nil {
		return false
	}
	sent := e.sent
	c.calls.Delete(seq)
	for c.low <= c.seq && c.calls.Ref(c.low) == nil {
		c.low++
	}
	if sent || c.dead != nil {
		return false
	}
	c.out = append(c.out, Out[T]{Kind: Skip, Seq: seq})
	return true
}

// Checkpoint queues a checkpoint marker after everything queued so far, so the actor
// checkpoints after the calls made before it. A dead actor takes none: it returns the
// reason it died.
func (c *Caller[T]) Checkpoint() error {
	if c.dead != nil {
		return c.dead
	}
	c.out = append(c.out, Out[T]{Kind: Checkpoint})
	return nil
}

// Queued is the number of entries in the outbox.
func (c *Caller[T]) Queued() int { return len(c.out) }

// Take appends the outbox to dst, in order, and empties it. The entries carry no
// acknowledgement: every message of one flush is stamped with Acked() and First() as
// they are when Take runs, and with Incarnation().
func (c *Caller[T]) Take(dst []Out[T]) []Out[T] {
	dst = append(dst, c.out...)
	if cap(c.out) > maxKeep {
		c.out = nil // a burst: do not hold its memory for good
	} else {
		clear(c.out)
		c.out = c.out[:0]
	}
	return dst
}

// maxKeep is the largest outbox Take keeps for reuse.
const maxKeep = 256

// ResendStale queues again the sent calls unanswered for ResendAfter at now: the oldest
// (lowest seq) first, at most MaxResend of them, before anything already queued (a
// call's predecessors go out first). It returns how many; the runtime should then
// resolve the actor's instance again (the placement may have moved) and flush. A resent
// call counts as sent at now. Nothing is resent for a dead actor.
func (c *Caller[T]) ResendStale(now time.Time) int {
	if c.dead != nil || c.cfg.ResendAfter <= 0 {
		return 0
	}
	stale := c.scratch[:0]
	for seq, e := range c.calls.All() {
		if e.sent && now.Sub(e.sentAt) > c.cfg.ResendAfter {
			stale = append(stale, seq)
		}
	}
	// A bounded number a round: a long backlog of slow calls is not sent again
	// wholesale every few seconds.
	slices.Sort(stale)
	if c.cfg.MaxResend > 0 {
		stale = stale[:min(len(stale), c.cfg.MaxResend)]
	}
	for _, seq := range stale {
		c.calls.Ref(seq).sentAt = now
	}
	c.prepend(stale, c.resend)
	c.scratch = stale[:0]
	return len(stale)
}

// Changed takes the news of the actor's record. The first news sets the incarnation
// (nothing was sent to an earlier one). News of the current or an older incarnation
// only asks for a flush, once the instance is placed. A newer incarnation gets every
// sent call not finished, in seq order, before anything queued: an exactly-once actor
// answers a call it logged from its log and runs one it never saw, so all are resent;
// an at-most-once actor resends a call only while it has retries left (MaxTaskRetries,
// per call), and the others are Lost; its new instance starts from Low() (First), so
// the calls finished above it go as Skips among the resends. A cancelled call resent
// goes after a Cancel. Calls not sent yet go out as usual when their arguments are
// ready. A dead caller ignores news.
func (c *Caller[T]) Changed(r Record) Update[T] {
	var u Update[T]
	if c.dead != nil {
		return u
	}
	c.atMost, c.retries = r.AtMostOnce, r.MaxTaskRetries
	if c.inc == 0 {
		c.inc = r.Incarnation
	}
	if r.Incarnation <= c.inc {
		u.Flush = r.Placed && len(c.out) > 0
		return u
	}
	c.inc = r.Incarnation
	u.NewIncarnation = true
	resend := c.scratch[:0]
	var lost []uint64
	for seq, e := range c.calls.All() {
		switch {
		case !e.sent:
		case !c.atMost:
			resend = append(resend, seq)
		case c.retries < 0 || e.retries < c.retries: // -1: no limit
			c.calls.Ref(seq).retries++
			resend = append(resend, seq)
		default:
			lost = append(lost, seq)
			// Not sent to this incarnation: its Finish sends a Skip, so the new
			// instance does not wait for it.
			c.calls.Ref(seq).sent = false
		}
	}
	// An at-most-once actor's new instance knows nothing of this caller and starts
	// from low (First): the calls finished above low (answered out of order: a
	// concurrent actor's, a cancelled one's) go as Skips among the resends, so that it
	// does not wait for them. (An exactly-once actor's rebuilt them from its log.)
	for seq := c.low; c.atMost && seq <= c.seq; seq++ {
		if c.calls.Ref(seq) == nil {
			resend = append(resend, seq)
		}
	}
	slices.Sort(resend)
	c.prepend(resend, c.resendOrSkip)
	c.scratch = resend[:0]
	if len(lost) > 0 {
		slices.Sort(lost) // in seq order, like everything a Caller hands out
		u.Lost = make([]T, len(lost))
		for i, seq := range lost {
			u.Lost[i] = c.value(seq)
		}
	}
	u.Flush = len(c.out) > 0
	return u
}

// Bounce takes an old instance's refusal of calls meant for a newer incarnation: each
// refused seq goes out again before anything queued, in seq order: the call if it is
// unfinished, a Skip if it finished meanwhile (the new instance must not wait for it),
// once each. Seqs never given out are ignored. It reports whether the runtime should resolve the
// instance again and flush: always, unless the actor is dead.
func (c *Caller[T]) Bounce(seqs []uint64) bool {
	if c.dead != nil {
		return false
	}
	again := c.scratch[:0]
	for _, seq := range seqs {
		if seq == 0 || seq > c.seq {
			continue
		}
		if e, ok := c.calls.Get(seq); !ok || e.sent {
			again = append(again, seq)
		}
	}
	slices.Sort(again)
	again = slices.Compact(again) // a batch may have carried a call twice
	c.prepend(again, c.resendOrSkip)
	c.scratch = again[:0]
	return true
}

// Die records that the actor died of err (the first reason stays) and empties the
// outbox. It returns every unfinished call, in seq order, for the runtime to fail; they
// stay unfinished until it does (Finish), and a second Die returns them again.
func (c *Caller[T]) Die(err error) []T {
	if c.dead == nil {
		if err == nil {
			err = ErrDied
		}
		c.dead = err
	}
	clear(c.out)
	c.out = c.out[:0]
	seqs := c.seqs()
	fail := make([]T, len(seqs))
	for i, seq := range seqs {
		fail[i] = c.value(seq)
	}
	return fail
}

// seqs returns the seqs of the unfinished calls, ascending.
func (c *Caller[T]) seqs() []uint64 {
	seqs := make([]uint64, 0, c.calls.Len())
	for seq := range c.calls.All() {
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	return seqs
}

// value is unfinished call seq's T.
func (c *Caller[T]) value(seq uint64) T {
	e, _ := c.calls.Get(seq)
	return e.v
}

// resend is the outbox entry that sends unfinished call seq again.
func (c *Caller[T]) resend(seq uint64) Out[T] {
	return Out[T]{Kind: Resend, Seq: seq, Call: c.value(seq)}
}

// resendOrSkip is the outbox entry that sends call seq again if it is unfinished, or
// has the actor go past it if it finished.
func (c *Caller[T]) resendOrSkip(seq uint64) Out[T] {
	if e, ok := c.calls.Get(seq); ok {
		return Out[T]{Kind: Resend, Seq: seq, Call: e.v}
	}
	return Out[T]{Kind: Skip, Seq: seq}
}

// prepend puts the entries for seqs (ascending) before the outbox, a resent call that
// was cancelled after a Cancel.
func (c *Caller[T]) prepend(seqs []uint64, entry func(uint64) Out[T]) {
	if len(seqs) == 0 {
		return
	}
	out := make([]Out[T], 0, len(seqs)+len(c.out))
	for _, seq := range seqs {
		o := entry(seq)
		if e, _ := c.calls.Get(seq); o.Kind == Resend && e.cancel {
			out = append(out, Out[T]{Kind: Cancel, Seq: seq, Call: o.Call})
		}
		out = append(out, o)
	}
	c.out = append(out, c.out...)
}

// Err is the reason the actor died, nil while it lives (for this caller).
func (c *Caller[T]) Err() error { return c.dead }

// Seq is the last sequence number given out (0: none).
func (c *Caller[T]) Seq() uint64 { return c.seq }

// Low is the lowest unfinished sequence number (Seq()+1 when every call is finished):
// the First of the calls sent now; Low()-1 is their Acked.
func (c *Caller[T]) Low() uint64 { return c.low }

// Incarnation is the newest incarnation of the actor known (0: no news yet). Calls
// carry it: an older instance refuses them (Bounce).
func (c *Caller[T]) Incarnation() uint64 { return c.inc }

// AtMostOnce reports whether the actor is at-most-once, as far as the caller knows (its
// Config, then its newest Record).
func (c *Caller[T]) AtMostOnce() bool { return c.atMost }

// Unfinished is the number of calls given out and not finished.
func (c *Caller[T]) Unfinished() int { return c.calls.Len() }

// Call returns unfinished call seq (false: it finished, or was never given out). The
// runtime finds a call by the seq its result comes back with.
func (c *Caller[T]) Call(seq uint64) (T, bool) {
	e, ok := c.calls.Get(seq)
	return e.v, ok
}

// Sent reports whether call seq is unfinished and was queued with Send.
func (c *Caller[T]) Sent(seq uint64) bool {
	e, _ := c.calls.Get(seq)
	return e.sent
}

// String shows the state, for tests and debugging:
//
//	seq=5 low=2 inc=1 at-most-once retries=1 calls=[2:c2 3:c3(sent@1s,r1)] out=[call 3:c3 skip 4]
func (c *Caller[T]) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seq=%d low=%d inc=%d", c.seq, c.low, c.inc)
	if c.atMost {
		fmt.Fprintf(&b, " at-most-once retries=%d", c.retries)
	}
	b.WriteString(" calls=[")
	for i, seq := range c.seqs() {
		e, _ := c.calls.Get(seq)
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d:%v", seq, e.v)
		var attrs []string
		if e.sent {
			attrs = append(attrs, fmt.Sprintf("sent@%v", e.sentAt.Sub(time.Unix(0, 0))))
			if e.retries > 0 {
				attrs = append(attrs, fmt.Sprintf("r%d", e.retries))
			}
		}
		if e.cancel {
			attrs = append(attrs, "cancel")
		}
		if len(attrs) > 0 {
			fmt.Fprintf(&b, "(%s)", strings.Join(attrs, ","))
		}
	}
	b.WriteString("] out=[")
	for i, o := range c.out {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(o.String())
	}
	b.WriteByte(']')
	if c.dead != nil {
		fmt.Fprintf(&b, " dead=%q", c.dead.Error())
	}
	return b.String()
}
