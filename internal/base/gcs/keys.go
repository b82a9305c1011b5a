package gcs

import (
	"fmt"
	"strconv"
	"strings"
)

// The key schema of the GCS, written once. Every table is a prefix; a record's key is the
// prefix followed by its identifiers. Identifiers are the lowercase hex strings of
// internal/base/ids (they never contain '/'); only the trailing component of a key (a function
// name) may contain '/'. A cluster's whole key space lives under the namespace the Store was
// opened with (etcdstore.Config.Namespace), which is not part of these keys.
//
//	nodes/<nodeID>                          node table: address, resources, liveness (leased)
//	members/<memberID>                      actor-system cluster members (leased)
//	jobs/<jobID>                            job table: driver, executable hash, state
//	functions/<jobID>/<name>                function table of a job
//	actors/<actorID>                        actor table: class, state, owner, restarts
//	placement/<actorID>                     where an actor lives, with a fencing epoch
//	lineage/<nodeID>/<seq>                  packed task specs (see Packer) of the runtime of
//	                                        nodeID; no lease: a borrower that adopts that
//	                                        runtime's objects when it dies reads them, so the
//	                                        head deletes them a grace period after the node
//	                                        left (package internal/assembly/agent, gcssweep.go)
//	objects/<nodeID>/<objectID>             object table, one entry per object in the store
//	                                        of nodeID; deleted with the object, by the node
//	                                        when it stops, and by the head after a grace
//	                                        period for a node that died
//	objpages/<pageID>                       object table entries, packed (see Packer)
//	actornames/<namespace>/<name>           named actors: the actor ID
//	actorlog/<actorID>/<batch>              actor method log: one group commit per key, batch
//	                                        numbered from 1 (20 decimal digits), so key order
//	                                        is log order
//	actorlog/<actorID>/replay               the replay guard: the call a restart replays now,
//	                                        and the calls found to kill their host
//	checkpoints/<actorID>/<index>/<part>    an actor's checkpoint after log index <index>, in
//	                                        parts of at most CheckpointPartBytes
//	load/<nodeID>                           a node scheduler's free resources and queue (leased)
//	driverload/<nodeID>                     a driver's object store figures (a pb.NodeLoad,
//	                                        leased); apart from load/ so that the views that
//	                                        place tasks neither watch nor place on drivers
//	agents/<agentID>                        node agents (rayctl start), one per machine
//	agentalive/<agentID>                    present while the agent runs (leased)
//	jobalive/<jobID>                        present while the job's driver lives (leased)
//	driverlost/<jobID>                      the head's record of a job's driver whose lease
//	                                        lapsed: unreachable, then dead (JSON, package
//	                                        internal/assembly/agent; kept a bounded time)
//	jobworkers/<jobID>/<agentID>            the worker process an agent runs for a job
//	submissions/<submissionID>              rayctl job submit requests and their outcome
//	statereq/<requestID>                    a state API query to a job's processes (leased)
//	statereply/<requestID>/<nodeID>/<part>  a process's answer, in parts, then "end" (leased)
//	taskarchive/<jobID>/<nodeID>            an exited process's task records (taskstate.Archive)
//	taskarchived/<jobID>/<nodeID>           when that archive was written (unix ms) and its size
//	certs/<serial>                          a certificate the head issued (CertRecord)
//	revoked/<serial>                        a revoked certificate (RevokedRecord)
//	blobs/m/<sha256>, blobs/c/<sha256>/...  shipped executables and working directories,
//	                                        on leases (package internal/base/ship)
const (
	NodesPrefix           = "nodes/"
	MembersPrefix         = "members/"
	JobsPrefix            = "jobs/"
	FunctionsPrefix       = "functions/"
	ActorsPrefix          = "actors/"
	PlacementPrefix       = "placement/"
	LineagePrefix         = "lineage/"
	ObjectsPrefix         = "objects/"
	ObjectPagesPrefix     = "objpages/"
	ActorLogPrefix        = "actorlog/"
	ActorNamesPrefix      = "actornames/"
	CheckpointsPrefix     = "checkpoints/"
	LoadPrefix            = "load/"
	DriverLoadPrefix      = "driverload/"
	AgentsPrefix          = "agents/"
	AgentAlivePrefix      = "agentalive/"
	JobAlivePrefix        = "jobalive/"
	DriverLostPrefix      = "driverlost/"
	JobWorkersPrefix      = "jobworkers/"
	SubmissionsPrefix     = "submissions/"
	StateRequestsPrefix   = "statereq/"
	StateRepliesPrefix    = "statereply/"
	TaskArchivePrefix     = "taskarchive/"
	TaskArchivedPrefix    = "taskarchived/"
	CertsPrefix           = "certs/"
	RevokedPrefix         = "revoked/"
	PlacementGroupsPrefix = "pgs/"
	BlobsPrefix           = "blobs/" // content-addressed code and working directories (package internal/base/ship)
)

