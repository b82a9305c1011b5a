package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/internal/base/workerenv"
)

// Worker-process policy.
const (
	// stopGrace is how long a process gets between SIGTERM and SIGKILL.
	stopGrace = 5 * time.Second
	// restartWindow and maxRestarts: a crashing worker is restarted at most maxRestarts
	// times per restartWindow, after restartBackoff << (restarts in the window).
	restartWindow  = time.Minute
	maxRestarts    = 3
	restartBackoff = 500 * time.Millisecond
	// orphanGrace is how long the head waits before failing a RUNNING job that has no
	// jobalive key and never had one while this agent watched (the driver may write the
	// two keys separately; a lost key seen being deleted fails the job at once).
	orphanGrace = 2 * AliveTTL
	// reregisterGrace is how long the head waits before failing a RUNNING job whose
	// jobalive key went (its driver's lease expired), and every agent before stopping the
	// job's worker process: a driver that is alive takes a new lease and writes the key
	// again (node.keepLease) after a GCS outage longer than the lease, within a second or
	// two of the GCS answering again; a killed driver does not.
	reregisterGrace = AliveTTL
	// tick is how often the manager looks at its processes (exits, kill deadlines,
	// restart backoffs).
	tick = 200 * time.Millisecond
)

// DriverExitedMessage is the message of a job the head marks FAILED because its driver's
// jobalive key vanished.
const DriverExitedMessage = "driver process exited without recording its end (it did not call ray.Shutdown, or the GCS did not answer when it did)"

// workerManager runs one worker process per running job on this agent. One goroutine, run,
// owns all of its state; two mirrors feed it the jobs/ and jobalive/ tables.
type workerManager struct {
	a       *Agent
	updates chan tableUpdate

	loaded    map[string]bool // prefix -> its first list arrived
	jobs      map[string]jobRec
	alive     map[string]bool
	aliveGone map[string]time.Time       // jobalive key seen deleted (or gone at a re-list), when
	orphanAt  map[string]time.Time       // head: RUNNING job without jobalive since
	linked    map[string]bool            // head: submission job_id filled in
	detached  map[string]map[string]bool // job -> its detached actors that are not dead
	actorJob  map[string]string          // those actors' keys (and owned's) -> their job
	// Head only (ownerdeath.go): job -> its non-detached actors that are not dead -> their
	// owner's address; and the keys of those whose OwnerDied step was started, when.
	owned   map[string]map[string]string
	ending  map[string]time.Time
	enders  sync.WaitGroup // the goroutines that step them
	workers map[string]*worker
	hashes  hashCache
	bins    map[string]*binFetch // executables resolved through the cache, by sha256
	fetched chan binResult
	fetches sync.WaitGroup // fetch goroutines
	probes  driverProbes   // whether drivers whose jobalive key went still listen (driverprobe.go)
	// Head only (driverlost.go): jobs whose driverlost/ record this head wrote (true: the
	// driver is recorded dead), and when the records were last pruned.
	lost       map[string]bool
	lostAt     map[string]int64 // when their alive key went (unix ms)
	lostPruned time.Time
	// Head only (deadactors.go): the dead actors' records, and when they were last pruned.
	dead       map[string]deadActor
	deadPruned time.Time
	// staleDone: the records of the worker processes an earlier run of this agent left
	// STARTING or RUNNING were marked EXITED (markStale).
	staleDone bool
	// unwritten: the EXITED records of worker processes that could not be written (the GCS
	// was down), by job: written again at every tick until they are, unless a newer record
	// of the job's worker here was written meanwhile.
	unwritten map[string]exitRec
}

type jobRec struct {
	info   *pb.JobInfo
	modRev int64
}

// worker is this agent's worker process for one job.
type worker struct {
	job         string
	sum         string    // sha256 of the executable p runs
	p           *proc     // nil while none runs
	stopping    bool      // the job ended: p got SIGTERM
	killAt      time.Time // SIGKILL p if still running then
	unsupported string    // the reason last recorded with UNSUPPORTED
	started     bool      // started at least once
	restarts    []time.Time
	notBefore   time.Time // next (re)start not before
}

