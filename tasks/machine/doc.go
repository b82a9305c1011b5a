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
// machine's worker processes, never per task). Asks are served oldest first, strictly: an
// ask that does not fit holds back those after it, so a large ask is never starved by
// small ones (a client has at most one ask waiting, so the queue is as long as the
// machine's worker processes). An ask for more than the machine has in total is denied at
// once (the raylet already refuses such leases as infeasible); an ask with Now is granted
// at once or denied (a placement group's bundle is committed only if its resources are
// free now). A client that goes (its connection closes: the process exited or was killed)
// gives back everything it held and its ask is dropped.
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
// excess (Ledger.Wants), which its raylet gives back as its leases end (it revokes them
// from their owners) instead of granting it again; a RECLAIM of nothing ends it.
package machine
