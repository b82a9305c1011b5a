package shard

// Grant is a shard's share of a memory budget that several stores share (the machine's
// object store budget, which the node agent's ledger accounts: package tasks/machine).
// A shard with a Grant keeps in memory at most what it was granted: it takes more in
// chunks (GrantChunk) when a put would take its memory over its grant, gives whole chunks
// back when it is well under, and spills, as it does at its Budget, when the ledger has
// nothing more to grant. Both are called on the shard's mailbox, Take only when a put
// crosses the grant (once per chunk of puts, not per object): it may wait for the ledger's
// answer, briefly (a local socket's round trip; its implementation bounds the wait).
type Grant interface {
	// Take asks for n more bytes and returns how many were granted (0 to n).
	Take(n int64) int64
	// Give gives n bytes of the grant back.
	Give(n int64)
}

// GrantChunk is the unit a shard takes and gives back its grant in, for a shared budget
// of budget bytes: 1/16 of it, at most 64 MiB and at least 1 MiB. Each process's store
// may hold up to two chunks it does not use (hysteresis: it gives back only when more
// than two are unused, keeping one), so a machine's stores together hold at most the
// budget in memory, and each one can lag its use by at most a chunk or two.
func GrantChunk(budget int64) int64 {
	return min(max(budget/16, 1<<20), 64<<20)
}

// grow takes enough grant for need bytes in memory: whole chunks beyond what the shard
// holds (all or part of them, as the ledger has them free). It returns whether need now
// fits.
func (s *Shard) grow(need int64) bool {
	if want := need - s.budget; want > 0 {
		want = (want + s.chunk - 1) / s.chunk * s.chunk
		if g := s.cfg.Grant.Take(want); g > 0 {
			s.budget += g
		}
	}
	return need <= s.budget
}

// shrink gives back whole chunks of the grant while more than two are unused, keeping one
// unused (so that a store that frees and puts around a chunk's edge does not ask and give
// back each time).
func (s *Shard) shrink() {
	if s.cfg.Grant == nil {
		return
	}
	if unused := s.budget - s.mem; unused > 2*s.chunk {
		back := (unused - s.chunk) / s.chunk * s.chunk
		s.budget -= back
		s.cfg.Grant.Give(back)
	}
}
