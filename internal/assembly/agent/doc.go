// Package agent is the node agent: the process `rayctl start` runs, one per machine
// (DESIGN §1). It holds no cluster state of its own; everything it knows and says goes
// through the GCS (gcs.Store), so agents, drivers and worker processes on any machine
// agree on it.
//
// # What an agent does
//
//   - The head agent (Config.Head) runs the GCS: an embedded single-member etcd on
//     127.0.0.1:GCSPort with data in <SessionDir>/gcs, and a gcs.Compactor on it; or, with
//     GCSEndpoints, it uses that external etcd. A taken port fails Start with ErrPortInUse
//     (checked by binding the port first: etcd's own error does not say which port). Other
//     agents join with GCSEndpoints; an endpoint that does not answer fails Start with
//     ErrGCSUnreachable naming it. Address() is what RAY_ADDRESS takes.
//   - Records: agents/<id> = pb.AgentInfo (kept after the agent stops, so dead nodes show)
//     and agentalive/<id> on a lease of AliveTTL (6 s) kept alive, and put again under a
//     new lease if the lease is lost (the GCS was unreachable longer than the TTL; attempts
//     at most 2 s apart, each waiting for the GCS connection, which etcdstore reconnects at
//     most 2 s apart: an agent is back within seconds of a restarted head). A node
//     is dead when it has an agents/ record and no agentalive/ key. Stop revokes the lease,
//     so the key goes at once.
//   - Worker processes (workers.go): for each job whose jobs/<job> record is RUNNING and
//     whose jobalive/<job> key exists, one worker process of the job's binary on this
//     machine. The binary must be for this GOOS/GOARCH. It runs from JobInfo.executable when
//     the file there has the job's sha256 (hashes are cached per path, size and mtime);
//     otherwise (executable.go) a goroutine of the manager fetches it from the GCS by hash
//     (the driver holds it there, package internal/base/ship), verifies it and caches it in
//     <SessionDir>/bin/<sha256> (0700, hashed again before every use, least recently used
//     evicted beyond Config.BinCacheBytes, those in use kept), and the worker runs from
//     there. When the platform differs or the fetch fails (missing, damaged, another hash)
//     the agent records jobworkers/<job>/<agent> UNSUPPORTED with the reason, starts
//     nothing, and fetches again after fetchRetry.
//     The process gets the agent's environment (less the worker-contract variables) plus
//     workerenv.Worker.Environ(): worker mode, job, agent, address, resources, object store
//     budget and its directory <SessionDir>/workers/<job>; its output is appended to
//     <SessionDir>/logs/worker-<job>.log; it runs in its own process group (a signal
//     reaches what it starts) with Pdeathsig, so a crashed agent leaves no worker behind.
//     An agent started again (the same ID, on its session dir) first marks EXITED its own
//     records that an earlier run left STARTING or RUNNING ("the agent restarted; its
//     worker process (pid N) from before was gone": markStale), since nothing else would.
//     The agent records it STARTING (a transaction on the key's previous revision, so the
//     worker's own RUNNING record, written by ray.Init in worker mode, is never replaced by
//     STARTING). A worker that exits while its job runs is recorded EXITED with its status
//     and restarted after a backoff (0.5 s, 1 s, 2 s), at most 3 times a minute. When the
//     job ends (a terminal state, the jobs/ key deleted, or the jobalive/ key gone) the
//     group gets SIGTERM, SIGKILL after 5 s; the directory is removed and the record says
//     EXITED. Detached actors outlive their job: while an actors/ record of the job says
//     detached and not dead (a third mirror, of the actor table), the job's worker process
//     is kept, and restarted as above if it exits, whatever the job's state; it is stopped
//     once the last of them is dead (the job record is left as the driver wrote it). Before
//     it stops an ended job's worker, the manager reads the actor table itself (the
//     mirrors are separate watches, and the actors one can trail the jobs one).
//   - Spilling: with Config.SpillDir (rayctl start --spill-dir) the agent makes its own
//     directory there, ray-go-agent-<ID> (shard.OpenSpillDir: locked while it runs,
//     emptied when a restart of the same agent finds what a killed run left), passes it
//     to its worker processes (workerenv.SpillDir) and to the drivers of submissions it
//     runs (unless the submission's environment sets its own), whose nodes each spill in a
//     ray-go-spill-<node> directory of their own in it, and removes it in Stop after the
//     worker processes; nothing else in SpillDir is touched. Without it they spill under
//     their directory <SessionDir>/workers/<job>.
//   - The machine's resources (machine.go): the agent holds Config.Resources in a
//     machine ledger (package tasks/machine) served on <SessionDir>/machine.sock (0600;
//     a 0700 directory under the temporary directory when that path is too long for a
//     socket) and gives its path to every worker process it starts (workerenv.Machine).
//     Their raylets obtain what they grant there, so the jobs on the machine share its
//     CPUs: two jobs on 2 CPUs run at most 2 CPUs of tasks between them. The ledger also
//     holds Config.ObjectStoreBytes, which their object stores share: each holds a grant
//     of it (objects/shard Grant) and spills beyond it, so the machine's worker processes
//     together keep at most that in memory, however many jobs run. A worker process
//     that exits gives back what it held (its connection closes). Stop closes the ledger
//     after the worker processes.
//   - The head also fails orphaned jobs: a RUNNING job whose jobalive/ key was seen
//     deleted (or has been missing for 2×AliveTTL) and whose driver is surely gone
//     (driverprobe.go: its address, JobInfo.driver_address, refuses connections, or
//     confirmGrace more has passed: a stopped or starved driver writes its key again, and
//     every agent keeps the job's worker processes until then too) becomes FAILED with
//     DriverExitedMessage, by a transaction that holds only if the job record did not
//     change and the jobalive key did not come back. A job run by a submission takes the
//     submission's outcome instead when it has one (STOPPED when a stop was requested).
//   - The head records lost drivers (driverlost.go): when the jobalive/ key of a RUNNING
//     job goes (its driver's lease lapsed: SIGSTOP, a hang, a cut network, or an exit not
//     yet confirmed) it writes driverlost/<job> (DriverLost, JSON): the state API shows
//     the driver UNREACHABLE with about when it last renewed its lease. The record is
//     deleted if the key comes back (the driver is ALIVE again, its job ran on), and says
//     DEAD, when and why, once the job is failed (a driver that stayed silent though its
//     address accepted connections: "job driver lost", driverLostMessage; one whose address
//     refused them: DriverExitedMessage). Dead records are kept an hour, at most 100.
//   - The head ends the actors of a dead driver (ownerdeath.go): the non-detached actors
//     that are not dead of a job that ended, whose owner is the job's driver
//     (JobInfo.driver_address), are stepped lifecycle.OwnerDied. The job's own actor
//     managers would step them when the driver's lease lapses, but they live in its worker
//     processes, which stop when the job ends: at once for a submission's driver that
//     exited (settleJob).
//   - Submissions (head only, submissions.go): a PENDING submissions/<id> is claimed
//     (RUNNING, by a transaction on its revision, so two heads never both run it) and its
//     argv run (prepare: the shipped --working-dir fetched, verified and unpacked into
//     <SessionDir>/submissions/<id>/wd, a new empty one when none was shipped, removed when
//     the driver ends; the shipped program run from its path when the head has the same
//     file there, else from the verified cache) in its working directory with the agent's
//     environment, its env, RAY_ADDRESS
//     and RAY_GO_SUBMISSION_ID; output to <SessionDir>/logs/job-<id>.log. The outcome:
//     SUCCEEDED (exit 0), FAILED (exit code, message), STOPPED (stop_requested: the driver
//     is asked to archive its task records, for up to 3 s (archiveDriver), then SIGTERM to
//     the group, SIGKILL after 5 s; or the head agent stopped). When the driver registers
//     its job (JobInfo.submission_id), the submission's job_id is filled in. One truth:
//     when the driver's process has exited, its job record is given the submission's
//     state and message (settleJob) before the submission's are written, so a stopped
//     driver is STOPPED in both tables, never FAILED "driver process exited without
//     calling ray.Shutdown" in the job table. Then a driver that left its node record
//     behind (no ray.Shutdown) is recorded DEAD (driverlost/) and its lease revoked
//     (driverExited): it is not listed ALIVE, nor asked by the state API, until its lease
//     would have lapsed. A head that starts fails the submissions it
//     finds RUNNING (their drivers died with the head that ran them) once no other head is
//     alive, looking again every second while one is (failOrphans).
//
// # Security (security.go)
//
// Unless Config.Insecure, a head with an embedded GCS loads its CA and join token from
// <SessionDir>/ca (creating them the first time; 0700, files 0600), issues itself a head
// certificate for 127.0.0.1 and Host, saves it in <SessionDir>/tls, serves the embedded etcd
// with mutual TLS on those files and serves the join endpoint (identity.ServeJoin) on
// JoinAddress, by default Host:GCSPort+1; the endpoint reads the token file per request, so
// replacing it rotates the token. A joining agent presents Config.Token to the join endpoint
// (JoinAddress, by default the first GCS endpoint's port + 1) and saves the certificate it
// gets in <SessionDir>/tls; with GCSFiles (an external etcd's PKI) it uses those instead. A
// head on an external etcd needs GCSFiles. Worker processes get the agent's credential files
// through workerenv (RAY_GO_GCS_CA, _CERT, _KEY), never the CA key; a secure head with an
// embedded GCS gives its worker processes a driver certificate of their own instead
// (<SessionDir>/tls-jobs, issued at each start, the earlier start's revoked:
// retireReplacedHeadCerts): the head's certificate is the GCS's administrator. Each
// submitted driver gets a short-lived driver certificate of its own, renewed at the join
// endpoint and forgotten when the driver exits (submissionRunner.driverCreds).
// Missing credentials fail Start with ErrNoCredentials, refused ones with ErrCredentials,
// each saying what to pass. Credentials refused later (this agent's certificate revoked on
// the head) stop a joined agent: when registering again fails, etcdstore's Store.Refused
// tells a refusal (a handshake the GCS refuses, or requests it denies) from an outage, and
// the agent logs once what happened and how to rejoin (Config.Rejoin), stops, and Err
// says why (wrapping ErrCredentials; `rayctl start` exits with it). Started again
// without a token, it tries its last run's certificate (TLSDir) first: refused, Start
// fails with ErrCredentials saying it was revoked and how to rejoin, not with
// ErrNoCredentials. A GCS address where the head's join endpoint answers fails Start
// with ErrJoinEndpoint, naming the GCS address.
//
// The head records every certificate it issues in the GCS, its own and the join
// endpoint's (certs/<serial>, recordCert; a join whose record cannot be written is
// refused), for `rayctl cert list`. It starts its embedded etcd with a CRL file
// (CRLPath: <SessionDir>/ca/ca.crl, empty on a first start: etcd reads it at every
// handshake and refuses all while it cannot) and rewrites that file, signed by the CA,
// whenever the GCS's revoked/ records change (writeCRLs): a certificate revoked with
// `rayctl cert revoke` cannot open a GCS connection any more. Nodes refuse revoked peers
// themselves (internal/assembly/node).
//
// Authorization (gcsauth.go): the head starts its embedded GCS with etcdstore's Auth and
// turns etcd's auth on (enableAuth: the roles of identity's GCS role table in the cluster's
// namespace), and gives every certificate it records a GCS user (its common name) with the
// etcd role of its role, at the join (recordCert: the record, then the user; a failure
// refuses the join). syncUsers makes the users match the records at start (certificates
// issued before a restart, or before users existed), after every change of revoked/ (the
// user of a revoked certificate is deleted: its open GCS connections are refused at their
// next request) and every Config.CertCollectEvery (10 minutes: users of expired
// certificates go). Each of these rounds also collects (collectCertsOnce, at most
// collectPerRound deletions) the records of certificates expired for longer than
// Config.CertRetention (an hour): their user, certs/<serial>, and revoked/<serial> of a
// revoked one (kept at least identity.ClockSkew past its expiry; kept for good when its
// expiry is unknown). So the GCS holds the certificates in use and the recently expired,
// however many drivers and rayctl commands came and went; a revoked certificate stays
// refused until it expires, after which its expiry refuses it. A driver's certificates
// (its own, from the token: the first and its renewals share a user) go with the driver,
// not at their expiry (releaseDriver: the records, then the user): when the driver gives
// its certificate up at the join endpoint after its node stopped (JoinPolicy.Release,
// which ray.Shutdown calls), and when the head fails the job of a driver whose process is
// gone, nothing listening at its address (failOrphan; JobInfo.driver_user names the user),
// unless a job running with a live driver names the same user. A driver only stopped, hung
// or cut off keeps its certificate until it expires: resumed, it must reach the GCS to
// learn that its job failed. Never a certificate of another role, nor the head's own
// processes' (head-<id>-jobs).
//
// # Metrics (metrics.go)
//
// Unless Config.MetricsPort is MetricsOff, an agent serves Prometheus's GET /metrics on
// Host:MetricsPort (0: a free port; with MetricsPortFallback a taken port falls back to a
// free one, else Start fails with ErrPortInUse) and records where in
// AgentInfo.metrics_address. The collector (package internal/assembly/metrics) reads
// everything at scrape time: the machine, the load reports of this agent's worker
// processes and, on the head, the actor table, the task counts of every process (a
// taskstate gather, at most 3 s) and the embedded etcd's disk and size metrics. The
// agent's GCS client is timed (ray_gcs_storage_operation_latency_ms). The endpoint is
// plain HTTP without authentication, as Ray's: read-only (other methods get 405), and it
// shows counts, sizes and names, never environments, logs, keys or the token. At most 4
// scrapes are served at once, and scrapes less than a second apart share one gather.
//
// # Dashboard (dashboard.go)
//
// A head with Config.NewDashboard (the CLI passes package internal/assembly/dashboard's;
// it ranks above this package) serves the web dashboard on Host:DashboardPort (0: a free
// port; DashboardPortFallback as for metrics; a taken port fails Start with
// ErrDashboardPortInUse, an ErrPortInUse) and records where in
// AgentInfo.dashboard_address. It gets the agent's GCS client, the /metrics handler and
// Gatherer (built once, shared with the metrics endpoint) and the join token's file, which
// it asks every request for; on an insecure cluster it asks for none, and a secure head on
// an external etcd (no join token) serves no dashboard. Its sampling goroutine starts
// once the agent's records are in the GCS.
//
// # Job logs in the GCS
//
// A submission's output is readable from any machine: a publisher tails the log file and
// puts what is new every LogFlushInterval (200 ms) as chunks of at most LogChunkBytes
// (64 KiB) under joblogs/<submissionID>/<seq> (20 digits, from 1). At most LogMaxBytes
// (32 MiB) stay there: the first LogHeadBytes (8 MiB) and a rolling tail of the newest
// rest, whose oldest chunks are deleted as newer ones come, with a note (the seq after the
// head's) saying how many bytes were omitted and where the whole log is; so the end of the
// output, a failing driver's error, is always kept. joblogs/<id>/end (LogEnd, JSON) is
// written in the same transaction as the final state, so a reader that sees it has all
// chunks and the outcome. ReadLog prints and follows them. This key family belongs to
// this package (internal/base/gcs/keys.go does not list it).
//
// # Worker logs on request (logserve.go)
//
// Every agent watches logreq/ and answers the requests addressed to it (`rayctl logs`):
// a piece of the log of its worker process for a job, <SessionDir>/logs/worker-<job>.log,
// from an offset (with Max, a range: `rayctl logs task` asks for the range a task's output
// took, which its worker recorded, internal/assembly/core TaskEvent.LogStart/LogEnd) or its
// last lines, at most LogReadMax (1 MiB) an answer, put at
// logreply/<id> on the asker's lease (ReadWorkerLog asks, reads and revokes it). The request
// names a job, never a path: the job ID must be a plain name (checkID) and the file a regular
// file. Whoever can write the GCS can ask: its mutual TLS is the access control. One request
// at a time per agent. This key family belongs to this package, as joblogs/ does.
//
// # Worker output to the driver (workerout.go)
//
// Ray's log_to_driver: a driver that wants its job's worker output (the default; ray
// package's WithLogToDriver) puts workerout/want/<job> on a lease of its own
// (FollowWorkerOutput). Every agent watches those keys and, every WorkerOutInterval
// (100 ms), reads what its worker process of each such job appended to the job's log file
// since it last looked and puts it, whole lines of at most WorkerOutBatch (128 KiB), with
// the process's pid and the agent's host, under workerout/lines/<job>/<agent> on its
// liveness lease; the driver watches that prefix and writes each line, prefixed, to its
// stderr. The runtime's own records below ERROR are left out. Bounded: the file may run at
// most WorkerOutBacklog (1 MiB) ahead of what was sent (beyond, the lines are skipped and
// counted), the driver queues at most WorkerOutQueue (4 MiB) for its stderr (beyond,
// counted), and neither blocks anything else. When the want key goes the agent deletes its
// key. This key family belongs to this package too.
//
// # Ownership
//
// Start starts: the metrics server and, on a head, the dashboard's server and its
// sampling loop (the servers' goroutines end when Stop shuts them down),
// keepAlive (the lease), the log server (serveLogs), the worker output forwarder
// (forwardWorkerOutput, with its watch of the want keys), the worker manager's run loop (owning all worker
// state; two list-then-watch mirrors feed it jobs/ and jobalive/, re-listing after a
// failed or compacted watch) and, on the head, the submission runner's loop (with one
// goroutine per running submission and its log publisher). All stop when Stop cancels the
// agent's context; Stop waits for them, and they end every child process first. Each
// child has a reaper goroutine that ends with the child. Every GCS call is bounded
// (5 s).
package agent
