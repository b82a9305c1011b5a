package machine

import (
	"fmt"
	"sync"

	"github.com/ray-go/ray/tasks/sched"
)

// Decision is the ledger's answer to an ask: granted, denied (with why), or neither yet
// (queued; the grant comes later through the Ledger's OnGrant).
type Decision struct {
	Client  string
	ID      uint64
	Granted sched.Resources
	Denied  string
}

type ask struct {
	client string
	id     uint64
	res    sched.Resources
}

// Ledger accounts a machine's resources among its clients (worker processes). Safe for
// concurrent use.
type Ledger struct {
	mu    sync.Mutex
	total sched.Resources
	free  sched.Resources
	held  map[string]sched.Resources
	queue []ask
	// head is the client of the oldest waiting ask (queue[0]) as serve last saw it; ahead
	// is what was granted to younger asks while it waited, per client (of which what the
	// client still holds counts: aheadOf); reserved says head holds a reservation
	// (sched.Overtaken).
	head     string
	ahead    map[string]sched.Resources
	reserved bool
	shapes   []sched.Resources // serve's scratch
	grant    []int

	// The machine's object store budget shared by the clients' stores (store.go).
	storeTotal, storeFree int64
	storeHeld             map[string]int64
}

// NewLedger returns a ledger of total.
func NewLedger(total sched.Resources) *Ledger {
	return &Ledger{total: total, free: total, held: map[string]sched.Resources{}, ahead: map[string]sched.Resources{},
		storeHeld: map[string]int64{}}
}

// Total is the machine's resources.
func (l *Ledger) Total() sched.Resources { return l.total }

// Free is what no client holds.
func (l *Ledger) Free() sched.Resources {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.free
}

// Held is what client holds.
func (l *Ledger) Held(client string) sched.Resources {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held[client]
}

// Waiting is the number of asks queued.
func (l *Ledger) Waiting() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queue)
}

// Ask asks for res on behalf of client. The decisions returned are those made now: this
// ask's, if granted or denied at once, and any other asks that it lets through. A client
// has one ask waiting at most: a second one replaces the first in its place in line (the
// first's id is never answered), and an ask for nothing withdraws it (granted at once).
// An ask with now is granted at once if serve would grant it now, else denied.
func (l *Ledger) Ask(client string, id uint64, res sched.Resources, now bool) []Decision {
	if res.Negative() {
		return []Decision{{Client: client, ID: id, Denied: fmt.Sprintf("machine: asked for a negative amount (%v)", res)}}
	}
	if !l.total.Fits(res) {
		return []Decision{{Client: client, ID: id, Denied: fmt.Sprintf("machine: %v asked, the machine has %v in total", res, l.total)}}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, a := range l.queue {
		if a.client != client {
			continue
		}
		var out []Decision
		if res.IsZero() {
			l.queue = append(l.queue[:i:i], l.queue[i+1:]...)
			out = append(out, Decision{Client: client, ID: id})
		} else {
			l.queue[i] = ask{client: client, id: id, res: res}
		}
		return append(out, l.serve()...)
	}
	if res.IsZero() {
		return []Decision{{Client: client, ID: id}}
	}
	l.queue = append(l.queue, ask{client: client, id: id, res: res})
	out := l.serve()
	if now && len(l.queue) > 0 && l.queue[len(l.queue)-1].client == client {
		// Not granted: a now-ask does not wait (it was last in line, so it let nothing
		// through and held nothing back).
		l.queue = l.queue[:len(l.queue)-1]
		l.track()
		out = append(out, Decision{Client: client, ID: id, Denied: fmt.Sprintf("machine: %v asked, %v free now", res, l.free)})
	}
	return out
}

// Give takes back res from client (at most what it holds of each resource) and returns
// the asks it lets through.
func (l *Ledger) Give(client string, res sched.Resources) []Decision {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.held[client]
	var back sched.Resources
	res.Each(func(name string, q sched.Quantity) {
		if have := h.Get(name); q > have {
			q = have
		}
		if q > 0 {
			back = back.With(name, q)
		}
	})
	if back.IsZero() {
		return nil
	}
	l.setHeld(client, h.Sub(back))
	l.free = l.free.Add(back)
	return l.serve()
}

// Drop forgets client: what it held comes back (its store grant too), its ask goes. It
// returns the asks that lets through.
func (l *Ledger) Drop(client string) []Decision {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.storeGive(client, l.storeHeld[client])
	for i, a := range l.queue {
		if a.client == client {
			l.queue = append(l.queue[:i:i], l.queue[i+1:]...)
			break
		}
	}
	l.free = l.free.Add(l.held[client])
	delete(l.held, client)
	delete(l.ahead, client)
	return l.serve()
}

func (l *Ledger) take(client string, res sched.Resources) {
	l.free = l.free.Sub(res)
	l.setHeld(client, l.held[client].Add(res))
}

func (l *Ledger) setHeld(client string, h sched.Resources) {
	if h.IsZero() {
		delete(l.held, client)
		return
	}
	l.held[client] = h
}

// serve grants the queued asks that the policy lets through now (sched.ServeAsks: every
// ask that fits, oldest first; with a reservation, younger asks only from what is free
// beyond the oldest's), and keeps the books of the reservation (track).
func (l *Ledger) serve() []Decision {
	if len(l.queue) == 0 {
		l.track()
		return nil
	}
	l.track()
	l.shapes = l.shapes[:0]
	for _, a := range l.queue {
		l.shapes = append(l.shapes, a.res)
	}
	l.grant, _ = sched.ServeAsks(l.free, l.shapes, l.reserved, l.grant[:0])
	clear(l.shapes)
	if len(l.grant) == 0 {
		return nil
	}
	// The oldest ask left waiting: grants after it in line went ahead of it.
	first := 0
	for _, g := range l.grant {
		if g != first {
			break
		}
		first++
	}
	if first < len(l.queue) && l.queue[first].client != l.head {
		l.head, l.reserved = l.queue[first].client, false
		clear(l.ahead)
	}
	out := make([]Decision, 0, len(l.grant))
	for _, g := range l.grant {
		a := l.queue[g]
		l.take(a.client, a.res)
		if g > first {
			l.setAhead(a.client, l.ahead[a.client].Add(a.res))
		}
		out = append(out, Decision{Client: a.client, ID: a.id, Granted: a.res})
		l.queue[g] = ask{}
	}
	kept := l.queue[:0]
	for _, a := range l.queue {
		if a.client != "" {
			kept = append(kept, a)
		}
	}
	clear(l.queue[len(kept):])
	l.queue = kept
	l.track()
	return out
}

// track follows the oldest waiting ask: a new one starts with nothing ahead of it and no
// reservation; it reserves once younger asks that went ahead of it are what keeps it
// waiting (sched.Overtaken), and keeps the reservation until it is served or leaves.
func (l *Ledger) track() {
	if len(l.queue) == 0 {
		l.head, l.reserved = "", false
		clear(l.ahead)
		return
	}
	h := l.queue[0]
	if h.client != l.head {
		l.head, l.reserved = h.client, false
		clear(l.ahead)
	}
	if !l.reserved {
		var ahead sched.Resources
		for c := range l.ahead {
			ahead = ahead.Add(l.aheadOf(c))
		}
		l.reserved = sched.Overtaken(l.free, ahead, h.res)
	}
}

// aheadOf is what client holds that it was granted ahead of the oldest waiting ask: what
// it was granted so, at most what it holds. A client that gives back and takes again
// keeps counting what it took again (a stream of small asks taking turns), one that gave
// it back and holds nothing does not (a short task that used a free CPU).
func (l *Ledger) aheadOf(client string) sched.Resources {
	h := l.held[client]
	var out sched.Resources
	l.ahead[client].Each(func(name string, q sched.Quantity) {
		if m := min(q, h.Get(name)); m > 0 {
			out = out.With(name, m)
		}
	})
	return out
}

func (l *Ledger) setAhead(client string, a sched.Resources) {
	if a.IsZero() {
		delete(l.ahead, client)
		return
	}
	l.ahead[client] = a
}

// Reserved reports whether the oldest waiting ask holds a reservation (younger asks wait
// behind it; see the package doc).
func (l *Ledger) Reserved() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reserved
}

