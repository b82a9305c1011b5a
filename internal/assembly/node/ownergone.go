package node

import (
	"time"

	"github.com/ray-go/ray/internal/assembly/membership"
	"github.com/ray-go/ray/internal/base/netx"
)

// ownerGraceLeases is how many lease TTLs a process whose membership ended, but whose
// address still accepts connections, has to register its node again before it is taken
// for dead as an owner.
const ownerGraceLeases = 3

// ownerCheckEvery is how often confirmOwnerGone looks again.
const ownerCheckEvery = 500 * time.Millisecond

// confirmOwnerGone calls gone once the process of member m is surely dead as an owner.
//
// The membership reports a process gone when its lease lapsed and it did not register
// again within a grace period, or when it became unreachable. A live process starved of
// CPU or cut off for a while can look like that, and what hangs on an owner's death is
// final: its non-detached actors die (lifecycle.OwnerDied) and lookups of what it owned
// fail. So gone is called:
//   - at once when nothing listens at its address any more (connection refused: the
//     process exited and its host is up; the usual case, e.g. SIGKILL);
//   - not at all if its node registers again (the same process, back: no death), or if
//     another process registers at its address (a port reused: what the address owns is
//     the new process's, as ProcessBack and OwnerBack have it, and the dead one's actors
//     end with their handles or their job);
//   - else after ownerGraceLeases lease TTLs (a host that is down or cut off: connections
//     time out).
func (n *Node) confirmOwnerGone(m membership.MemberInfo, gone func()) {
	ownerDeath{
		deadline: time.Now().Add(ownerGraceLeases * n.cfg.LeaseTTL),
		stopped: func() bool {
			n.mu.Lock()
			defer n.mu.Unlock()
			return n.stopped
		},
		memberAt: func() (back, same bool) { return memberAt(n.provider.Nodes(), m) },
		refused:  func() bool { return netx.Refused(m.Address, ownerCheckEvery) },
		wait:     func() { time.Sleep(ownerCheckEvery) },
		back: func() {
			n.cfg.Logger.Info("node: a process reported gone registered again; its actors and objects live on",
				"address", m.Address, "node", m.NodeID)
		},
	}.confirm(gone)
}

// ownerDeath is confirmOwnerGone's decision, with its probes as functions (tests).
type ownerDeath struct {
	deadline time.Time
	stopped  func() bool
	memberAt func() (back, same bool)
	refused  func() bool
	wait     func()
	back     func() // the same node registered again
}

// confirm calls gone when the owner is dead by the rules of confirmOwnerGone, and returns
// without it when it is not (or the node stopped).
func (d ownerDeath) confirm(gone func()) {
	for !d.stopped() {
		if back, same := d.memberAt(); back {
			if same {
				d.back()
			}
			return
		}
		if d.refused() || !time.Now().Before(d.deadline) {
			gone()
			return
		}
		d.wait()
	}
}

// memberAt reports whether a member is registered at m's address in nodes (the
// membership's index by node ID), and whether it is m's own node again.
func memberAt(nodes map[string]membership.MemberInfo, m membership.MemberInfo) (back, same bool) {
	for id, cur := range nodes {
		if cur.Address == m.Address {
			return true, m.NodeID != "" && id == m.NodeID
		}
	}
	return false, false
}
