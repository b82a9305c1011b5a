package caller

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"
)

// epoch is the time 0s of the scripts and the fuzz test.
var epoch = time.Unix(0, 0)

// op is one operation on a Caller[string], as the scripts and the fuzz test give it.
type op struct {
	name   string // the method: Add, Send, Finish, Cancel, Checkpoint, Take, ResendStale, Changed, Bounce, Die
	call   string
	seq    uint64
	at     time.Duration // Send, ResendStale: the time, from epoch
	record Record
	seqs   []uint64
	msg    string
}

func (o op) String() string {
	switch o.name {
	case "Add":
		return "Add " + o.call
	case "Send":
		return fmt.Sprintf("Send %d at %v", o.seq, o.at)
	case "Finish":
		return fmt.Sprintf("Finish %d", o.seq)
	case "Cancel":
		return fmt.Sprintf("Cancel %d", o.seq)
	case "ResendStale":
		return fmt.Sprintf("ResendStale at %v", o.at)
	case "Changed":
		return fmt.Sprintf("Changed %+v", o.record)
	case "Bounce":
		return fmt.Sprintf("Bounce %v", o.seqs)
	case "Die":
		return fmt.Sprintf("Die %q", o.msg)
	}
	return o.name
}

// snapshot is a deep copy of a Caller's state, to compare before and after an operation.
type snapshot struct {
	seq, low, inc uint64
	atMost        bool
	retries       int
	calls         map[uint64]call[string]
	out           []Out[string]
	dead          error
}

func snap(c *Caller[string]) snapshot {
	return snapshot{seq: c.seq, low: c.low, inc: c.inc, atMost: c.atMost, retries: c.retries,
		calls: maps.Collect(c.calls.All()), out: slices.Clone(c.out), dead: c.dead}
}

func (s snapshot) equal(t snapshot) bool {
	if len(s.out) == 0 && len(t.out) == 0 {
		s.out, t.out = nil, nil // an empty outbox is empty, whatever its capacity
	}
	return reflect.DeepEqual(s, t)
}

// apply runs o on c and returns what it answered, one line, and whether the answer and
// the new state keep the contract (checkStep and checkState).
func apply(c *Caller[string], o op) (string, error) {
	prev := snap(c)
	var res string
	var ret any
	switch o.name {
	case "Add":
		seq, err := c.Add(o.call)
		res, ret = fmt.Sprintf("seq %d", seq), err
		if err != nil {
			res = "error: " + err.Error()
		}
	case "Send":
		ok := c.Send(o.seq, epoch.Add(o.at))
		res, ret = queuedOrNot(ok), ok
	case "Finish":
		ok := c.Finish(o.seq)
		res, ret = queuedOrNot(ok), ok
		if _, known := prev.calls[o.seq]; !known {
			res = "unknown"
		}
	case "Cancel":
		ok := c.Cancel(o.seq)
		res, ret = queuedOrNot(ok), ok
		if _, known := prev.calls[o.seq]; !known {
			res = "unknown"
		}
	case "Checkpoint":
		err := c.Checkpoint()
		res, ret = "queued", err
		if err != nil {
			res = "error: " + err.Error()
		}
	case "Take":
		if q := c.Queued(); q != len(prev.out) {
			return "", fmt.Errorf("Queued() = %d, the outbox holds %d", q, len(prev.out))
		}
		out := c.Take(nil)
		res = fmt.Sprintf("%v acked=%d first=%d inc=%d", out, c.Low()-1, c.Low(), c.Incarnation())
		if out == nil {
			out = []Out[string]{}
		}
		ret = out
	case "ResendStale":
		n := c.ResendStale(epoch.Add(o.at))
		res, ret = fmt.Sprintf("resent %d", n), n
	case "Changed":
		u := c.Changed(o.record)
		var b []string
		if u.NewIncarnation {
			b = append(b, "new-incarnation")
		}
		if u.Flush {
			b = append(b, "flush")
		}
		if u.Lost != nil {
			b = append(b, fmt.Sprintf("lost=%v", u.Lost))
		}
		if len(b) == 0 {
			b = append(b, "nothing")
		}
		res, ret = strings.Join(b, " "), u
	case "Bounce":
		ok := c.Bounce(o.seqs)
		res, ret = "flush", ok
		if !ok {
			res = "ignored"
		}
	case "Die":
		var err error
		if o.msg != "" {
			err = fmt.Errorf("%s", o.msg)
		}
		fail := c.Die(err)
		res, ret = fmt.Sprintf("fail %v", fail), fail
		if fail == nil {
			ret = []string{}
		}
	default:
		return "", fmt.Errorf("unknown operation %q", o.name)
	}
	if err := checkStep(prev, o, c, ret); err != nil {
		return res, fmt.Errorf("%v: %v\n\tbefore: %+v\n\tafter:  %v", o, err, prev, c)
	}
	if err := checkState(c); err != nil {
		return res, fmt.Errorf("%v: %v\n\tafter: %v", o, err, c)
	}
	return res, nil
}