func newWorkerManager(a *Agent) *workerManager {
	return &workerManager{
		a:         a,
		updates:   make(chan tableUpdate, 16),
		loaded:    map[string]bool{},
		jobs:      map[string]jobRec{},
		alive:     map[string]bool{},
		aliveGone: map[string]time.Time{},
		orphanAt:  map[string]time.Time{},
		linked:    map[string]bool{},
		detached:  map[string]map[string]bool{},
		actorJob:  map[string]string{},
		owned:     map[string]map[string]string{},
		ending:    map[string]time.Time{},
		lost:      map[string]bool{},
		lostAt:    map[string]int64{},
		dead:      map[string]deadActor{},
		workers:   map[string]*worker{},
		hashes:    hashCache{},
		bins:      map[string]*binFetch{},
		fetched:   make(chan binResult),
	}
}

func (m *workerManager) run(ctx context.Context) {
	defer m.a.wg.Done()
	mctx, cancel := context.WithCancel(ctx)
	var mwg sync.WaitGroup
	for _, prefix := range []string{gcs.JobsPrefix, gcs.JobAlivePrefix, gcs.ActorsPrefix} {
		mwg.Add(1)
		go func() {
			defer mwg.Done()
			mirror(mctx, m.a.store, prefix, m.updates, m.a.log)
		}()
	}
	defer func() {
		cancel()
		mwg.Wait()
		m.fetches.Wait()
		m.probes.wg.Wait()
		m.enders.Wait()
	}()
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			m.shutdown()
			return
		case u := <-m.updates:
			m.apply(u)
		case r := <-m.fetched:
			m.fetchDone(r, time.Now())
		case <-t.C:
		}
		if m.loaded[gcs.JobsPrefix] && m.loaded[gcs.JobAlivePrefix] && m.loaded[gcs.ActorsPrefix] {
			if !m.staleDone {
				m.staleDone = m.markStale(ctx)
			}
			m.reap(ctx)
			m.rewriteExits(ctx)
			m.reconcile(ctx, time.Now())
		}
	}
}

// apply folds a table update into the manager's view.
func (m *workerManager) apply(u tableUpdate) {
	switch u.prefix {
	case gcs.JobsPrefix:
		if u.reset {
			m.jobs = map[string]jobRec{}
			for _, kv := range u.kvs {
				m.putJob(kv)
			}
		}
		for _, ev := range u.events {
			if ev.Type == gcs.EventPut {
				m.putJob(ev.KV)
			} else if id, ok := gcs.TrimKey(gcs.JobsPrefix, ev.KV.Key); ok {
				delete(m.jobs, id)
			}
		}
	case gcs.JobAlivePrefix:
		if u.reset {
			was := m.alive
			m.alive = map[string]bool{}
			for _, kv := range u.kvs {
				if id, ok := gcs.TrimKey(gcs.JobAlivePrefix, kv.Key); ok {
					m.alive[id] = true
				}
			}
			for id := range was {
				if !m.alive[id] {
					m.aliveGone[id] = time.Now()
				}
			}
		}
		for _, ev := range u.events {
			id, ok := gcs.TrimKey(gcs.JobAlivePrefix, ev.KV.Key)
			if !ok {
				continue
			}
			if ev.Type == gcs.EventPut {
				m.alive[id] = true
				delete(m.aliveGone, id)
				m.probes.forget(id)
			} else {
				delete(m.alive, id)
				m.aliveGone[id] = time.Now()
			}
		}
	case gcs.ActorsPrefix:
		if u.reset {
			m.detached, m.actorJob = map[string]map[string]bool{}, map[string]string{}
			m.owned, m.ending = map[string]map[string]string{}, map[string]time.Time{}
			m.dead = map[string]deadActor{}
			for _, kv := range u.kvs {
				m.putActor(kv.Key, kv.Value)
				m.trackDead(kv)
			}
		}
		for _, ev := range u.events {
			if ev.Type == gcs.EventPut {
				m.putActor(ev.KV.Key, ev.KV.Value)
				m.trackDead(ev.KV)
			} else {
				m.dropActor(ev.KV.Key)
				delete(m.dead, ev.KV.Key)
			}
		}
	}
	m.loaded[u.prefix] = true
}

// putActor keeps track of a job's detached actors that are not dead: the job's worker
// processes run on for them after the job ended (wanted). The head also keeps the other
// actors that are not dead, with their owners (putOwned: ownerdeath.go).
func (m *workerManager) putActor(key string, value []byte) {
	info := &pb.ActorInfo{}
	if err := proto.Unmarshal(value, info); err != nil || info.GetPhase() == int32(lifecycle.Dead) {
		m.dropActor(key)
		return
	}
	if !info.GetDetached() {
		m.dropActor(key)
		if m.a.cfg.Head {
			m.putOwned(key, info)
		}
		return
	}
	job := info.GetJobId()
	if m.detached[job] == nil {
		m.detached[job] = map[string]bool{}
	}
	m.detached[job][key] = true
	m.actorJob[key] = job
}