// LoadKey is the key of a node's load report.
func LoadKey(nodeID string) string { return LoadPrefix + nodeID }

// DriverLoadKey is the key of a driver's object store report.
func DriverLoadKey(nodeID string) string { return DriverLoadPrefix + nodeID }

// AgentKey is the key of a node agent.
func AgentKey(agentID string) string { return AgentsPrefix + agentID }

// AgentAliveKey is the key an agent keeps while it runs.
func AgentAliveKey(agentID string) string { return AgentAlivePrefix + agentID }

// JobAliveKey is the key a job's driver keeps while it lives.
func JobAliveKey(jobID string) string { return JobAlivePrefix + jobID }

// DriverLostKey is the key of the head's record of a job's lost driver.
func DriverLostKey(jobID string) string { return DriverLostPrefix + jobID }

// JobWorkerKey is the key of the worker process agentID runs for jobID.
func JobWorkerKey(jobID, agentID string) string { return JobWorkersPrefix + jobID + "/" + agentID }

// JobWorkersOf is the prefix of every worker process of a job.
func JobWorkersOf(jobID string) string { return JobWorkersPrefix + jobID + "/" }

// SubmissionKey is the key of a job submission.
func SubmissionKey(id string) string { return SubmissionsPrefix + id }

// StateRequestKey is the key of a state API query.
func StateRequestKey(id string) string { return StateRequestsPrefix + id }

// StateRepliesOf is the prefix of every answer to query id.
func StateRepliesOf(id string) string { return StateRepliesPrefix + id + "/" }

// TaskArchiveKey is the key of the task records process node of job left when it exited.
func TaskArchiveKey(jobID, nodeID string) string { return TaskArchiveOf(jobID) + nodeID }

// TaskArchiveOf is the prefix of job's archived task records (every job's when jobID is "").
func TaskArchiveOf(jobID string) string {
	if jobID == "" {
		return TaskArchivePrefix
	}
	return TaskArchivePrefix + jobID + "/"
}

// TaskArchivedKey is the index entry of process nodeID's task archive of job: when it was
// written and its size.
func TaskArchivedKey(jobID, nodeID string) string { return TaskArchivedPrefix + jobID + "/" + nodeID }

// TaskArchivedOf is the prefix of job's index entries.
func TaskArchivedOf(jobID string) string { return TaskArchivedPrefix + jobID + "/" }

// CheckpointPartBytes is the largest part of a checkpoint stored under one key.
const CheckpointPartBytes = 1 << 20

// NodeKey is the node table key of a node.
func NodeKey(nodeID string) string { return NodesPrefix + nodeID }

// MemberKey is the key of an actor-system cluster member.
func MemberKey(memberID string) string { return MembersPrefix + memberID }

// JobKey is the job table key of a job.
func JobKey(jobID string) string { return JobsPrefix + jobID }

