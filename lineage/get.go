package lineage

import (
	"fmt"

	"github.com/ray-go/ray/internal/base/ids"
)

// MaxReconstructions bounds how often one Get recovers its object (recreates it, or waits
// for its adoption) before it returns the error of its last read.
const MaxReconstructions = 3

// Failure classifies a failed read for Get.ReadFailed.
type Failure uint8

const (
	// FailOther: any other error (the task's own, a timeout): returned as it is.
	FailOther Failure = iota
	// FailBytesLost: the bytes are not where the value says (their node is gone, the
	// store does not have them, the spill file is corrupt).
	FailBytesLost
	// FailValueLost: the value itself is an object-lost error (an object its owner's
	// death left unrecoverable, a task whose argument was freed).
	FailValueLost
)

func (f Failure) String() string {
	switch f {
	case FailOther:
		return "other"
	case FailBytesLost:
		return "bytes-lost"
	case FailValueLost:
		return "value-lost"
	}
	return fmt.Sprintf("Failure(%d)", uint8(f))
}

// Get is the planner's side of one Get of an object whose value may be lost: what to
// try, in what order, and how often. Every event returns exactly one action:
//
//   - Seen(o): the Get has a value to read (at first, and after each recovery it waited
//     for). Value on a node that is gone, with budget left: Reconstruct. Otherwise Read.
//   - ReadFailed(f): budget used up: GiveUp (ReasonBudget). Bytes lost: Reconstruct.
//     Value lost: AwaitAdoption (the owner may have died). Otherwise GiveUp
//     (ReasonNotLost).
//   - Refused(): what the last action tried could not be done (Lost refused to
//     Reconstruct, the adoption wait ended without one). Before a read: Read. After a
//     read whose bytes were lost: AwaitAdoption. Otherwise GiveUp (ReasonUnrecoverable).
//   - AdoptionsDone(o): after AwaitAdoption, for an object the owner owns (perhaps
//     adopted just now) once the adoptions under way have finished: pending, or a value
//     that is not lost: Wait (it is being recreated, or was). Otherwise Reconstruct.
//
// A recovery the I/O layer carried out (a Reconstruct Lost accepted, a Wait, an adopted
// borrowed object) ends with the Get waiting for the value and reporting Seen, which
// counts it: at most MaxReconstructions, after which the next failed read gives up.
// Once given up, every event answers GiveUp again.
type Get struct {
	Object ids.ObjectID
	// Recoveries counts the recoveries waited for so far.
	Recoveries int
	phase      getPhase
	reason     Reason // once done
}

// getPhase is what the Get's last action asked for.
type getPhase uint8

const (
	getNew         getPhase = iota
	getReconBefore          // Reconstruct before reading (a value on a node that is gone)
	getRead                 // Read
	getReconAfter           // Reconstruct after a read found the bytes lost
	getAwaiting             // AwaitAdoption
	getReconAdopt           // Reconstruct after the adoptions finished
	getWaiting              // Wait after the adoptions finished
	getDone                 // GiveUp
)

func (p getPhase) recovering() bool {
	switch p {
	case getReconBefore, getReconAfter, getAwaiting, getReconAdopt, getWaiting:
		return true
	}
	return false
}

// Done reports whether the Get gave up.
func (g *Get) Done() bool { return g.phase == getDone }

func (g *Get) giveUp(r Reason) Action {
	if g.phase != getDone {
		g.phase, g.reason = getDone, r
	}
	return GiveUp{Reason: g.reason}
}

// Seen: the Get has o's value to read (o is Ready).
func (g *Get) Seen(o Object) Action {
	if g.phase == getDone {
		return g.giveUp(0)
	}
	if g.phase.recovering() {
		g.Recoveries++
	}
	if g.Recoveries < MaxReconstructions && o.State == Ready && o.Value.InStore && o.Value.Gone {
		g.phase = getReconBefore
		return Reconstruct{Object: g.Object}
	}
	g.phase = getRead
	return Read{}
}

// ReadFailed: the read Seen asked for failed with f.
func (g *Get) ReadFailed(f Failure) Action {
	if g.phase != getRead {
		return g.giveUp(ReasonUnrecoverable)
	}
	switch {
	case g.Recoveries >= MaxReconstructions:
		return g.giveUp(ReasonBudget)
	case f == FailBytesLost:
		g.phase = getReconAfter
		return Reconstruct{Object: g.Object}
	case f == FailValueLost:
		g.phase = getAwaiting
		return AwaitAdoption{}
	}
	return g.giveUp(ReasonNotLost)
}

// Refused: the last action's recovery could not be done.
func (g *Get) Refused() Action {
	switch g.phase {
	case getReconBefore:
		g.phase = getRead
		return Read{}
	case getReconAfter:
		// Not an object this owner can recreate (a borrowed one, say): its owner may be
		// dead, and the adoption of its objects would recreate it.
		g.phase = getAwaiting
		return AwaitAdoption{}
	}
	return g.giveUp(ReasonUnrecoverable)
}

// AdoptionsDone: after AwaitAdoption, the adoptions under way finished and o is the
// owner's.
func (g *Get) AdoptionsDone(o Object) Action {
	if g.phase != getAwaiting {
		return g.giveUp(ReasonUnrecoverable)
	}
	if o.State == Pending || o.State == Ready && !o.Value.lost() {
		g.phase = getWaiting
		return Wait{}
	}
	g.phase = getReconAdopt
	return Reconstruct{Object: g.Object}
}