func (m *workerManager) dropActor(key string) {
	job, ok := m.actorJob[key]
	if !ok {
		return
	}
	delete(m.actorJob, key)
	delete(m.detached[job], key)
	if len(m.detached[job]) == 0 {
		delete(m.detached, job)
	}
	delete(m.owned[job], key)
	if len(m.owned[job]) == 0 {
		delete(m.owned, job)
	}
	delete(m.ending, key)
}

func (m *workerManager) putJob(kv gcs.KV) {
	id, ok := gcs.TrimKey(gcs.JobsPrefix, kv.Key)
	if !ok || strings.Contains(id, "/") {
		return
	}
	info, err := DecodeJob(id, kv.Value)
	if err != nil {
		m.a.log.Warn("agent: refused a job record", "key", kv.Key, "err", err)
		return
	}
	m.jobs[id] = jobRec{info: info, modRev: kv.ModRev}
}

// wanted reports whether job should have a worker process here: a detached actor of the
// job is not dead (whatever the job's state: detached actors outlive their job, and live
// in its worker processes), or it is RUNNING and its
// driver is alive, or its alive key went and the driver is not surely gone (driverGone: its
// lease expired in a GCS outage, or it was stopped or starved, and it writes the key
// again: its worker processes, and the actors and objects in them, must live on).
func (m *workerManager) wanted(job string, now time.Time) bool {
	rec, ok := m.jobs[job]
	if ok && len(m.detached[job]) > 0 {
		return true // the job's detached actors outlive it, in its worker processes
	}
	if !ok || rec.info.GetState() != pb.JobInfo_RUNNING {
		return false
	}
	if m.alive[job] {
		return true
	}
	gone, wasAlive := m.aliveGone[job]
	return wasAlive && !m.driverGone(job, rec.info, gone, now)
}

// reconcile starts the processes running jobs need and stops those of ended jobs.
func (m *workerManager) reconcile(ctx context.Context, now time.Time) {
	for job, rec := range m.jobs {
		if m.wanted(job, now) {
			m.ensure(ctx, job, rec.info, now)
		}
		if !m.a.cfg.Head {
			continue
		}
		if rec.info.GetState() == pb.JobInfo_RUNNING && !m.alive[job] {
			since, seen := m.orphanAt[job]
			if !seen {
				m.orphanAt[job] = now
			}
			gone, wasAlive := m.aliveGone[job]
			if !wasAlive { // no key seen deleted: orphanGrace from when the job was first seen without one
				if !seen {
					since = now
				}
				gone = since.Add(orphanGrace - reregisterGrace)
			}
			m.trackLost(ctx, job, rec, gone, wasAlive) // driverlost.go
			if m.driverGone(job, rec.info, gone, now) {
				m.failOrphan(ctx, job, gone)
			}
		} else {
			if _, ok := m.orphanAt[job]; ok {
				delete(m.orphanAt, job)
				m.probes.forget(job)
			}
			if dead, ok := m.lost[job]; ok && !dead {
				m.trackLost(ctx, job, rec, time.Time{}, false) // back (the record goes), or its job ended (dead)
			}
		}
		if sub := rec.info.GetSubmissionId(); sub != "" && !m.linked[job] {
			m.linkSubmission(ctx, sub, job)
		}
	}
	for id := range m.aliveGone {
		if _, ok := m.jobs[id]; !ok && !m.alive[id] {
			delete(m.aliveGone, id)
			m.probes.forget(id)
		}
	}
	for id := range m.orphanAt {
		if _, ok := m.jobs[id]; !ok {
			delete(m.orphanAt, id)
		}
	}
	for id := range m.linked {
		if _, ok := m.jobs[id]; !ok {
			delete(m.linked, id)
		}
	}
	if m.a.cfg.Head {
		m.endDriverActors(ctx, now) // ownerdeath.go
		for job := range m.lost {
			if _, ok := m.jobs[job]; !ok || m.lost[job] {
				delete(m.lost, job) // a dead driver's record is final; pruneLost ends it
				delete(m.lostAt, job)
			}
		}
		if now.Sub(m.lostPruned) >= lostDriverPrune {
			m.lostPruned = now
			m.pruneLost(ctx, now)
		}
		m.pruneDead(ctx, now) // deadactors.go
	}
	for job, w := range m.workers {
		if m.wanted(job, now) {
			continue
		}
		switch {
		case w.p == nil:
			_ = os.RemoveAll(m.workerDir(job))
			delete(m.workers, job)
		case !w.stopping:
			if _, ok := m.jobs[job]; ok && m.detachedNow(ctx, job) {
				continue // its detached actor's record had not reached the mirror yet
			}
			m.a.log.Info("agent: job ended; stopping its worker", "job", job, "pid", w.p.pid)
			w.stopping = true
			w.killAt = now.Add(stopGrace)
			w.p.signal(syscall.SIGTERM)
		case now.After(w.killAt):
			m.a.log.Warn("agent: worker did not exit after SIGTERM; killing it", "job", job, "pid", w.p.pid)
			w.p.signal(syscall.SIGKILL)
			w.killAt = now.Add(stopGrace)
		}
	}
}

