package raylet

import (
	"sync/atomic"

	"github.com/ray-go/ray/tasks/sched"
)

// Live is a raylet's load as it stands after the last message it handled, for readers in
// its process that must not wait for a Stats reply or a load report: the runtime's placers
// judge the local node by it (Ray's hybrid policy decides for the local node from the local
// raylet's exact view, and for the others from their reports).
//
// The raylet publishes an immutable snapshot when its free resources or its queue changed
// (a few times per lease, never per task); Load is two atomic loads, no lock. With a
// machine ledger the free resources are the machine's as in Stats: what the raylet holds
// free plus what the machine has free (all jobs' processes on the machine), read from
// the ledger client when asked; MachineChanged says the latter moved. Safe for concurrent
// use; the zero value is not usable: NewLive.
type Live struct {
	machine Machine
	cur     atomic.Pointer[published]
	seq     atomic.Uint64 // the raylet's publications
	mseq    atomic.Uint64 // the machine's changes (MachineChanged)
}

// published is one snapshot of the raylet's own figures.
type published struct {
	seq    uint64
	avail  sched.Resources
	queued int
}

// Load is a raylet's load (Live.Load).
type Load struct {
	// Version changes whenever the figures may have (it only grows); 0 is never one.
	Version uint64
	// Available and Queued are as in StatsReply.
	Available sched.Resources
	Queued    int
}

// NewLive returns a Live for a raylet; m is its machine's ledger (Config.Machine), nil if
// it has none.
func NewLive(m Machine) *Live { return &Live{machine: m} }

// Load returns the raylet's load; false before the raylet started. The figures are filled
// only when the version differs from known (a reader that keeps the last ones passes
// their version and pays for no copy while nothing moved).
func (l *Live) Load(known uint64) (Load, bool) {
	p := l.cur.Load()
	if p == nil {
		return Load{}, false
	}
	v := p.seq + l.mseq.Load() // both only grow: the sum changes when either does
	if v == known {
		return Load{Version: v}, true
	}
	out := Load{Version: v, Available: p.avail, Queued: p.queued}
	if l.machine != nil {
		out.Available = out.Available.Add(l.machine.Free())
	}
	return out, true
}

// MachineChanged says the machine's free resources (Machine.Free) changed: the node calls
// it for every answer of the ledger, after the client took its figure in.
func (l *Live) MachineChanged() { l.mseq.Add(1) }

// publish stores r's figures in its Live if they changed since the last publication (or
// none was made by this instance yet).
func (r *Raylet) publish() {
	l := r.cfg.Live
	if l == nil {
		return
	}
	if r.pub != nil && r.pub.queued == r.queued && r.pub.avail.Equal(r.avail) {
		return
	}
	r.pub = &published{seq: l.seq.Add(1), avail: r.avail, queued: r.queued}
	l.cur.Store(r.pub)
}