func queuedOrNot(ok bool) string {
	if ok {
		return "queued"
	}
	return "not queued"
}

// checkState checks the invariants of a Caller that hold whatever happened before.
func checkState(c *Caller[string]) error {
	if c.low < 1 || c.low > c.seq+1 {
		return fmt.Errorf("low %d out of [1, seq+1=%d]", c.low, c.seq+1)
	}
	calls := maps.Collect(c.calls.All())
	for seq := range calls {
		if seq < c.low || seq > c.seq {
			return fmt.Errorf("unfinished call %d out of [low=%d, seq=%d]", seq, c.low, c.seq)
		}
	}
	if _, ok := calls[c.low]; c.low <= c.seq && !ok {
		return fmt.Errorf("low %d is finished", c.low)
	}
	if c.dead != nil && len(c.out) > 0 {
		return fmt.Errorf("dead with %d entries in the outbox", len(c.out))
	}
	if c.Unfinished() != len(calls) {
		return fmt.Errorf("Unfinished() = %d, %d calls", c.Unfinished(), len(calls))
	}
	for _, o := range c.out {
		switch o.Kind {
		case Checkpoint:
			if o.Seq != 0 || o.Call != "" {
				return fmt.Errorf("checkpoint entry %v", o)
			}
		case Call, Resend, Skip, Cancel:
			if o.Seq == 0 || o.Seq > c.seq {
				return fmt.Errorf("entry %v names a seq never given out (seq %d)", o, c.seq)
			}
			if (o.Kind == Skip) != (o.Call == "") {
				return fmt.Errorf("entry %v: a skip without a call, a call with one", o)
			}
		default:
			return fmt.Errorf("entry of unknown kind %v", o)
		}
	}
	// A cancelled call goes after a cancel of it: an instance never gets the call from
	// the outbox without the cancel before it.
	cancelled := map[uint64]bool{}
	for _, o := range c.out {
		switch o.Kind {
		case Cancel:
			e, ok := calls[o.Seq]
			if ok && !e.cancel {
				return fmt.Errorf("%v: a cancel of a call not cancelled", o)
			}
			cancelled[o.Seq] = true
		case Call, Resend:
			if e := calls[o.Seq]; e.cancel && !cancelled[o.Seq] {
				return fmt.Errorf("%v: a cancelled call with no cancel before it in the outbox %v", o, c.out)
			}
		}
	}
	return nil
}

// withoutCancels returns head without the Cancel entries, checking that each is just
// before a Resend of its call, which is cancelled, and that each Resend of a cancelled
// call has one.
func withoutCancels(head []Out[string], calls map[uint64]call[string]) ([]Out[string], error) {
	var out []Out[string]
	for i := 0; i < len(head); i++ {
		h := head[i]
		if h.Kind == Cancel {
			if i+1 == len(head) || head[i+1].Kind != Resend || head[i+1].Seq != h.Seq || !calls[h.Seq].cancel || h.Call != head[i+1].Call {
				return nil, fmt.Errorf("%v is not just before a resend of its cancelled call: %v", h, head)
			}
			continue
		}
		if h.Kind == Resend && calls[h.Seq].cancel && (i == 0 || head[i-1].Kind != Cancel || head[i-1].Seq != h.Seq) {
			return nil, fmt.Errorf("%v: a cancelled call resent without a cancel before it: %v", h, head)
		}
		out = append(out, h)
	}
	return out, nil
}