// detachedNow reads the actor table itself before a job's worker process is stopped: the
// three mirrors are separate watches, and under load the actors one can trail the jobs one,
// so a job can be seen ended before its detached actor is seen at all. The read refreshes
// the mirror; it reports whether a detached actor of job is not dead. A read that fails
// changes nothing (the mirror decides, as before).
func (m *workerManager) detachedNow(ctx context.Context, job string) bool {
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	kvs, _, err := m.a.store.List(cctx, gcs.ActorsPrefix)
	if err != nil {
		return false
	}
	for _, kv := range kvs {
		m.putActor(kv.Key, kv.Value)
	}
	return len(m.detached[job]) > 0
}

// reap handles worker processes that exited.
func (m *workerManager) reap(ctx context.Context) {
	now := time.Now()
	for job, w := range m.workers {
		if w.p == nil || !w.p.exited() {
			continue
		}
		p := w.p
		w.p = nil
		if w.stopping || !m.wanted(job, now) {
			m.a.log.Info("agent: worker stopped", "job", job, "pid", p.pid, "how", p.describe())
			_ = os.RemoveAll(m.workerDir(job))
			m.putWorkerExit(ctx, job, p, "job ended; worker "+p.describe())
			delete(m.workers, job)
			continue
		}
		delay, msg := w.scheduleRestart(now)
		m.a.log.Warn("agent: worker exited while its job runs (or its detached actors live)", "job", job, "pid", p.pid, "how", p.describe(), "restart_in", delay)
		m.putWorkerExit(ctx, job, p, "worker "+p.describe()+"; "+msg)
	}
}

// scheduleRestart sets when the worker may start again: restartBackoff doubled per
// restart in the last restartWindow, and no more than maxRestarts per window.
func (w *worker) scheduleRestart(now time.Time) (time.Duration, string) {
	kept := w.restarts[:0]
	for _, t := range w.restarts {
		if now.Sub(t) < restartWindow {
			kept = append(kept, t)
		}
	}
	w.restarts = kept
	delay := restartBackoff << len(w.restarts)
	msg := fmt.Sprintf("restarting in %v", delay)
	if len(w.restarts) >= maxRestarts {
		if wait := w.restarts[0].Add(restartWindow).Sub(now); wait > delay {
			delay = wait
		}
		msg = fmt.Sprintf("restarted %d times in the last %v (the limit); next restart in %v",
			len(w.restarts), restartWindow, delay.Round(time.Second))
	}
	w.notBefore = now.Add(delay)
	return delay, msg
}

// ensure starts job's worker process unless one runs, a restart backoff holds, or this
// machine cannot run the job's binary (then it records UNSUPPORTED with the reason).
func (m *workerManager) ensure(ctx context.Context, job string, info *pb.JobInfo, now time.Time) {
	w := m.workers[job]
	if w == nil {
		w = &worker{job: job}
		m.workers[job] = w
	}
	if w.p != nil || now.Before(w.notBefore) {
		return
	}
	why := platformProblem(info)
	var path string
	if why == "" {
		if path, why = m.executable(ctx, info, now); path == "" && why == "" {
			return // being fetched
		}
	}
	if why != "" {
		// Recorded once per reason, and checked again at every tick: the binary may be
		// installed later (the hash is cached by size and mtime, so a check is a stat), or
		// a later fetch succeed.
		if w.unsupported != why {
			m.a.log.Warn("agent: cannot run the job's worker here", "job", job, "why", why)
			if m.putWorker(ctx, job, pb.JobWorker_UNSUPPORTED, 0, why) {
				w.unsupported = why
			}
		}
		return
	}
	w.unsupported = ""
	if w.started {
		w.restarts = append(w.restarts, now)
	}
	w.started = true
	if err := m.start(ctx, w, info, path); err != nil {
		m.a.log.Warn("agent: cannot start the worker", "job", job, "err", err)
		_, msg := w.scheduleRestart(now)
		m.putWorker(ctx, job, pb.JobWorker_EXITED, 0, "cannot start the worker: "+err.Error()+"; "+msg)
	}
}