// JobFunctionsPrefix is the prefix of every function registered by a job.
func JobFunctionsPrefix(jobID string) string { return FunctionsPrefix + jobID + "/" }

// FunctionKey is the function table key of a job's function name.
func FunctionKey(jobID, name string) string { return FunctionsPrefix + jobID + "/" + name }

// ActorKey is the actor table key of an actor.
func ActorKey(actorID string) string { return ActorsPrefix + actorID }

// PlacementGroupKey is a placement group's record (pb.PlacementGroupInfo), written by the
// runtime that owns the group under its node lease (it goes with that runtime).
func PlacementGroupKey(id string) string { return PlacementGroupsPrefix + id }

// PlacementKey is the placement key of an actor.
func PlacementKey(actorID string) string { return PlacementPrefix + actorID }

// LineagePageKey is the key of one packed page of task specs.
func LineagePageKey(pageID string) string { return LineagePrefix + pageID }

// LineageOf is the prefix of the lineage pages the runtime of node wrote.
func LineageOf(nodeID string) string { return LineagePrefix + nodeID + "/" }

// ObjectKey is the object table key of one object in the store of node (unpacked form).
func ObjectKey(nodeID, objectID string) string { return ObjectsOf(nodeID) + objectID }

// ObjectsOf is the prefix of the object table entries of the objects in node's store.
func ObjectsOf(nodeID string) string { return ObjectsPrefix + nodeID + "/" }

// ObjectPageKey is the key of one packed page of object table entries.
func ObjectPageKey(pageID string) string { return ObjectPagesPrefix + pageID }

// ActorLogActorPrefix is the prefix of an actor's whole method log.
func ActorLogActorPrefix(actorID string) string { return ActorLogPrefix + actorID + "/" }

// ActorLogKey is the method log key of an actor's group commit number batch.
func ActorLogKey(actorID string, batch uint64) string {
	return fmt.Sprintf("%s%s/%020d", ActorLogPrefix, actorID, batch)
}

// ActorReplayKey is the key of an actor's replay guard (package actors, replay.go): the
// logged call its restarting instance replays now, and the calls found to kill their
// host. Under the actor's log prefix, so it goes with the log; not a batch key (it sorts
// after them).
func ActorReplayKey(actorID string) string { return ActorLogActorPrefix(actorID) + "replay" }

// ParseActorLogKey splits a key made by ActorLogKey.
func ParseActorLogKey(key string) (actorID string, index uint64, err error) {
	rest, ok := strings.CutPrefix(key, ActorLogPrefix)
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 2 || parts[0] == "" || len(parts[1]) != 20 {
		return "", 0, fmt.Errorf("gcs: %q is not an actor log key", key)
	}
	index, err = strconv.ParseUint(parts[1], 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("gcs: %q is not an actor log key: %w", key, err)
	}
	return parts[0], index, nil
}

// ActorNameKey is the key of a named actor in a namespace.
func ActorNameKey(namespace, name string) string { return ActorNamesPrefix + namespace + "/" + name }

// CheckpointPrefix is the prefix of an actor's checkpoint parts.
func CheckpointPrefix(actorID string) string { return CheckpointsPrefix + actorID + "/" }

// CheckpointVersionPrefix is the prefix of the parts of the checkpoint taken after log
// index index.
func CheckpointVersionPrefix(actorID string, index uint64) string {
	return fmt.Sprintf("%s%s/%020d/", CheckpointsPrefix, actorID, index)
}

// CheckpointKey is the key of one part of a checkpoint.
func CheckpointKey(actorID string, index uint64, part int) string {
	return fmt.Sprintf("%s%06d", CheckpointVersionPrefix(actorID, index), part)
}

// TrimKey returns the part of key after prefix (for example the node ID of a key under
// NodesPrefix), and whether key had that prefix.
func TrimKey(prefix, key string) (string, bool) { return strings.CutPrefix(key, prefix) }