// checkStep checks what operation o did to a Caller whose state was prev; ret is what
// it returned.
func checkStep(prev snapshot, o op, c *Caller[string], ret any) error {
	next := snap(c)
	unchanged := func() error {
		if !prev.equal(next) {
			return fmt.Errorf("the state changed")
		}
		return nil
	}
	appended := func(e Out[string]) error {
		if want := append(slices.Clone(prev.out), e); !reflect.DeepEqual(next.out, want) {
			return fmt.Errorf("outbox %v, want %v", next.out, want)
		}
		return nil
	}
	// prepended checks that the outbox is prev's with n entries before it, ascending,
	// and returns those.
	prepended := func() ([]Out[string], error) {
		n := len(next.out) - len(prev.out)
		if n < 0 || !reflect.DeepEqual(next.out[n:], prev.out) && !(len(prev.out) == 0 && n == len(next.out)) {
			return nil, fmt.Errorf("outbox %v is not the old one %v with entries before it", next.out, prev.out)
		}
		head, err := withoutCancels(next.out[:n], prev.calls)
		if err != nil {
			return nil, err
		}
		for i := 1; i < len(head); i++ {
			if head[i].Seq <= head[i-1].Seq {
				return nil, fmt.Errorf("the entries put before the outbox are not in ascending seq order: %v", head)
			}
		}
		return head, nil
	}
	if prev.dead != nil && next.dead != prev.dead {
		return fmt.Errorf("the reason of death changed: %v -> %v", prev.dead, next.dead)
	}
	switch o.name {
	case "Add":
		err, _ := ret.(error)
		if prev.dead != nil {
			if err != prev.dead {
				return fmt.Errorf("a dead caller answered %v, want its reason %v", err, prev.dead)
			}
			return unchanged()
		}
		if err != nil || next.seq != prev.seq+1 || next.calls[next.seq] != (call[string]{v: o.call}) ||
			len(next.calls) != len(prev.calls)+1 || !reflect.DeepEqual(next.out, prev.out) {
			return fmt.Errorf("Add: err %v, seq %d -> %d, calls %d -> %d", err, prev.seq, next.seq, len(prev.calls), len(next.calls))
		}
	case "Send":
		e, ok := prev.calls[o.seq]
		want := ok && !e.sent && prev.dead == nil
		if ret.(bool) != want {
			return fmt.Errorf("Send answered %v, want %v", ret, want)
		}
		if !want {
			return unchanged()
		}
		if got := next.calls[o.seq]; !got.sent || !got.sentAt.Equal(epoch.Add(o.at)) || got.v != e.v || got.cancel != e.cancel {
			return fmt.Errorf("call %d after Send: %+v", o.seq, got)
		}
		if e.cancel {
			want := append(slices.Clone(prev.out), Out[string]{Kind: Cancel, Seq: o.seq, Call: e.v}, Out[string]{Kind: Call, Seq: o.seq, Call: e.v})
			if !reflect.DeepEqual(next.out, want) {
				return fmt.Errorf("outbox %v, want %v", next.out, want)
			}
			return nil
		}
		return appended(Out[string]{Kind: Call, Seq: o.seq, Call: e.v})
	case "Cancel":
		e, ok := prev.calls[o.seq]
		if !ok || e.cancel || prev.dead != nil {
			if ret.(bool) {
				return fmt.Errorf("Cancel of a call finished, cancelled or of a dead actor queued something")
			}
			return unchanged()
		}
		if got := next.calls[o.seq]; !got.cancel || got.sent != e.sent || got.v != e.v {
			return fmt.Errorf("call %d after Cancel: %+v", o.seq, got)
		}
		// One entry more: the cancel, before the call's first entry if it is there, else
		// last if the call was sent; none for a call not sent and not in the outbox.
		c := Out[string]{Kind: Cancel, Seq: o.seq, Call: e.v}
		want := prev.out
		if e.sent {
			want = append(slices.Clone(prev.out), c)
		}
		for i, q := range prev.out {
			if q.Seq == o.seq && (q.Kind == Call || q.Kind == Resend) {
				want = slices.Insert(slices.Clone(prev.out), i, c)
				break
			}
		}
		if ret.(bool) != (len(want) > len(prev.out)) {
			return fmt.Errorf("Cancel answered %v, want %v", ret, len(want) > len(prev.out))
		}
		if len(want)+len(next.out) > 0 && !reflect.DeepEqual(next.out, want) {
			return fmt.Errorf("outbox %v, want %v", next.out, want)
		}
	case "Finish":
		e, ok := prev.calls[o.seq]
		if !ok {
			if ret.(bool) {
				return fmt.Errorf("Finish of an unknown seq queued something")
			}
			return unchanged()
		}
		if _, still := next.calls[o.seq]; still {
			return fmt.Errorf("call %d still unfinished", o.seq)
		}
		wantLow := next.seq + 1
		for seq := range next.calls {
			wantLow = min(wantLow, seq)
		}
		if next.low != wantLow {
			return fmt.Errorf("low %d, want %d (the lowest unfinished)", next.low, wantLow)
		}
		skip := !e.sent && prev.dead == nil
		if ret.(bool) != skip {
			return fmt.Errorf("Finish answered %v, want %v", ret, skip)
		}
		if skip {
			return appended(Out[string]{Kind: Skip, Seq: o.seq})
		}
		if !reflect.DeepEqual(next.out, prev.out) {
			return fmt.Errorf("the outbox changed: %v -> %v", prev.out, next.out)
		}
	case "Checkpoint":
		err, _ := ret.(error)
		if prev.dead != nil {
			if err != prev.dead {
				return fmt.Errorf("a dead caller answered %v, want its reason", err)
			}
			return unchanged()
		}
		if err != nil {
			return err
		}
		return appended(Out[string]{Kind: Checkpoint})
	case "Take":
		if got := ret.([]Out[string]); !reflect.DeepEqual(got, prev.out) && len(got)+len(prev.out) > 0 {
			return fmt.Errorf("Take gave %v, the outbox was %v", got, prev.out)
		}
		if len(next.out) != 0 {
			return fmt.Errorf("the outbox holds %v after Take", next.out)
		}
	case "ResendStale":
		n := ret.(int)
		head, err := prepended()
		if err != nil {
			return err
		}
		if len(head) != n {
			return fmt.Errorf("resent %d, %d entries queued", n, len(head))
		}
		if prev.dead != nil && n > 0 {
			return fmt.Errorf("resent %d calls of a dead actor", n)
		}
		now := epoch.Add(o.at)
		var stale []uint64
		for seq, e := range prev.calls {
			if e.sent && now.Sub(e.sentAt) > c.cfg.ResendAfter && c.cfg.ResendAfter > 0 && prev.dead == nil {
				stale = append(stale, seq)
			}
		}
		slices.Sort(stale)
		if c.cfg.MaxResend > 0 && len(stale) > c.cfg.MaxResend {
			stale = stale[:c.cfg.MaxResend] // the oldest, and no more
		}
		if len(head) != len(stale) {
			return fmt.Errorf("resent %v, want %v", head, stale)
		}
		for i, h := range head {
			if h.Kind != Resend || h.Seq != stale[i] || h.Call != prev.calls[h.Seq].v || !next.calls[h.Seq].sentAt.Equal(now) {
				return fmt.Errorf("resent %v, want %v (sent at %v)", head, stale, now)
			}
		}
	case "Changed":
		u := ret.(Update[string])
		if prev.dead != nil {
			if u.NewIncarnation || u.Flush || u.Lost != nil {
				return fmt.Errorf("a dead caller answered %+v", u)
			}
			return unchanged()
		}
		inc := prev.inc
		if inc == 0 {
			inc = o.record.Incarnation
		}
		if next.atMost != o.record.AtMostOnce || next.retries != o.record.MaxTaskRetries {
			return fmt.Errorf("the actor's options are not the record's")
		}
		if o.record.Incarnation <= inc {
			if u.NewIncarnation || u.Lost != nil || next.inc != inc || !reflect.DeepEqual(next.out, prev.out) {
				return fmt.Errorf("news of incarnation %d (known %d) answered %+v, incarnation %d", o.record.Incarnation, inc, u, next.inc)
			}
			if u.Flush != (o.record.Placed && len(next.out) > 0) {
				return fmt.Errorf("flush %v with placed %v and %d queued", u.Flush, o.record.Placed, len(next.out))
			}
			return nil
		}
		if !u.NewIncarnation || next.inc != o.record.Incarnation || u.Flush != (len(next.out) > 0) {
			return fmt.Errorf("a newer incarnation answered %+v, incarnation %d", u, next.inc)
		}
		head, err := prepended()
		if err != nil {
			return err
		}
		resent := map[uint64]bool{}
		for _, h := range head {
			e, unfinished := prev.calls[h.Seq]
			if h.Kind == Skip {
				if !next.atMost || unfinished || h.Seq < prev.low || h.Seq > prev.seq {
					return fmt.Errorf("skipped %v, but it is not a finished call above low %d", h, prev.low)
				}
				resent[h.Seq] = true
				continue
			}
			if h.Kind != Resend || !e.sent || h.Call != e.v {
				return fmt.Errorf("resent %v, but it is not a sent call", h)
			}
			if next.atMost && next.retries >= 0 { // -1: no limit
				if e.retries >= next.retries || next.calls[h.Seq].retries != e.retries+1 {
					return fmt.Errorf("resent %v with retries %d -> %d of %d", h, e.retries, next.calls[h.Seq].retries, next.retries)
				}
			}
			resent[h.Seq] = true
		}
		lost := map[string]bool{}
		for _, v := range u.Lost {
			lost[v] = true
		}
		for seq, e := range prev.calls {
			switch {
			case !e.sent:
				if resent[seq] || lost[e.v] {
					return fmt.Errorf("call %d, never sent, was resent or lost", seq)
				}
			case !next.atMost && !resent[seq]:
				return fmt.Errorf("exactly-once: sent call %d was not resent", seq)
			case next.atMost && resent[seq] == lost[e.v]:
				return fmt.Errorf("at-most-once: sent call %d resent %v, lost %v", seq, resent[seq], lost[e.v])
			case lost[e.v] && (next.retries < 0 || e.retries < next.retries):
				return fmt.Errorf("at-most-once: call %d lost with retries left", seq)
			case lost[e.v] && next.calls[seq].sent:
				return fmt.Errorf("at-most-once: lost call %d still counts as sent (its Finish must skip it)", seq)
			}
		}
		for seq := prev.low; next.atMost && seq <= prev.seq; seq++ {
			if _, unfinished := prev.calls[seq]; !unfinished && !resent[seq] {
				return fmt.Errorf("finished call %d above low %d not skipped for the new incarnation: %v", seq, prev.low, head)
			}
		}
	case "Bounce":
		ok := ret.(bool)
		if prev.dead != nil {
			if ok {
				return fmt.Errorf("a dead caller asked for a flush")
			}
			return unchanged()
		}
		if !ok {
			return fmt.Errorf("a live caller ignored a bounce")
		}
		head, err := prepended()
		if err != nil {
			return err
		}
		asked := map[uint64]bool{}
		for _, s := range o.seqs {
			asked[s] = true
		}
		for _, h := range head {
			e, unfinished := prev.calls[h.Seq]
			switch {
			case !asked[h.Seq]:
				return fmt.Errorf("%v was not bounced", h)
			case h.Kind == Resend && (!unfinished || !e.sent || h.Call != e.v):
				return fmt.Errorf("%v: resent, but not an unfinished sent call", h)
			case h.Kind == Skip && unfinished:
				return fmt.Errorf("%v: skipped, but unfinished", h)
			case h.Kind != Resend && h.Kind != Skip: // (cancels checked by prepended)
				return fmt.Errorf("%v put before the outbox", h)
			}
			delete(asked, h.Seq)
		}
		for seq := range asked {
			if e, unfinished := prev.calls[seq]; seq >= 1 && seq <= prev.seq && (!unfinished || e.sent) {
				return fmt.Errorf("bounced seq %d was not queued again", seq)
			}
		}
	case "Die":
		fail := ret.([]string)
		if next.dead == nil || (prev.dead == nil && o.msg != "" && next.dead.Error() != o.msg) {
			return fmt.Errorf("dead %v after Die(%q)", next.dead, o.msg)
		}
		if len(next.out) != 0 {
			return fmt.Errorf("outbox %v after Die", next.out)
		}
		var want []string
		for _, seq := range slices.Sorted(maps.Keys(prev.calls)) {
			want = append(want, prev.calls[seq].v)
		}
		if len(fail)+len(want) > 0 && !reflect.DeepEqual(fail, want) {
			return fmt.Errorf("Die failed %v, want every unfinished call %v", fail, want)
		}
		if !maps.Equal(next.calls, prev.calls) || next.low != prev.low || next.seq != prev.seq {
			return fmt.Errorf("Die changed the calls")
		}
	}
	return nil
}