func (m *workerManager) workerDir(job string) string {
	return filepath.Join(m.a.cfg.SessionDir, "workers", job)
}

func (m *workerManager) logPath(job string) string {
	return WorkerLogPath(m.a.cfg.SessionDir, job)
}

// workerLogsKept is how many logs of jobs whose worker process is not running here an
// agent keeps (the newest by time of last write; as the GCS keeps the last 100 jobs' task
// archives): one log per job was kept for ever, 225 files after 222 jobs.
var workerLogsKept = 100

// pruneWorkerLogs removes the oldest worker logs beyond workerLogsKept, of jobs whose
// worker process does not run here (and not job's, about to start). `rayctl logs` of such
// a job then says its log is gone.
func (m *workerManager) pruneWorkerLogs(job string) {
	files, _ := filepath.Glob(filepath.Join(m.a.cfg.SessionDir, "logs", "worker-*.log"))
	if len(files) <= workerLogsKept {
		return
	}
	type logFile struct {
		path string
		mod  time.Time
	}
	var ended []logFile
	for _, p := range files {
		j := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "worker-"), ".log")
		if w := m.workers[j]; j == job || w != nil && w.p != nil {
			continue
		}
		if st, err := os.Stat(p); err == nil {
			ended = append(ended, logFile{p, st.ModTime()})
		}
	}
	if len(ended) <= workerLogsKept {
		return
	}
	slices.SortFunc(ended, func(a, b logFile) int { return b.mod.Compare(a.mod) })
	for _, f := range ended[workerLogsKept:] {
		if err := os.Remove(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			m.a.log.Warn("agent: cannot remove an old worker log", "path", f.path, "err", err)
		}
	}
}

// start starts the worker process of a job and records it STARTING (unless the process
// already recorded itself RUNNING).
func (m *workerManager) start(ctx context.Context, w *worker, info *pb.JobInfo, exe string) error {
	a := m.a
	dir := m.workerDir(w.job)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	env := append(baseEnv(a.cfg.Environ), workerenv.Worker{
		Address:          a.address,
		Namespace:        a.cfg.Namespace,
		Job:              w.job,
		JobNamespace:     info.GetRayNamespace(),
		Agent:            a.id,
		Resources:        a.cfg.Resources,
		ObjectStoreBytes: a.cfg.ObjectStoreBytes,
		Dir:              dir,
		SpillDir:         a.SpillDir(),
		Machine:          a.machine.Path(),
		GCSCA:            a.procCreds.CA,
		GCSCert:          a.procCreds.Cert,
		GCSKey:           a.procCreds.Key,
		Insecure:         a.cfg.Insecure,
	}.Environ()...)
	key := gcs.JobWorkerKey(w.job, a.id)
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	prev, _, err := a.store.Get(cctx, key)
	if err != nil {
		return fmt.Errorf("read %s: %w", key, err)
	}
	argv := append([]string{exe}, info.GetArgs()...)
	if len(w.restarts) == 0 {
		m.pruneWorkerLogs(w.job) // a job's first worker process here: at most one prune per job
	}
	p, err := startProc(argv, env, "", m.logPath(w.job))
	if err != nil {
		return err
	}
	w.p, w.sum = p, info.GetSha256()
	a.workerPIDs.Store(w.job, p.pid)
	w.stopping = false
	a.log.Info("agent: started worker", "job", w.job, "pid", p.pid, "executable", exe, "log", m.logPath(w.job))
	rec := &pb.JobWorker{JobId: w.job, AgentId: a.id, State: pb.JobWorker_STARTING, Pid: int32(p.pid), LogPath: m.logPath(w.job)}
	if old, err := decodeJobWorker(w.job, a.id, prev.Value); err == nil && len(prev.Value) > 0 {
		rec.Exited = keptExits(old)
	}
	b, _ := proto.Marshal(rec)
	// Compare on what was there before the start: if the new process already put RUNNING,
	// the comparison fails and its record stays.
	if _, _, err := a.store.Txn(cctx, []gcs.Cmp{{Key: key, ModRev: prev.ModRev}}, []gcs.Op{{Kind: gcs.OpPut, Key: key, Value: b}}); err != nil {
		a.log.Warn("agent: record the worker STARTING", "job", w.job, "err", err)
	}
	return nil
}

