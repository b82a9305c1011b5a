package machine

// The machine's object store budget (rayctl start --object-store-memory) is shared by the
// object stores of every process the agent serves, as Ray's one plasma store per node is
// shared by every worker and driver of every job. Each store holds a grant of it: it
// takes more (StoreAsk) when its bytes in memory would cross its grant, in chunks, and
// gives whole chunks back (StoreGive) when it is well under; when the ledger has nothing
// left to grant, the store spills as it does at its budget. A grant is never queued: the
// ledger grants what is free now, all or part of the ask, or nothing.

// SetStore sets the machine's object store budget shared by the clients' stores (0: none
// is shared; a store ask is then granted nothing and the client keeps its own budget).
// Call it before the ledger is served.
func (l *Ledger) SetStore(total int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var held int64
	for _, h := range l.storeHeld {
		held += h
	}
	l.storeTotal = max(total, 0)
	l.storeFree = l.storeTotal - held
}

// Store is the machine's object store budget and the part of it no client holds.
func (l *Ledger) Store() (total, free int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.storeTotal, l.storeFree
}

// StoreHeld is the store grant client holds.
func (l *Ledger) StoreHeld(client string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.storeHeld[client]
}

// StoreAsk grants client up to want more bytes of the store budget: what is free now, at
// most want (0 when nothing is free or want is not positive). It never waits.
func (l *Ledger) StoreAsk(client string, want int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	g := min(max(want, 0), max(l.storeFree, 0))
	if g > 0 {
		l.storeFree -= g
		l.storeHeld[client] += g
	}
	return g
}

// StoreGive takes back n bytes of client's store grant (at most what it holds).
func (l *Ledger) StoreGive(client string, n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.storeGive(client, n)
}

func (l *Ledger) storeGive(client string, n int64) {
	h := l.storeHeld[client]
	n = min(max(n, 0), h)
	l.storeFree += n
	if h -= n; h == 0 {
		delete(l.storeHeld, client)
	} else {
		l.storeHeld[client] = h
	}
}
