// Package cli is rayctl, the command line of ray-go, on github.com/urfave/cli/v2: one file
// per command group (start.go, stop.go, status.go, memory.go, job.go, list.go: the state API's
// list and get), app.go for the shared flags,
// address resolution and exit codes, session.go for this machine's agent directories.
// cli/rayctl is the main package. Nothing imports cli (a leaf; internal/archtest checks).
//
// # Commands
//
//	rayctl start --head [--host 127.0.0.1] [--port 6379] [--join-port 6380]
//	           | --address HOST:PORT[,HOST:PORT] [--token T | --token-file F] [--join-address H:P]
//	             [--insecure] [--gcs-ca F --gcs-cert F --gcs-key F] [--num-cpus N] [--num-gpus N] [--resources '{"accel":2}']
//	             [--object-store-memory 2GiB] [--spill-dir DIR] [--session-dir /tmp/ray-go]
//	             [--gcs-endpoints a:2379,b:2379] [--namespace NS] [--block]
//	rayctl stop [--force] [--session-dir DIR]
//	rayctl status [--address A] [-o text|json]   (nodes, resources, jobs, and Demands: what waits for resources)
//	rayctl memory [--address A] [-o text|json]
//	rayctl job submit [--address A] [--no-wait] [--working-dir D] [--env K=V]... -- PROGRAM [ARGS...]
//	rayctl job list [-o json]
//	rayctl job status ID [-o json]   (ID: the submission's or its job's)
//	rayctl job logs ID [--follow]
//	rayctl job stop ID [--no-wait]
//	rayctl token show|rotate [--session-dir DIR]
//	rayctl cert list [--address A] [-o table|json|yaml]
//	rayctl cert revoke SERIAL [--address A] [--force]
//	rayctl list nodes|jobs|actors|placement-groups|workers|tasks|objects [--address A] [-o table|json|yaml] [--filter FIELD=VALUE|FIELD!=VALUE]... [--limit 100]
//	             (nodes: the agents, role head or agent, ALIVE or DEAD, and the drivers joined to the
//	             cluster, role driver: ALIVE, UNREACHABLE once their lease lapsed, with last_heartbeat and
//	             silent_seconds, DEAD with death_reason for an hour after their job was failed; jobs: the
//	             driver_state of running jobs and of jobs whose driver was lost)
//	rayctl get node|job|actor|placement-group|worker|task|object ID [--address A] [-o yaml|json]   (ID: the whole ID or at least 6 of its first characters)
//	rayctl summary nodes|jobs|actors|placement-groups|workers|tasks|objects [--address A] [-o table|json|yaml]   (actors by class, tasks by function, objects by reference type, and state; the others by state)
//	rayctl logs task|actor ID | worker NODE_ID|PID [--node AGENT] | job ID [--tail 1000] [--follow] [--address A]   (logs.go)
//	rayctl logs actor ACTOR_ID --calls N | actor CALL_TASK_ID   (an actor's output per call; one call's)
//	rayctl list objects --detail   (adds call_site: where each object was created, with RAY_record_ref_creation_sites=1)
//	  (--filter on an enum field, e.g. state, type, reference_type, strategy, or a true/false one, takes its value in
//	  any case and refuses a value the field never has, listing those it has: listfilter.go)
//	rayctl --version
//
// Every ID a command takes (get, logs, job status|logs|stop, timeline --job, list's --filter on
// an ID field: job_id, node, node_id, actor_id, task_id, object_id, placement_group_id, ...; the
// dashboard's job filter and job logs too) may be the whole ID or at least 6 of its first
// characters (clusterstate.MatchID); a prefix of several IDs is refused, naming them, and a
// filter's prefix of none too, saying which list shows the IDs (idfilter.go). job
// status|logs|stop and logs job take a submission's ID or its job's.
//
// Two kinds of node ID: `list nodes` shows the machines (agents) and the drivers; tasks,
// actors and objects name the worker process of their job that ran or holds them (an agent
// starts one per job on its machine; ray.NodeID, NodeAffinity and ray.Nodes use these IDs).
// `get node` of a worker process's ID prints its machine's record with the worker process's
// own fields (pid, job, address, object store) under worker_process (of one that exited,
// an ended job's: what its agent's record says, state EXITED, exit, message, log path), and `list nodes
// --filter node_id=` of one keeps its machine's row (workernode.go). An actor's record
// names its worker process's machine too (agent_id, while that process runs; the
// dashboard's actors page shows it on the node). `list workers` (Ray's `ray list workers`)
// lists the worker processes by that ID (worker_id) with their job, agent, pid, state
// (the agent's record: STARTING, RUNNING, UNSUPPORTED, EXITED with how it exited) and the
// drivers (worker_type DRIVER; ALIVE, UNREACHABLE or DEAD).
//
// In the tables of list, summary, cert list and job list, a value's newlines, carriage returns and
// tabs (a task's error, a job's message) are written as \n, \r and \t, so that each record is one
// line; -o json and -o yaml print values as they are.
//
// status, memory, job, cert, list, get, summary and logs take the credential flags too: --token, --token-file,
// --join-address, --insecure, --gcs-ca, --gcs-cert, --gcs-key.
//
// Every flag also reads an environment variable: RAY_GO_HEAD, RAY_GO_HOST, RAY_GO_PORT,
// RAY_GO_ADDRESS (and RAY_ADDRESS), RAY_GO_NUM_CPUS, RAY_GO_NUM_GPUS,
// RAY_GO_CUSTOM_RESOURCES, RAY_GO_OBJECT_STORE_MEMORY, RAY_GO_SESSION_DIR,
// RAY_GO_GCS_ENDPOINTS, RAY_GO_GCS_NAMESPACE, RAY_GO_BLOCK, RAY_GO_FORCE, RAY_GO_OUTPUT,
// RAY_GO_NO_WAIT, RAY_GO_WORKING_DIR, RAY_GO_JOB_ENV (one KEY=VALUE), RAY_GO_FOLLOW,
// RAY_GO_TOKEN, RAY_GO_TOKEN_FILE, RAY_GO_JOIN_ADDRESS, RAY_GO_JOIN_PORT, RAY_GO_INSECURE,
// RAY_GO_GCS_CA, RAY_GO_GCS_CERT, RAY_GO_GCS_KEY.
// (--resources reads RAY_GO_CUSTOM_RESOURCES: RAY_GO_RESOURCES is the worker-process
// variable of internal/base/workerenv.) Flags given after the ID of job status, logs and stop,
// and after the arguments of list, get, summary and logs, are accepted too.
//
// # start
//
// `start` runs the node agent (internal/assembly/agent) of this machine. With --head it starts a new
// cluster: an embedded etcd on --host:--port (default 127.0.0.1:6379) is the GCS, or, with --gcs-endpoints, an
// external etcd cluster is. With --address it joins the cluster whose GCS is there. Without
// --block, rayctl starts itself again with --block as a daemon (a new session, output to
// the agent's logs/agent.log), waits up to 60 s for it to write agent.json (ready: ID,
// pid, address) or agent.err (failed: message and exit code), prints the address and
// `export RAY_ADDRESS=...`, and exits. Each agent has its own directory under the session
// dir, agent-<agentID>/, holding agent.pid, agent.json, logs/, workers/ and (head) gcs/.
//
// `stop` finds this machine's agents by their pid files, checks that each pid is still a
// rayctl agent of that directory (/proc/<pid>/cmdline), so a recycled pid is never
// signalled, sends SIGTERM (joined agents before heads, which hold the GCS), waits up to
// 10 s each, then SIGKILL. Stale pid files are removed.
//
// `memory` prints every node's object store (in memory, spilled, objects, spill errors and
// its largest objects with their owners) from the nodes' load reports (load/<node>), which
// they refresh every second while it changes, and the drivers' (driverload/<node>, ROLE
// driver with its job: what a driver Put and its tasks' results live in its own store);
// the totals count both. ray.Memory gives the same from a program, and `status`'s
// "Object store used" line the same total (its budget: the alive agents' and drivers').
//
// # Security
//
// A cluster is secure unless its head was started with --insecure (which prints a
// warning; for benchmark baselines). `start --head` creates the cluster CA and the join
// token in the agent's ca/ directory (0700, files 0600; see internal/base/identity), serves
// the embedded etcd with mutual TLS, serves the join endpoint on --join-port (default
// --port + 1) and prints the token with how to join. An agent that joins passes the token
// (--token, RAY_GO_TOKEN or --token-file; the background agent gets it through its
// environment, not its command line) and receives a certificate, kept in its tls/
// directory; the processes it starts get those files. status, memory and job use, in this
// order: --insecure, --gcs-ca/--gcs-cert/--gcs-key, a token (a short-lived client
// certificate from the head, kept in the user's cache directory for the next commands:
// clientcert.go), or the credentials of an agent of this machine whose address
// is the cluster's (so on the head's machine no token is needed). Without any: exit 4 when
// nothing answers at the address (a stopped cluster, a wrong port) or an HTTP server does (the
// dashboard's or a metrics port given as the GCS's) or the head's join endpoint does (its
// port given as the GCS's: the error names the GCS address), else exit 8 and what to pass.
// `token show` prints the head's token (run by a user who may not read the head's files,
// exit 8 naming what it could not read and whose it is); `token rotate` replaces it (the join
// endpoint reads the file per request: the old token is refused at once, certificates
// already issued stay valid). `cert list` prints the certificates the head issued (its
// certs/ records) and `cert revoke` revokes one (revoked/<serial>): nodes refuse it at their
// next handshakes, and so does the head's embedded etcd (its CRL), which also refuses the
// next request of a connection the certificate has open (the head deletes its GCS user).
// What credentials may do in the GCS is identity's role table: the head's (on its machine)
// everything; the token's client certificate reads and submits or stops jobs; another
// agent's node certificate reads, and neither submits, stops, nor revokes. A request the
// GCS refuses to these credentials exits 8 saying which are needed (denied). With
// --gcs-endpoints the external etcd's own credentials (--gcs-ca, --gcs-cert, --gcs-key) are
// needed by every agent and client instead of the token.
//
// # Address
//
// status and job find the cluster through --address, else RAY_ADDRESS, else agent.json of
// an agent running on this machine (a head's first).
//
// # Jobs
//
// `job submit` resolves the program to an absolute path (searching PATH for a bare name)
// and checks it is an executable file, ships it and --working-dir (packed with tar+zstd)
// through the GCS by sha256 (package internal/base/ship, jobship.go), records a Submission
// (submissions/<id>, PENDING) that the head agent runs, prints the submission ID and streams
// the driver's output from the GCS (joblogs/<id>/..., see internal/assembly/agent) until it
// ends. The head runs the program from its own path when the file there has the same hash,
// else from its verified copy; a program given as a relative path with a slash inside
// --working-dir runs from the unpacked directory. The driver starts in the head's unpacked
// copy of --working-dir (default: a new empty directory), removed when it ends. The job's
// namespace of named actors is its program's ray.WithNamespace, else --env
// RAY_GO_JOB_NAMESPACE=NS, else an anonymous one of its own (--namespace is the GCS key
// namespace, another thing).
//
// # Exit codes
//
//	| code | meaning                                                            |
//	|------|--------------------------------------------------------------------|
//	| 0    | success (job submit: the job SUCCEEDED)                            |
//	| 1    | bad usage, or any other error                                      |
//	| 3    | start --head: the GCS port is already in use                       |
//	| 4    | the GCS did not answer at the address (no cluster there; an HTTP server there, the dashboard's port?) |
//	| 5    | nothing running: stop found no agent, no address could be found, no head agent is alive to run a submission, or (logs) the agent of the process whose log was asked for is not running |
//	| 6    | job submit: the job ended FAILED                                   |
//	| 7    | job submit: the job ended STOPPED                                  |
//	| 8    | no credentials for a secure cluster, or they were refused (a wrong or rotated token, another cluster's certificate, a revoked one, --insecure against a secure cluster, a request these credentials' role may not make) |
//
// Messages go to stderr, prefixed "rayctl: ", and say what to do.
package cli