// workerExitsKept bounds JobWorker.exited: the last worker processes of a job on this
// machine that exited, which a restart's record keeps (a process that crashes in a loop
// is restarted at most maxRestarts times per restartWindow).
const workerExitsKept = 5

// keptExits is what a record that replaces old keeps of exited processes: old's, and old
// itself if it is an EXITED record, the last workerExitsKept.
func keptExits(old *pb.JobWorker) []*pb.JobWorker {
	exits := old.GetExited()
	if old.GetState() == pb.JobWorker_EXITED {
		last := proto.Clone(old).(*pb.JobWorker)
		last.Exited = nil
		exits = append(exits[:len(exits):len(exits)], last)
	}
	if len(exits) > workerExitsKept {
		exits = exits[len(exits)-workerExitsKept:]
	}
	return exits
}

// StaleWorkerMessage begins the message of a worker record that an agent, started again,
// found STARTING or RUNNING from its earlier run and marked EXITED.
const StaleWorkerMessage = "the agent restarted; its worker process from before was gone"

// markStale marks EXITED the jobworkers/ records of this agent that say STARTING or
// RUNNING but name no process of this run: an earlier run of the agent (the same ID, on
// its session dir) wrote them, and its processes went with it (Pdeathsig), so nothing
// would ever record their end (the job may even have ended while the agent was down). A
// record changed since it was read (this run's new process registering) is left alone.
// It reports whether the records were read and every such record written.
func (m *workerManager) markStale(ctx context.Context) bool {
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	kvs, _, err := m.a.store.List(cctx, gcs.JobWorkersPrefix)
	if err != nil {
		m.a.log.Warn("agent: read the worker records", "err", err)
		return false
	}
	ok := true
	for _, kv := range kvs {
		rest, _ := gcs.TrimKey(gcs.JobWorkersPrefix, kv.Key)
		job, agentID, found := strings.Cut(rest, "/")
		if !found || agentID != m.a.id {
			continue
		}
		if w := m.workers[job]; w != nil && w.p != nil {
			continue // this run's
		}
		rec, err := decodeJobWorker(job, agentID, kv.Value)
		if err != nil || (rec.GetState() != pb.JobWorker_STARTING && rec.GetState() != pb.JobWorker_RUNNING) {
			continue
		}
		msg := StaleWorkerMessage
		if rec.GetPid() != 0 {
			msg = fmt.Sprintf("the agent restarted; its worker process (pid %d) from before was gone", rec.GetPid())
		}
		rec.State, rec.Message, rec.Exit = pb.JobWorker_EXITED, msg, "gone when the agent restarted"
		rec.ExitUnixMs = time.Now().UnixMilli()
		b, _ := proto.Marshal(rec)
		done, _, err := m.a.store.Txn(cctx, []gcs.Cmp{{Key: kv.Key, ModRev: kv.ModRev}}, []gcs.Op{{Kind: gcs.OpPut, Key: kv.Key, Value: b}})
		if err != nil {
			m.a.log.Warn("agent: mark a worker record of an earlier run EXITED", "key", kv.Key, "err", err)
			ok = false
			continue
		}
		if !done {
			continue // changed since it was read: not the earlier run's any more
		}
		m.a.log.Info("agent: marked a worker record of an earlier run EXITED", "job", job, "pid", rec.GetPid(), "was", kv.Key)
	}
	return ok
}

// putWorkerExit records that this agent's worker process p for job exited (EXITED, with
// how: JobWorker.exit, which the runtimes that had tasks there put in those tasks' errors
// and the state API reads to skip the process).
func (m *workerManager) putWorkerExit(ctx context.Context, job string, p *proc, msg string) bool {
	return m.putWorkerRec(ctx, job, pb.JobWorker_EXITED, p.pid, msg, p.describe())
}

// putWorker records the state of this agent's worker for job, keeping the node ID the
// worker recorded. It reports whether the record was written.
func (m *workerManager) putWorker(ctx context.Context, job string, state pb.JobWorker_State, pid int, msg string) bool {
	return m.putWorkerRec(ctx, job, state, pid, msg, "")
}