// Wants says what each client should give back so that the asks waiting can be served:
// while an ask waits for a resource, every client holding more of it than an even share
// (the machine's total divided among the clients that hold some or wait for some) is
// asked for its excess, at most what the waiting asks lack in all. A client with nothing
// to give back is absent. Clients give back as their work in progress ends (a raylet
// revokes leases for it), so a job with a steady stream of tasks cannot keep the machine
// while another waits.
func (l *Ledger) Wants() map[string]sched.Resources {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queue) == 0 {
		return nil
	}
	var lack sched.Resources // what the waiting asks need beyond what is free
	for _, a := range l.queue {
		a.res.Each(func(name string, q sched.Quantity) { lack = lack.With(name, lack.Get(name)+q) })
	}
	lack = lack.Sub(l.free)
	out := map[string]sched.Resources{}
	lack.Each(func(name string, need sched.Quantity) {
		if need <= 0 {
			return
		}
		users := map[string]bool{}
		for c, h := range l.held {
			if h.Get(name) > 0 {
				users[c] = true
			}
		}
		for _, a := range l.queue {
			if a.res.Get(name) > 0 {
				users[a.client] = true
			}
		}
		share := l.total.Get(name) / sched.Quantity(max(1, len(users)))
		left := need
		for c, h := range l.held {
			if over := h.Get(name) - share; over > 0 && left > 0 {
				give := min(over, left)
				left -= give
				out[c] = out[c].With(name, give)
			}
		}
		if !l.reserved {
			return
		}
		// The oldest ask reserves: what younger asks took ahead of it comes back too (as
		// their work ends), even from clients within their share, up to what it lacks.
		left = l.queue[0].res.Get(name) - max(l.free.Get(name), 0)
		for c := range l.ahead {
			if give := min(l.aheadOf(c).Get(name), left); give > 0 {
				left -= give
				if give > out[c].Get(name) {
					out[c] = out[c].With(name, give)
				}
			}
		}
	})
	return out
}
