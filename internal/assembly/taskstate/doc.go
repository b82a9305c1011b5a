// Package taskstate serves and gathers the state API's task records across a cluster's
// processes (`rayctl list tasks|get task|summary tasks|timeline`, ray.ListTasks and the
// other root functions), and the objects each process owns or borrows (`rayctl list
// objects|summary objects`: a Request with Objects set travels the same way; each process
// answers from its tables, core.Core.ListObjects, in JSON; GatherObjects merges).
// The agents' metrics ask the same way for task counts (core.TaskQuery.Counts).
//
// Every process with a runtime (a local-mode process, a driver, a job's worker process)
// keeps the records of the tasks and actor calls it submitted, in memory, per owner shard
// (internal/assembly/core, events.go); nothing per task goes to the GCS. A query travels
// through the GCS instead, only when someone asks:
//
//   - the asker (Gather) lists the node table for the processes of the job (every process
//     when no job is given), grants a lease, and puts the query at statereq/<id> on it;
//   - every process watches statereq/ (Server, started by internal/assembly/node) and
//     answers a query for its job with Core.Tasks, which filters and limits in the owner
//     shards: its answer goes under statereply/<id>/part/<node>/<n> in parts of at most
//     1 MiB, then statereply/<id>/end/<node> says how many parts there are;
//   - the asker polls for the ends (20 ms), reads the parts, merges (newest first, the
//     limit again, totals and summaries added) and revokes the lease, which deletes the
//     query and every answer. A process that does not answer within the wait (10 s) is
//     reported missing (Result.Missing; the root package's *PartialStateError, rayctl's
//     warning line), and the others' answers are used. So is a process of a running job
//     that is not in the node table although it has not exited: the job's driver, or a
//     worker process its agent runs, whose lease lapsed (stopped, hung, cut off: `rayctl
//     list nodes` shows the driver UNREACHABLE); it is not asked, and its records are
//     missing too.
//
// A process that stops cleanly leaves its records (the newest that fit in ArchiveBytes) at
// taskarchive/<job>/<node> as it goes (Archive, from the node layer's Stop), and Gather
// answers for it from there (Result.Archived): it is not asked. The GCS keeps the archives
// of the last ArchivedJobs jobs, ArchivedBytes at most. A count (metrics) reads no archive.
// A running process archives on request too (Request.Archive, AskArchive: `rayctl job
// stop` asks the driver before it sends SIGTERM, which a Go driver dies of); a later
// archive replaces it.
//
// A process known to have exited is not asked at all (Result.Gone): its node record
// outlives it until its lease lapses, and waiting for it held every query for the whole
// wait. Known from the agents' jobworkers/ records (a worker process recorded EXITED, or
// older than the one its agent runs for the job: one at a time), and from the asker's
// membership (Options.Dead: the node layer's KnownExited).
//
// A local runtime's own records are read directly (Options.Local), so the Go API in local
// mode never touches the GCS; in cluster mode the query names its asker (Request.From),
// whose Server does not answer it, and the asker takes only the answers of the processes
// it listed: one record per task attempt, each from its owner. The answers' wire form is a compact binary layout (wire.go,
// written by hand: a string table and varints; JSON took seconds for 100,000 tasks), with
// a fuzz target. WriteTimeline turns a report into a Chrome trace (timeline.go).
//
// A request with Collect set asks for no answer: every process but its sender (From) runs
// a garbage collection (core.Core.CollectForOthers). A runtime that has waited a second
// for an actor's instance, a lease or room for a placement group sends one (AskCollect,
// at most once per collection of its own, which back off to one per 2 minutes): a handle
// dropped in another process may hold what it waits for, and only a collection there
// releases it. Every job's processes receive it, since the actor may be another job's;
// it lives 5 s on a lease of its own.
//
// The GCS carries a query and its answers for the length of one request (the answers of
// `rayctl list tasks --limit 100` are 100 records per process; a 100,000-task timeline is
// a few MiB), and the rayctl holding cluster credentials is the only asker of queries
// (runtimes ask only for collections): the GCS's mutual TLS is the access control.
package taskstate