func (m *workerManager) putWorkerRec(ctx context.Context, job string, state pb.JobWorker_State, pid int, msg, exit string) bool {
	return m.putWorkerRecAt(ctx, job, state, pid, msg, exit, time.Now())
}

// exitRec is an EXITED record of a worker process not written yet (unwritten).
type exitRec struct {
	pid       int
	msg, exit string
	at        time.Time
}

// rewriteExits writes the EXITED records that could not be written when their worker
// processes exited (the GCS was down): `rayctl list workers` showed such a process RUNNING
// for as long as it was not, minutes after the head came back. A record of a newer process
// of the job written since supersedes one (putWorkerRecAt forgets it).
func (m *workerManager) rewriteExits(ctx context.Context) {
	for job, r := range m.unwritten {
		if w := m.workers[job]; w != nil && w.p != nil && w.p.pid != r.pid {
			delete(m.unwritten, job) // a newer process runs: its records are the job's now
			continue
		}
		if !m.putWorkerRecAt(ctx, job, pb.JobWorker_EXITED, r.pid, r.msg, r.exit, r.at) {
			return // the GCS is still down: the next tick
		}
	}
}

func (m *workerManager) putWorkerRecAt(ctx context.Context, job string, state pb.JobWorker_State, pid int, msg, exit string, at time.Time) bool {
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
	}
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	key := gcs.JobWorkerKey(job, m.a.id)
	rec := &pb.JobWorker{JobId: job, AgentId: m.a.id, State: state, Pid: int32(pid), Message: msg, Exit: exit}
	if state == pb.JobWorker_EXITED {
		rec.ExitUnixMs = at.UnixMilli()
	}
	if state != pb.JobWorker_UNSUPPORTED {
		rec.LogPath = m.logPath(job)
	}
	if kv, found, err := m.a.store.Get(cctx, key); err == nil && found {
		if old, err := decodeJobWorker(job, m.a.id, kv.Value); err == nil {
			if old.GetPid() == int32(pid) {
				rec.NodeId = old.GetNodeId()
				rec.Exited = old.GetExited()
			} else {
				rec.Exited = keptExits(old) // an earlier process's record (it exited)
			}
		}
	}
	b, _ := proto.Marshal(rec)
	if _, err := m.a.store.Put(cctx, key, b, 0); err != nil {
		if _, again := m.unwritten[job]; !again {
			m.a.log.Warn("agent: record the worker", "key", key, "state", state, "err", err)
		}
		if state == pb.JobWorker_EXITED {
			if m.unwritten == nil {
				m.unwritten = map[string]exitRec{}
			}
			m.unwritten[job] = exitRec{pid: pid, msg: msg, exit: exit, at: at}
		}
		return false
	}
	delete(m.unwritten, job)
	return true
}

// failOrphan marks a RUNNING job whose driver is gone FAILED (head only), with a
// transaction that holds only if neither the job record changed nor the jobalive key
// came back since they were read: DriverExitedMessage when its address refused
// connections (or it has none), driverLostMessage when it stayed silent though its address
// accepted them. A job run by `rayctl job submit` takes its submission's
// outcome instead when the submission has one (see settleJob; the submission runner
// settles the job itself when its driver exits later), and is STOPPED when a stop was
// requested. The driver's driverlost/ record (lapsed: when its alive key went) then says
// DEAD, with the job's message.
func (m *workerManager) failOrphan(ctx context.Context, job string, lapsed time.Time) {
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	key := gcs.JobKey(job)
	for attempt := 0; attempt < 3; attempt++ {
		kv, found, err := m.a.store.Get(cctx, key)
		if err != nil || !found {
			return
		}
		info, err := DecodeJob(job, kv.Value)
		if err != nil || info.GetState() != pb.JobInfo_RUNNING {
			return
		}
		info.State = pb.JobInfo_FAILED
		info.Message = DriverExitedMessage
		gone := true
		if info.GetDriverAddress() != "" && !m.probes.lastRefused(job) {
			info.Message = driverLostMessage(time.Since(lapsed))
			gone = false
		}
		if id := info.GetSubmissionId(); id != "" {
			if sub, err := GetSubmission(cctx, m.a.store, id); err == nil {
				switch {
				case IsTerminal(sub.GetState()):
					info.State, info.Message = sub.GetState(), sub.GetMessage()
				case sub.GetStopRequested():
					info.State, info.Message = pb.JobInfo_STOPPED, "stopped by request"
				}
			}
		}
		info.EndUnixMs = time.Now().UnixMilli()
		b, _ := proto.Marshal(info)
		ok, _, err := m.a.store.Txn(cctx,
			[]gcs.Cmp{{Key: key, ModRev: kv.ModRev}, {Key: gcs.JobAliveKey(job), ModRev: 0}},
			[]gcs.Op{{Kind: gcs.OpPut, Key: key, Value: b}})
		if err != nil {
			m.a.log.Warn("agent: mark the job FAILED", "job", job, "err", err)
			return
		}
		if ok {
			m.a.log.Warn("agent: job's driver is gone", "job", job, "state", info.GetState(), "message", info.GetMessage())
			if m.putLost(ctx, job, info, lapsed, time.UnixMilli(info.GetEndUnixMs()), info.GetMessage()) {
				m.lost[job] = true
			}
			if gone {
				// Its process is gone (nothing listens at its address, or it named
				// none): its certificate goes now. A driver that is only stopped, hung
				// or cut off keeps it until it expires (an hour, collected then): it
				// must still reach the GCS when it resumes, to learn that its job
				// failed (ErrClusterLost) instead of retrying a refused user for ever.
				m.releaseDriverCert(job, info.GetDriverUser())
			}
			return
		}
	}
}

