// Package lineage is lineage-based fault tolerance (the Ray paper's, DESIGN §5): it
// records task specs in the GCS lineage table, and it plans how an object whose value is
// lost is recreated by running again the tasks that made it, and what becomes of the
// objects of an owner that died.
//
// # Recording
//
// A task's spec is its lineage record, with its reference arguments as object IDs; a
// by-value argument over the inline limit (100 KiB) was put into the object store at
// submission and is named by reference too, so a record stays small. The owner holds
// every record in its reference table (package objects) from submission on: that is what
// it reconstructs its own objects from. The GCS copy, written through this package's
// Recorder, is for the owner's death (see Owner death and adoption), and it is written
// late: the owner's runtime hands a task's record to the Recorder only if the task still
// lives 40 to 80 ms after its submission (internal/assembly/core/lineage.go), and drops
// from the GCS only records it wrote, so the many tasks that finish and are released
// sooner cost the GCS nothing. The price: a task submitted within that window (and a
// packer's flush) before its owner died has no record in the GCS, and cannot be
// recreated by an adopter. Records go out through the GCS group-commit writer packed many
// to an etcd key (gcs.Packer, s2-compressed), so recording costs an append to a buffer on
// the owner's shard, not an etcd round trip.
//
// Keys: gcs.LineagePrefix pages; each record's ID is the task ID's 16 bytes.
//
// At the GCS's space quota (gcs.ErrNoSpace) the writer drops a batch after retrying it
// for 2 s, and goes on. What that costs a task whose record was in it:
//   - Nothing while its owner lives. The owner reconstructs its own objects from the
//     specs in its reference table, never from the GCS, so a lost object of a task whose
//     record the GCS refused is recreated as any other (and, as any other, refused with
//     ErrObjectLost once the owner released the task's record).
//   - Nothing once the GCS has space again. The writer tells the packer which pages it
//     dropped (gcs.Writer.OnNoSpace), and the packer writes their live records again in
//     new pages (gcs.LostRetryDelay later, over and over while the GCS stays full), so the
//     records are in the GCS again once it has space, without the owner doing anything;
//     records released meanwhile are not written at all.
//   - If the owner dies while the GCS is still full, the records it could not write die
//     with it: an adopter finds no record and fails the object at once with ErrObjectLost
//     ("left no lineage record of the task that made it": see Owner death and adoption),
//     the same as for a task submitted just before its owner died; never a hang, and
//     never a run of a wrong task. The owner's log says when: the writer's ERROR "the
//     store is at its space quota; ops dropped" (once a minute), and ray.ErrGCSFull in
//     the errors of calls to exactly-once actors. TestPackerRewritesPagesLostAtTheQuota
//     (internal/base/gcs) checks the rewrite on an embedded etcd at a 16 MiB quota.
//
// # Planning: who decides, who does
//
// The planner is a pure core (DESIGN §8.3), like actors/lifecycle: it imports no
// protoactor, starts no goroutines, reads no clock and does no I/O (internal/archtest
// checks). It decides; the owner's runtime (internal/assembly/core) reads the facts it
// decides from and carries out what it decides. Facts come in as values (Object: what the
// memory store, the reference table and the cluster view say about one object); decisions
// go out as Actions, which the runtime carries out in order. An action that needs facts
// read after the earlier actions ran (an argument's, once its dependent's future was
// reset) asks the runtime to come back with them: Reconstruct (to Lost), Start (to
// Restart), Recreate (to Adoption.Recreate), Adopt (to Adoption.Adopt), ReadLineage (to
// Adoption.LineageRead). That is how a plan recurses through lost arguments, depth first,
// without the planner reading a table.
//
// The decisions and where the runtime asks for them:
//
//	decision                                  planner                   runtime (internal/assembly/core)
//	----------------------------------------  ------------------------  --------------------------------------------
//	can a lost object be recreated? start it  Lost                      reconstruct: any goroutine
//	does this request run the task (dedup)?   RerunRequest              the task's shard loop: rerun, oldFreed
//	free the old copy first?                  RerunRequest (FreeOld)    a goroutine: may dial, waits for the store
//	how the task runs again, args first       Restart                   the shard loop: restart
//	a failed attempt's lost arguments         ArgsLost, ArgsRecreating  recoverArgs: a goroutine (dials), the shard
//	what a Get tries, and how often           Get                       getRecovering: the Get's goroutine
//	a dead owner's objects                    Adoption                  OwnerGone: the membership's goroutine
//
// The runtime keeps what must be waited for or sent: futures, messages to shards, frees,
// reads, the bounded waits for an owner's death (timers) and the reads of the GCS.
//
// # Reconstruction
//
// An owner recreates an object of its own whose value is lost: its bytes are on a node
// that died, its spill file is gone or corrupt, or (as an argument of a task run again)
// its value was freed while its task's lineage record was kept. Lost refuses an object
// made by Put (no task can make it again) and one whose task's record the owner no
// longer holds; otherwise the object's future waits again (a Get that follows waits for
// the new value) and its task is handed to the task's shard as a RerunRequest.
//
// Several goroutines may find the same object lost at once (two Gets, a dependent task,
// an adoption): each hands a request to the shard, and the shard, which owns the task's
// pending run, steps each request with what it holds for the task. The first request
// that finds no pending run claims the task; any other finds a run (another request's,
// or the task's first run, not finished) and does nothing: the task runs once. A claimed
// request whose old copy is in a store frees it first (so the new result is stored in
// its place, not taken for a duplicate of it), and a task cancelled meanwhile does not
// start.
//
// The run (Restart) is a new attempt, and one of the task's retries, as in Ray (whose
// max_retries bounds resubmissions for reconstruction too): a task whose attempts so far
// (failures retried, earlier reconstructions) used up its MaxRetries (0: a task with side
// effects that must not run twice) does not run again (NoRetries), and the object fails
// with an error that matches ErrObjectLost and says why (Ray's
// ObjectReconstructionFailedMaxAttemptsExceededError); -1 has no limit. A run that replaces
// an attempt that failed on a lost argument (its value is an OBJECT_LOST error: the
// function never ran) uses no retry. Its arguments whose bytes are on a
// node that is gone, or whose values were freed with their lineage kept, are recreated
// first, each through Lost and its own task's shard, recursively; the task waits for
// them and runs after them. A task attempt that fails because an argument could not be
// read (ArgsLost) recreates the arguments that are gone and waits for them, or is retried
// as usual when none is.
//
// # Gets and their budget
//
// A Get (type Get) reads its object's value; when the value is on a node that is gone, or
// the read finds the bytes lost, it recreates the object and waits for it; when that is
// refused, or the value itself says it is lost, it waits (bounded, in the runtime) for
// the adoption of the object in case its owner died. Each recovery waited for counts:
// after MaxReconstructions the next failed read gives up, and the Get returns that read's
// error. A Get's own actions carry no more than a byte, so the decision costs no
// allocation on the path every Get of a ready value takes.
//
// # Owner death and adoption
//
// Lineage held in etcd outlives the task's owner, which Ray's ownership model cannot
// offer (ray-project/ray#40731): a borrower adopts the objects it borrowed from an owner
// that died. The runtime turns its borrows into owned references; Adoption then keeps
// what is whole (a value resolved, bytes on a node that lives), reads the dead owner's
// lineage from the GCS once, when the first object needs it, and runs the tasks of the
// rest again from their records with the adopter as their owner: arguments it did not
// know get futures first and are adopted after the task. An object that cannot be
// recreated becomes an OBJECT_LOST error that says why: made by Put, no record in the
// GCS (records are written a little after submission), lineage unreadable, a record
// corrupt or naming a bad argument, or a task that could not be started again.
//
// # Tests
//
// The scenario scripts in testdata (TestScenarios) run the planner inside a simulated
// owner that carries out its actions the way the runtime does, and print every plan:
// reruns, chains of lost arguments, Puts, missing records, the Get budget, concurrent
// losses, cancellation while freeing, failed attempts and adoptions. FuzzOwner drives the
// same simulation with random setups and events, FuzzMachines each state machine with
// arbitrary ones; both check the promises above (one run of a task at a time, no rerun
// of a Put or without a record, bounded recoveries, one lineage read per adoption).
package lineage
