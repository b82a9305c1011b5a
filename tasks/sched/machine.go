package sched

// ServeAsks is the order in which a machine's ledger (package tasks/machine) serves the asks
// of the worker processes that share the machine (one process per job; each asks for what
// its own lease queue lacks). asks are the waiting asks, oldest first; ServeAsks appends to
// dst the indexes of those to grant now, in order, and returns dst and what is free after
// them.
//
// Every ask that fits what is left is granted, oldest first; an ask that does not fit is
// skipped, so it does not hold back younger asks that fit (Ray's local task manager
// dispatches whatever fits: its per-scheduling-class queues let a large request wait without
// blocking smaller ones). With reserve, the oldest ask (asks[0]) holds a reservation while
// it does not fit: younger asks are served only from what is free beyond all of asks[0], so
// what comes back accumulates for it (see Overtaken for when a ledger reserves).
func ServeAsks(free Resources, asks []Resources, reserve bool, dst []int) ([]int, Resources) {
	spare := free // what the ask being considered may take
	for i, a := range asks {
		if !spare.Fits(a) {
			if i == 0 && reserve {
				spare = spare.Sub(a)
			}
			continue
		}
		spare, free = spare.Sub(a), free.Sub(a)
		dst = append(dst, i)
	}
	return dst, free
}

// Overtaken reports whether the oldest waiting ask, head, waits only because younger asks
// went ahead of it: it does not fit what is free, but would fit it plus ahead (what was
// granted to younger asks while head waited, as far as their clients still hold it). A
// ledger then reserves for head (ServeAsks with reserve) until head is served, and asks
// those younger asks' holders to give back what they took ahead of it, as their work ends.
//
// This is what keeps a large ask from starving behind a stream of small ones without
// giving up what backfilling is for: while what keeps head waiting is held by work that
// started before head asked (a long task), younger asks use what is free; once backfilled
// work is all that stands between head and what it needs, they wait behind it.
func Overtaken(free, ahead, head Resources) bool {
	return !free.Fits(head) && free.Add(ahead).Fits(head)
}

// AskFirst is which of a worker process's unmet demands (lacks: what each lacks, oldest
// first) it asks its machine's ledger for, when the ledger takes one ask per process: the
// oldest that what the machine has free (as last heard) covers, else the oldest. So a
// demand that the machine cannot serve now does not hold back the process's smaller ones
// that it can (its ask keeps its place in the ledger's line when it changes), and with
// nothing that fits, the oldest waits in line. It returns -1 for no demand.
func AskFirst(free Resources, lacks []Resources) int {
	if len(lacks) == 0 {
		return -1
	}
	for i, l := range lacks {
		if free.Fits(l) {
			return i
		}
	}
	return 0
}