// releaseDriverCert forgets (head) the certificate of job's driver, taken for dead (its
// job was just failed): its records and GCS user (releaseDriver), off the manager's
// goroutine, unless another job that runs with a live driver names the same user.
func (m *workerManager) releaseDriverCert(job, user string) {
	if user == "" {
		return
	}
	for id, rec := range m.jobs {
		if id != job && rec.info.GetDriverUser() == user && rec.info.GetState() == pb.JobInfo_RUNNING && m.alive[id] {
			m.a.log.Warn("agent: the certificate of a dead driver is named by a running job too; kept", "job", job, "user", user, "running", id)
			return
		}
	}
	m.a.wg.Add(1)
	go func() {
		defer m.a.wg.Done()
		ctx, cancel := context.WithTimeout(m.a.ctx, 2*opTimeout)
		defer cancel()
		if _, err := m.a.releaseDriver(ctx, user, "its driver is gone (job "+job+")"); err != nil && m.a.ctx.Err() == nil {
			m.a.log.Warn("agent: forget the certificate of a dead driver", "job", job, "user", user, "err", err)
		}
	}()
}

// linkSubmission fills in the job ID of the submission whose driver registered job.
func (m *workerManager) linkSubmission(ctx context.Context, sub, job string) {
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	_, err := updateSubmission(cctx, m.a.store, sub, func(s *pb.Submission) bool {
		if s.GetJobId() != "" {
			return false
		}
		s.JobId = job
		return true
	})
	if err == nil || err == errNoSubmission {
		m.linked[job] = true
	}
}

// shutdown ends every worker process: SIGTERM to each group, SIGKILL to what is left
// after stopGrace; then records them EXITED and removes their directories.
func (m *workerManager) shutdown() {
	var procs []*proc
	for _, w := range m.workers {
		if w.p != nil {
			w.p.signal(syscall.SIGTERM)
			procs = append(procs, w.p)
		}
	}
	waitProcs(procs, stopGrace, 2*time.Second)
	// The records get one bounded attempt in all (the GCS may be gone already).
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for job, w := range m.workers {
		_ = os.RemoveAll(m.workerDir(job))
		if w.p != nil && ctx.Err() == nil {
			m.putWorkerExit(ctx, job, w.p, "agent stopped; worker "+w.p.describe())
		}
	}
	m.workers = map[string]*worker{}
}

// waitProcs waits up to grace for procs to exit, then SIGKILLs the groups of the rest and
// waits up to kill more.
func waitProcs(procs []*proc, grace, kill time.Duration) {
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	for i, p := range procs {
		select {
		case <-p.done:
		case <-deadline.C:
			for _, q := range procs[i:] {
				q.signal(syscall.SIGKILL)
			}
			last := time.NewTimer(kill)
			defer last.Stop()
			for _, q := range procs[i:] {
				select {
				case <-q.done:
				case <-last.C:
					return
				}
			}
			return
		}
	}
}

// baseEnv is the agent's environment (Config.Environ) without the variables of the worker
// contract (an agent started from a shell that had RAY_ADDRESS or worker variables set
// must not leak them into its children; the contract's values are appended after).
func baseEnv(environ []string) []string {
	var env []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains(workerenv.Contract, name) {
			continue
		}
		env = append(env, kv)
	}
	return env
}
