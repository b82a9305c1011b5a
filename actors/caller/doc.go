// Package caller is the pure bookkeeping of one caller of one actor (DESIGN §5): the
// sequence numbers its calls carry, the low-water mark of the calls it has finished, the
// calls it has not (to send again after a restart), and the order in which everything
// goes to the actor (the outbox). It decides what to resend, skip or fail; it sends
// nothing itself.
//
// It is a pure core (DESIGN §8.3): it imports only the standard library and a leaf data
// structure (internal/base/seqring, which keeps the unfinished calls by seq in a ring),
// starts no goroutines, does no I/O and reads no clock (time comes in as an argument). A
// Caller is generic in T, the runtime's record of a call (internal/assembly/core's pending
// call): it hands T values back in its answers and never looks inside them. The behaviour is
// specified by the scenario scripts in testdata (see TestScenarios for their format) and
// a fuzz test that checks its invariants after every operation.
//
// # Role in the actors design
//
// Every actor call carries (caller ID, sequence number); a caller numbers its calls to
// one actor from 1 without gaps, and the actor runs them in that order (package actors
// documents the actor's side: buffering out-of-order calls, the method log, replay). In
// the process runtime (internal/assembly/core) a caller is one shard's side of one
// actor; it owns a Caller behind its mutex, and does what the Caller's answers say:
//
//   - it renders the outbox (Take) into ActorCall messages, each stamped with
//     Acked = Low()-1 (every result below that is held: the actor may forget them),
//     First = Low() (an instance with no record of this caller starts there) and
//     Incarnation() (an older instance refuses the calls with a bounce);
//   - it resolves the actor's instance, again whenever an answer says to (a new
//     incarnation, a bounce, a stale resend: the placement may have moved);
//   - it completes the calls the Caller returns as lost or as failed by a death, and
//     reports every finished call (Finish), whatever finished it.
//
// # Operations
//
//	operation            when                                 what it does
//	-------------------  -----------------------------------  -----------------------------------------------
//	Add(call)            a call is submitted                  the next seq; refused (the reason) once dead
//	Send(seq, now)       its arguments are ready              queues Call seq after everything queued
//	Finish(seq)          its result arrived, or it failed     low advances past finished seqs; a call never
//	                                                          sent (or lost) queues a Skip (unless dead)
//	Cancel(seq)          ray.Cancel of a call to an           marks it cancelled: a Cancel goes before it
//	                     at-most-once actor                   whenever it goes (Send, resends); sent already:
//	                                                          a Cancel now, before its entry if queued, else last
//	Checkpoint()         ray.Checkpoint                       queues a checkpoint marker after everything
//	                                                          queued; refused once dead
//	Take(dst)            the runtime flushes                  the outbox, in order; empties it
//	Call(seq)            a result arrives                     the call, while unfinished (the runtime's record
//	                                                          of it; whoever finishes it completes it)
//	ResendStale(now)     a periodic tick                      sent calls unanswered for ResendAfter, lowest
//	                                                          seq first, at most MaxResend, go before the
//	                                                          outbox as Resend
//	Changed(record)      the actor record changed             first news: the incarnation; same or older:
//	                                                          flush if placed; newer: resend, and for an
//	                                                          at-most-once actor skip the finished seqs
//	                                                          above low (below)
//	Bounce(seqs)         an old instance refused calls        each seq before the outbox, in order: Resend
//	                                                          if unfinished and sent, Skip if finished
//	Die(err)             the actor is dead (or its creation   every unfinished call, to fail; the outbox is
//	                     failed)                              emptied, and nothing is queued after it
//
// # Order
//
// First sends go in the order their arguments became ready, which need not be seq
// order: the actor buffers a call until its predecessors arrive, and a call that failed
// before it was sent is a Skip so that the ones after it are not held up. Whatever is
// sent again (a restart's resends, a bounce, stale calls) goes before everything queued,
// in seq order, so an instance gets a call's predecessors before it. A checkpoint marker
// keeps its place among the calls queued around it. The outbox may hold a call twice (a
// stale resend, then a restart's); that is safe, since the actor dedups by seq. A
// cancelled call never goes without a Cancel before it in the outbox: an instance that
// has the call from the outbox has the cancel first, and takes the call back (an at-most-once
// actor: package actors answers it CANCELLED and never runs it), however often it
// restarts; the cancel lives in the caller, where the call's record is.
//
// # Restarts: exactly-once and at-most-once
//
// A restarted exactly-once (logged) actor has rebuilt each caller's position from its
// checkpoint and log, so every call sent and not finished is resent: one it logged is
// answered from the log, one it never saw runs once. An at-most-once actor keeps no log;
// a call in flight when it restarted may or may not have run. It is resent only while
// it has retries left (MaxTaskRetries, counted per call, -1 for no limit; then it may run twice), and
// otherwise returned as Lost for the runtime to fail with ErrActorDied. The new instance
// has no record of the caller and starts from the First the calls carry (Low()): the
// calls finished above it (answered out of order: a concurrent actor's, a cancelled
// one's) go as Skips among the resends, and a Lost call's Finish queues a Skip, so it
// never waits for a call that will not come.
//
// # Invariants
//
// Checked by the fuzz test after every operation: Low() <= Seq()+1; every seq below
// Low() is finished, and Low() is unfinished unless it is Seq()+1; every outbox entry
// names a seq given out (a checkpoint none); a call is resent only if it was sent, a
// Skip is queued only for a finished seq, each block put before the outbox is in
// ascending seq order (a cancelled call's Resend just after its Cancel), every entry
// of a cancelled call has a Cancel before it, a restart of an at-most-once actor skips
// every finished seq above low, and a stale round resends the oldest stale calls and no
// more than MaxResend; after Die the outbox stays empty and Add, Send and Checkpoint are
// refused.
package caller
