// Package machine is a machine's resource ledger, shared by every job that runs there
// (DESIGN §1: one node per machine). The node agent (rayctl start) holds the machine's
// resources in a Ledger and serves it on a local socket (Serve); each worker process it
// starts for a job runs a raylet (package tasks/raylet) that leases its node's resources
// to owners as before, but first obtains them from the ledger (Client): it asks for what
// its waiting leases, actors and bundles need beyond what it holds, and gives back what it
// holds and has no use for. So two jobs on a 2-CPU machine run at most 2 CPUs of tasks
// between them, where each job's worker process used to count the machine's CPUs as its
// own. Tasks and leases do not pass through the ledger: a raylet asks it only when its own
// holding runs short, and keeps what it was granted while it has work for it.
//
// # The ledger
//
// Ledger is a leaf structure behind one mutex (it is touched per grant and give-back of a
// machine's worker processes, never per task). A client has at most one ask waiting, so
// the queue is as long as the machine's worker processes. Asks are served oldest first,
// but an ask that does not fit does not hold back younger asks that do (sched.ServeAsks):
// a job waiting for 2 CPUs on a 2-CPU machine where another job holds one for minutes does
// not stop a third job's 1-CPU tasks from running on the CPU that is free, as Ray's local
// task manager dispatches whatever fits (LocalTaskManager::DispatchScheduledTasksToWorkers
// in src/ray/raylet/local_task_manager.cc walks its per-scheduling-class queues, and a
// task that does not fit ends only its own class's turn: a large request waits without
// blocking smaller ones).
//
// Starvation of the large ask is bounded by a reservation, taken only when backfilling is
// what keeps it waiting (sched.Overtaken): once what is free plus what younger asks were
// granted ahead of the oldest ask would cover it, it reserves (what a client was granted
// ahead counts as far as it still holds it: one that gives back a part and takes it again,
// turn after turn, keeps counting it; one whose short task ended and gave it back does not):
// younger asks are served only from what is free beyond it (asks for resources it does
// not need still go), and Wants asks the clients that took resources ahead of it for them
// back (even within their share), which their raylets give as their leases end. So a
// large ask waits while work that started before it holds what it needs (younger work
// using the rest meanwhile delays it at most until that work gives back), and not behind a
// stream of smaller asks that take turns.
// The reservation holds until the ask is served, withdrawn or dropped. Ray itself has
// no such reservation (its fairness rule there caps how many tasks of each class run, not
// how long a large one waits): a departure, and its price is that a backfilled client
// with a stream of tasks gives its resources back to the large ask rather than keep them.
//
// An ask for more than the machine has in total is denied at once (the raylet already
// refuses such leases as infeasible); an ask with Now is granted at once or denied (a
// placement group's bundle is committed only if its resources are free now; a
// reservation's resources are not). A client that goes (its connection closes: the
// process exited or was killed) gives back everything it held and its ask is dropped.
//
// # The protocol
//
// Frames over a Unix socket in the agent's session directory (0700, so only the agent's
// user reaches it), each a 4-byte big-endian length and a pb.MachineMsg of at most
// MaxFrame bytes; a longer or malformed frame closes the connection. The client's first
// frame is HELLO (its node ID, for logs). Then ASK (id, resources, now), answered by GRANT
// or DENY with the same id; GIVE (resources, no answer); and, from the agent, FREE (the
// machine's free resources) after every change, at most every FreeEvery, so that each
// process's load report can count the machine's free resources as available to its job;
// and RECLAIM (resources) when what it should give back changes: while an ask waits, every
// client holding more than an even share of a resource the ask lacks is asked for the
// excess (Ledger.Wants; with a reservation, also what it took ahead of the oldest ask),
// which its raylet gives back as its leases end (it revokes them from their owners)
// instead of granting it again; a RECLAIM of nothing ends it. A raylet hears FREE too
// (raylet.MachineFree): one whose ask waits for a demand the machine cannot serve asks
// instead for a smaller one of its own that fits (sched.AskFirst).
//
// # The object store budget
//
// The ledger also holds the machine's object store budget (SetStore: the agent's
// --object-store-memory), shared by the object stores of the worker processes as Ray's one
// plasma store per node is shared by every job (store.go). Every FREE says it (bytes;
// 0 from an agent that shares none, whose clients keep a budget of their own). A store
// asks for more (STORE_ASK: id, bytes) when its bytes in memory would cross its grant, in
// chunks (objects/shard GrantChunk), and is answered at once (STORE_GRANT: id, the bytes
// granted: all, what is free, or 0, never queued); it gives whole chunks back (STORE_GIVE)
// when it is well under, and a client that goes gives back its whole grant. What a store
// is not granted it spills. There is no message per object.
package machine
