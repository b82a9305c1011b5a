// Package actors is the runtime of ray-go's actors (Ray paper §3.1, §4.2; DESIGN §2, §5):
// the class registry, the actor grain that hosts one instance, its method log in the GCS
// and the replay that rebuilds it, and the Manager that places and restarts actors. The
// lifecycle decisions themselves are the pure state machine of package actors/lifecycle;
// the caller's decisions (sequence numbers, the order of what is sent, resending, failing
// the calls of dead actors) are the pure bookkeeping of package actors/caller, whose I/O
// (finding the instance, sending, completing calls) internal/assembly/core does; the
// typed user API is the root package.
//
// # Pieces
//
//   - Table: the GCS actor table (actors/<id>), the name index (actornames/) and the
//     placement key (placement/<id>) the identity lookup routes by. Every change is a
//     lifecycle.Step written with a revision check (the fence). A step that changes the
//     phase, the incarnation or the node also appends that transition, with the time, to
//     the record's history in the same write (the first and the newest, maxHistory in
//     all; a checkpoint's progress is not one), which the state API shows (Ray's actor
//     events). The Manager's mirror drops the history, as it drops constructor arguments.
//   - Manager: one per node. It mirrors the records of the live actors through a watch
//     and tells the process runtime of every change; a dead actor leaves its memory (a
//     small tombstone of the most recent deaths stays, the GCS keeps the record). The
//     alive node with the smallest ID is the leader: it places actors waiting for a node
//     (the least loaded node whose total resources fit), starts their instances, and
//     reports HostDied for actors whose node left the membership, which restarts them
//     elsewhere or lets them die (not while the node is only a suspect, SuspectView: a
//     connection to it broke and nothing says its process is gone; it gets no new
//     actors meanwhile), and OwnerDied for non-detached actors whose owner
//     process died (Lifetimes). Its work per event is O(what changed): the actors whose
//     record changed, the waiting ones when a node joins, a lost node's actors. An actor
//     that no alive node fits dies (Unschedulable) only when it is being created, and
//     only once the GCS says no node about to join fits it either (JoiningView: the
//     job's worker processes start together, and the leader's view may not have the
//     others yet); a restarting one waits until a node that fits is back. An actor in a placement
//     group's bundle runs only on the bundle's node (ActorInfo.affinity_node) and, while
//     that node is dead, waits (being created too): when the bundle is placed again, the
//     group's creator moves the record (Table.MoveAffinity) and it starts there. One of
//     ray.NodeAffinity (affinity_node without a group) runs on that node only (hard; it
//     dies, restarting or not, once that node is gone: PlacementFailed.NodeGone), or there
//     when that node can take it (affinity_soft). The manager indexes the live actors of
//     every job by placement group (InGroup), for that creator to find them. A group
//     lives as long as its creator: in a cluster (ManagerConfig.GroupGoneGrace) the
//     leader kills, for good, its job's live actors in a group whose record says
//     REMOVED, whose creator's death is confirmed (OwnerGone), or whose record has been
//     missing for the grace, detached ones included and whoever created them, so that a
//     group whose creator crashed with everyone who put actors in it still ends them.
//   - grain: the protoactor grain of identity "a/<actorID>", activated on the node the
//     placement names. On activation it reads the actor record, holds the resources the
//     actor asked for at the node's raylet, constructs the instance, restores the newest
//     checkpoint, replays the method log after it (an actor still Pending, being created,
//     has none: it is not read), and only then records the instance as Alive (from the
//     record it read first, read again only if that moved on) and serves calls. User code runs on the grain's executor goroutine, never in
//     Receive.
//
// # Calls, order and exactly-once
//
// Every call carries (caller ID, sequence number): the caller is one shard of the process
// runtime that made it (the shard of the submitting task's children, internal/assembly/core:
// the calls made through one ctx share a caller, and submitters in different shards do
// not contend on one), and sequence numbers count its calls to one actor from 1 without
// gaps. The grain runs a caller's calls in sequence order, buffering a call whose
// predecessors have not arrived (arguments that are refs are resolved by the caller
// first, so calls can arrive out of order; they never run out of order). A call whose
// arguments failed is sent as a skip so the ones after it are not held up.
//
// Results go back in batches (one message per caller's shard): the executor holds the
// results of calls that ran under 5 µs until its queue is empty, 64 are held, or the oldest
// has waited 100 µs (looked at when a call ends); a call that ran longer sends its result,
// and those held before it, when it ends, so a caller pipelining long calls is not a queue
// behind. A caller in the same process (Env.Local) takes its results from the executor's
// goroutine instead of as a message to its mailbox (a flush's results in one call): one
// goroutine wake-up fewer per call.
// After a call of 5 µs or more the executor yields its P (runtime.Gosched) before the next
// one: a caller its result woke was readied in that P's run-next slot and would otherwise
// run only after the calls queued here, when every P is busy. Once its queue is empty
// after a call of 2 µs or more, the executor polls for the next call for up to 100 µs
// (internal/base/spin) before it blocks, while its waits are short and no goroutine
// waits for a P: its P stays busy instead of going idle and being woken for the call a
// pipelining caller sends a few microseconds later (a wake-up costs ~20 µs on a VM);
// after a wait that outlasted the poll it blocks at once until a wait is short again, so
// an actor called now and then spends no CPU polling.
// A short call's result can still wait for the call queued behind it to end: a
// method that blocks until its caller has read the previous call's result should not
// follow a short call of the same caller in the queue. What ran (and each checkpoint the
// executor saves, in order among the calls) is queued for the grain, which applies it
// at the start of its next message; an at-most-once actor without periodic checkpoints
// gets no message of its own for it (the caller's next call, or 64 queued, brings it).
//
// A logged actor (the default) writes each call to the method log before running it.
// Calls that arrive while a write is in flight share the next one: the log is
// group-committed, one etcd transaction per batch (up to four in flight, run in log
// order), and a batch also records a digest of the result of every call that finished
// since the last one. A logged call keeps only what replay needs (its ID, method and
// arguments). The log key is actorlog/<actorID>/<batch>; each entry has an actor-wide log
// index, which is the order of replay, across all callers. A batch's calls run only once
// it and every batch before it are committed. Commits in flight may land out of order, so
// an instance that dies with several in flight can leave a hole (a later batch landed, an
// earlier one did not): replay stops at the first missing index and the batches after it
// are deleted, fenced on the actor record, before the new instance serves. Their calls
// never ran and were never answered; their callers resend them.
//
// A call that was running when its host died is replayed by the restart, at most once
// (replay.go): the log cannot tell it from a call that merely waited (a result's digest is
// recorded with the next commit), so before replay runs a call whose result is not
// recorded it names the call in the actor's replay guard (gcs.ActorReplayKey, a fenced
// write), and clears the guard, recording the digests of the calls it ran, in one write
// when it ends. An instance that finds a call named by an earlier incarnation knows that
// incarnation's host died while replaying it: the call is taken as the cause (a method
// that exits or crashes its process), fails with an ACTOR_DIED error saying so, which the
// guard keeps for later replays until a checkpoint covers it, and is not run again; the
// actor goes on without it. Such a call kills two hosts (its first run's and its
// replay's), each using a restart, and with them the other actors of those worker
// processes, not one per restart left. Calls queued or in flight through a death that is
// not theirs (a node killed) are replayed once and complete exactly once.
//
// The caller's side of all this is decided by the pure bookkeeping of package
// actors/caller (its scenario scripts show each case) and carried out by the runtime's
// callers. The caller keeps every call until its result arrives. When the actor gets a
// new incarnation (a restart), the caller resends every unanswered call to it; the new
// instance has rebuilt its callers' positions from the checkpoint and the log, so a call
// it has seen (logged, replayed) is answered from the recorded or replayed result and
// not run again, and a call it has not seen runs once. Calls also carry the highest
// sequence number whose result the caller holds (acked), so the instance forgets those
// results, and the incarnation the caller targets: an instance older than that refuses
// the calls (ActorCallBounce) and the caller resends them once the new instance is
// reachable. A call unanswered for a few seconds is resent too (the oldest first, a
// bounded number at a time), which repairs a call lost on the way. Log writes are fenced
// on the actor record's revision: an instance that was superseded (a brief double
// activation while placement moves) cannot write the log, and stops.
//
// At the GCS's space quota (gcs.ErrNoSpace) a log write is retried for noSpaceWait (2 s:
// a defragmentation or a delete may free space meanwhile), then its calls fail, not run,
// with a GCS_FULL error (ray.ErrGCSFull) that says the GCS is full and what to do (ErrNoSpaceMessage;
// Stats.NoSpace counts them): a call not logged must not run, and a caller waiting forever
// for a write the GCS refuses is worse than an error. The calls of the batches after it,
// and those accepted meanwhile, fail with it (they could be logged only after it). The
// log stays without a hole: once no write is in flight, the keys of those batches (one may
// have landed) are deleted, fenced on the actor record (etcd allows deletes at the quota),
// before the calls are answered; the log goes on from the first failed batch and index.
// A failed call is answered, so its caller does not send it again: it runs neither now nor
// after a restart, and the calls logged before it keep their effects. If the keys cannot
// be deleted the instance stops without answering, and the next one drops the batches
// after the hole and gets the calls again (below). How full the GCS is: the head's
// etcd_mvcc_db_total_size_in_bytes against etcd_server_quota_backend_bytes
// (internal/assembly/agent's metrics).
//
// At-most-once actors (ray.AtMostOnce, Ray's default) skip the log: calls run as soon as
// they arrive in order. After a restart the instance restores the newest checkpoint (if
// any) and does not replay; calls that were in flight fail with ErrActorDied, or are
// resent up to MaxTaskRetries times, -1 without limit (then they may run twice).
//
// # Checkpoints
//
// A class whose type implements ray.Checkpointer can snapshot its state, and so can one
// whose state the codec keeps whole (codec.Lossless: exported fields, no interfaces), which
// the root package saves and restores by itself (Class.Auto). The grain of a logged actor
// takes a checkpoint every CheckpointEvery calls (default 1000) or 8 MiB of method log,
// whichever comes first, and on ray.Checkpoint. An at-most-once actor has no log to bound
// and restarts from its constructor, as Ray's do: it checkpoints on ray.Checkpoint, and
// every CheckpointEvery calls only when that option was set (a periodic checkpoint is a
// GCS write Ray's default actors do not pay). Checkpoints are taken between two calls
// (with max concurrency > 1, once the running calls finish). The checkpoint
// holds the user state, the log index it covers, and every caller's position and
// unacknowledged results; it is stored in the GCS under checkpoints/<actorID>/<index>/
// in parts of at most 1 MiB (so it survives the loss of any node), recorded in the actor
// record (lifecycle.CheckpointTaken), and then the log batches it covers and the previous
// checkpoint are deleted. A logged actor that cannot checkpoint keeps its whole log until
// it dies, and a restart replays all of it; the root package creates one only when asked
// (ray.UnboundedMethodLog), and otherwise fails the creation saying what to do.
//
// # The rule replay relies on
//
// Replay rebuilds the state by running the logged calls again, in log order, on the
// restored (or freshly constructed) instance. That is correct only if every method is
// deterministic given the actor's state and the call's arguments, and the constructor
// given its arguments. A method that reads the clock, an unseeded random source, map
// iteration order, or an outside service breaks the rule. Then replay builds a different
// state from the one callers saw. Answers already given stay as they were (a caller
// asks again only for calls it got no answer to, and gets the replayed one); a replayed
// result that differs from the recorded digest is counted in Stats.Divergent and logged
// as a warning; later calls run against the diverged state. Effects outside the actor (writing a file, calling a
// service) happen again on replay: exactly-once covers the actor's state and its
// answers, not the outside world. To stay safe, pass time and randomness in as arguments
// or keep a seeded source in the state, checkpoint often, or use AtMostOnce.
//
// Concurrency: with MaxConcurrency > 1 calls run at once and their effects interleave;
// replay runs them one at a time in log order, which is one of the interleavings the
// live run could have had, not necessarily the one it had. Such actors should keep
// their methods commutative, or accept that.
//
// # Lifetimes
//
// A non-detached actor ends when every handle to it is gone (Ray's actor garbage
// collection). Its owner, the runtime that created it, counts the handles with a small
// object of its own, the actor's handle object (ids.ActorHandleID), through the same
// reference counting and borrowing protocol as any object: handles hold it in the
// creating program, inside encoded values, in other processes, and each caller holds it
// while it has unfinished calls. When the owner's count reaches zero it steps the actor
// with lifecycle.OutOfScope (dead at once, no restart; every call made has finished by
// then). internal/assembly/core lifetime.go has the details. A detached actor has no
// handle object: it lives until ray.Kill. Every actor also ends when its creator's
// runtime stops (a detached one outlives it), or when its host dies with no restart left
// (a host that dies while the actor is placed or starting there counts, as in Ray, whose GCS
// restarts an actor whose creation a node's death cancelled through the same counted path).
// A non-detached actor fate-shares with its owner (Ray's OWNER_DIED): when the process
// that created it dies (a driver or a worker process whose task created it, even killed
// with SIGKILL), the node layer tells every Manager on the membership's MemberGone of that
// process (Manager.OwnerGone, a definite death, not a broken connection), and the leader
// steps each of the job's non-detached actors that process owned with lifecycle.OwnerDied:
// Dead at once, no restart, calls fail with ErrActorDied saying "owner died". Managers
// remember the most recent dead owners, so a leader elected after the death (the old one
// died with the owner) ends them too; a worker process that starts after the death does
// not know of it (then the actor ends with its last handle, or with its job).
// In a cluster a detached actor also outlives its job: the job's worker processes serve on
// while Manager.LiveDetached says one of the job's detached actors is not dead (the node
// agents keep them running, internal/assembly/agent), and their managers restart it there
// as during the job.
//
// # What is not here yet
//
// A call's arguments that live in an object store (refs, and by-value
// arguments over 100 KiB, or over 512 KiB together, which the caller puts there) are
// logged by value when they total at most 256 KiB (logRefBytes: the grain reads them
// before the log write), so replay needs nothing but the log; larger ones are logged by
// reference, and replaying such a call needs its objects to still exist: the caller
// releases them once the call is answered, so a restart after that replays the call with
// a lost argument (its result differs, and replay reports the divergence). Give an actor
// that takes large arguments a Checkpointer, or make it AtMostOnce. Cross-process callers and worker processes come
// with the cluster mode.
package actors
