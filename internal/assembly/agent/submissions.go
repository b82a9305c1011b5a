package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/identity"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/internal/base/ship"
	"github.com/ray-go/ray/internal/base/workerenv"
)

// errNoSubmission: the submission record does not exist.
var errNoSubmission = errors.New("agent: no such submission")

// ErrNoSubmission is returned (wrapped) for a submission ID that is not in the GCS.
var ErrNoSubmission = errNoSubmission

// IsTerminal reports whether a job or submission state is final.
func IsTerminal(s pb.JobInfo_State) bool {
	return s == pb.JobInfo_SUCCEEDED || s == pb.JobInfo_FAILED || s == pb.JobInfo_STOPPED
}

// GetSubmission reads a submission record.
func GetSubmission(ctx context.Context, store gcs.Store, id string) (*pb.Submission, error) {
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	kv, found, err := store.Get(cctx, gcs.SubmissionKey(id))
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("%w: %s", errNoSubmission, id)
	}
	return DecodeSubmission(id, kv.Value)
}

// updateSubmission applies f to the current record of a submission and writes it back if
// f returns true, with a transaction on the record's revision (retried when another
// writer got in between), together with the extra ops. It returns the record as written
// (or as read, when f declined).
func updateSubmission(ctx context.Context, store gcs.Store, id string, f func(*pb.Submission) bool, extra ...gcs.Op) (*pb.Submission, error) {
	key := gcs.SubmissionKey(id)
	for attempt := 0; ; attempt++ {
		kv, found, err := store.Get(ctx, key)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, fmt.Errorf("%w: %s", errNoSubmission, id)
		}
		sub, err := DecodeSubmission(id, kv.Value)
		if err != nil {
			return nil, err
		}
		if !f(sub) {
			return sub, nil
		}
		b, err := proto.Marshal(sub)
		if err != nil {
			return nil, err
		}
		ops := append([]gcs.Op{{Kind: gcs.OpPut, Key: key, Value: b}}, extra...)
		ok, _, err := store.Txn(ctx, []gcs.Cmp{{Key: key, ModRev: kv.ModRev}}, ops)
		if err != nil {
			return nil, err
		}
		if ok {
			return sub, nil
		}
		if attempt == 10 {
			return nil, fmt.Errorf("agent: update submission %s: too much contention", id)
		}
	}
}

// UpdateSubmission is updateSubmission for the CLI (rayctl job stop).
func UpdateSubmission(ctx context.Context, store gcs.Store, id string, f func(*pb.Submission) bool) (*pb.Submission, error) {
	return updateSubmission(ctx, store, id, f)
}

// submissionRunner runs `rayctl job submit` drivers (head agent only). Its run loop owns
// the table view and the set of running submissions; each running submission has one
// goroutine (execute) that owns its process, tracked by wg.
type submissionRunner struct {
	a        *Agent
	updates  chan tableUpdate
	finished chan string
	running  map[string]*subRun
	wg       sync.WaitGroup
	// orphans are the submissions RUNNING at the first list that are not yet failed
	// (failOrphans) nor seen ending: while another head is alive they may be its own.
	orphans map[string]bool
	// firstList is closed once the first list was handled (for tests).
	firstList chan struct{}
}

type subRun struct {
	id       string
	stop     chan struct{} // closed to ask for SIGTERM
	stopOnce sync.Once
}

func (r *subRun) requestStop() { r.stopOnce.Do(func() { close(r.stop) }) }

func newSubmissionRunner(a *Agent) *submissionRunner {
	return &submissionRunner{
		a:        a,
		updates:  make(chan tableUpdate, 16),
		finished: make(chan string, 16),
		running:  map[string]*subRun{},
		orphans:  map[string]bool{},

		firstList: make(chan struct{}),
	}
}

// orphanRecheck is how often a head that found RUNNING submissions at its start while
// another head was alive looks again whether one still is (an alive key outlives its head
// by up to AliveTTL when the head was killed, or when its Stop could not revoke it).
const orphanRecheck = time.Second

func (s *submissionRunner) run(ctx context.Context) {
	defer s.a.wg.Done()
	mctx, cancel := context.WithCancel(ctx)
	var mwg sync.WaitGroup
	mwg.Add(1)
	go func() {
		defer mwg.Done()
		mirror(mctx, s.a.store, gcs.SubmissionsPrefix, s.updates, s.a.log)
	}()
	defer func() {
		cancel()
		mwg.Wait()
		// Each execute ends its process when ctx is done.
		s.wg.Wait()
	}()
	listed := false
	var recheck <-chan time.Time // set while orphans wait for the other heads to be gone
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-s.finished:
			delete(s.running, id)
		case <-recheck:
			recheck = nil
			if !s.failOrphans(ctx) {
				recheck = time.After(orphanRecheck)
			}
		case u := <-s.updates:
			s.forgetEnded(u)
			if u.reset && !listed {
				listed = true
				s.orphans = running(u.kvs)
				if !s.failOrphans(ctx) {
					recheck = time.After(orphanRecheck)
				}
				close(s.firstList)
			}
			kvs := u.kvs
			for _, ev := range u.events {
				if ev.Type == gcs.EventPut {
					kvs = append(kvs, ev.KV)
				}
			}
			for _, kv := range kvs {
				s.consider(ctx, kv)
			}
		}
	}
}

// running is the set of the RUNNING submissions in kvs (a list of the table).
func running(kvs []gcs.KV) map[string]bool {
	ids := map[string]bool{}
	for _, kv := range kvs {
		id, _ := gcs.TrimKey(gcs.SubmissionsPrefix, kv.Key)
		if sub, err := DecodeSubmission(id, kv.Value); err == nil && sub.GetState() == pb.JobInfo_RUNNING {
			ids[id] = true
		}
	}
	return ids
}

// forgetEnded drops from the orphans those that u shows no longer RUNNING (ended by the
// head that runs them, or removed).
func (s *submissionRunner) forgetEnded(u tableUpdate) {
	if len(s.orphans) == 0 {
		return
	}
	if u.reset {
		now := running(u.kvs)
		for id := range s.orphans {
			if !now[id] {
				delete(s.orphans, id)
			}
		}
	}
	for _, ev := range u.events {
		id, _ := gcs.TrimKey(gcs.SubmissionsPrefix, ev.KV.Key)
		if !s.orphans[id] {
			continue
		}
		if ev.Type == gcs.EventDelete {
			delete(s.orphans, id)
		} else if sub, err := DecodeSubmission(id, ev.KV.Value); err != nil || sub.GetState() != pb.JobInfo_RUNNING {
			delete(s.orphans, id)
		}
	}
}

// failOrphans fails the RUNNING submissions of a head agent that died (their drivers died
// with it: Pdeathsig), when this is the only live head: s.orphans, the submissions RUNNING
// at this head's first list (it had started none then). While another head is alive (or
// that cannot be told) they may be its own: it reports false, and the run loop asks again
// every orphanRecheck until they are failed or seen ending (forgetEnded). It used to
// decide once, at the first list: a head whose alive key outlived it (killed, or its
// revocation timed out) left its submissions RUNNING for ever.
func (s *submissionRunner) failOrphans(ctx context.Context) bool {
	if len(s.orphans) == 0 {
		return true
	}
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if other, err := s.otherHeadAlive(cctx); err != nil || other {
		return false
	}
	end, _ := json.Marshal(LogEnd{Host: s.a.hostname})
	for _, id := range slices.Sorted(maps.Keys(s.orphans)) {
		_, err := updateSubmission(cctx, s.a.store, id, func(cur *pb.Submission) bool {
			if cur.GetState() != pb.JobInfo_RUNNING {
				return false
			}
			cur.State = pb.JobInfo_FAILED
			cur.ExitCode = -1
			cur.Message = "the head agent that ran the driver stopped or died"
			cur.EndUnixMs = time.Now().UnixMilli()
			return true
		}, gcs.Op{Kind: gcs.OpPut, Key: LogEndKey(id), Value: end})
		if err != nil && !errors.Is(err, errNoSubmission) {
			if ctx.Err() != nil {
				return false // the agent stops
			}
			s.a.log.Warn("agent: fail an orphaned submission; retrying", "submission", id, "err", err, "in", orphanRecheck)
			continue
		}
		delete(s.orphans, id)
	}
	return len(s.orphans) == 0
}

// otherHeadAlive reports whether a head agent other than this one is alive.
func (s *submissionRunner) otherHeadAlive(ctx context.Context) (bool, error) {
	agents, _, err := s.a.store.List(ctx, gcs.AgentsPrefix)
	if err != nil {
		return false, err
	}
	for _, kv := range agents {
		id, _ := gcs.TrimKey(gcs.AgentsPrefix, kv.Key)
		info, err := DecodeAgentInfo(id, kv.Value)
		if err != nil || !info.GetHead() || info.GetAgentId() == s.a.id {
			continue
		}
		_, alive, err := s.a.store.Get(ctx, gcs.AgentAliveKey(info.GetAgentId()))
		if err != nil || alive {
			return true, err
		}
	}
	return false, nil
}

// consider starts a PENDING submission, or passes a stop request to a running one.
func (s *submissionRunner) consider(ctx context.Context, kv gcs.KV) {
	id, ok := gcs.TrimKey(gcs.SubmissionsPrefix, kv.Key)
	if !ok {
		return
	}
	sub, err := DecodeSubmission(id, kv.Value)
	if err != nil {
		s.a.log.Warn("agent: refused a submission record", "key", kv.Key, "err", err)
		return
	}
	r := s.running[id]
	switch {
	case r != nil:
		if sub.GetStopRequested() {
			r.requestStop()
		}
	case sub.GetState() == pb.JobInfo_PENDING && sub.GetStopRequested():
		cctx, cancel := context.WithTimeout(ctx, opTimeout)
		defer cancel()
		end, _ := json.Marshal(LogEnd{Host: s.a.hostname})
		_, err := updateSubmission(cctx, s.a.store, id, func(cur *pb.Submission) bool {
			if cur.GetState() != pb.JobInfo_PENDING {
				return false
			}
			cur.State = pb.JobInfo_STOPPED
			cur.Message = "stopped before it started"
			cur.EndUnixMs = time.Now().UnixMilli()
			return true
		}, gcs.Op{Kind: gcs.OpPut, Key: LogEndKey(id), Value: end})
		if err != nil {
			s.a.log.Warn("agent: mark the submission STOPPED", "submission", id, "err", err)
		}
	case sub.GetState() == pb.JobInfo_PENDING:
		r := &subRun{id: id, stop: make(chan struct{})}
		s.running[id] = r
		s.wg.Add(1)
		go s.execute(ctx, r, sub, kv.ModRev)
	}
}

// execute runs one submission's driver to its end and records the outcome.
func (s *submissionRunner) execute(ctx context.Context, r *subRun, sub *pb.Submission, modRev int64) {
	defer s.wg.Done()
	defer func() {
		select {
		case s.finished <- r.id:
		case <-ctx.Done():
		}
	}()
	a := s.a
	id := r.id
	key := gcs.SubmissionKey(id)
	logPath := filepath.Join(a.cfg.SessionDir, "logs", "job-"+id+".log")

	// Claim it: PENDING -> RUNNING, only if nobody changed it since we saw it.
	claimed := proto.Clone(sub).(*pb.Submission)
	claimed.State = pb.JobInfo_RUNNING
	claimed.LogPath = logPath
	claimed.StartUnixMs = time.Now().UnixMilli()
	b, _ := proto.Marshal(claimed)
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	ok, _, err := a.store.Txn(cctx, []gcs.Cmp{{Key: key, ModRev: modRev}}, []gcs.Op{{Kind: gcs.OpPut, Key: key, Value: b}})
	cancel()
	if err != nil || !ok {
		if err != nil {
			a.log.Warn("agent: claim the submission", "submission", id, "err", err)
		}
		return
	}

	env := append(baseEnv(a.cfg.Environ), sub.GetEnv()...)
	env = append(env, workerenv.Address+"="+a.Address(), workerenv.Submission+"="+id)
	// The driver's store spills where this machine's worker processes do (Config.SpillDir:
	// the node's chosen spill directory), unless the job's own environment chooses.
	if dir := a.SpillDir(); dir != "" && !setsVar(sub.GetEnv(), workerenv.SpillDir) {
		env = append(env, workerenv.SpillDir+"="+dir)
	}
	credEnv, release, err := s.driverCreds(ctx, id)
	defer release()
	env = append(env, credEnv...)
	if a.cfg.Namespace != "" {
		env = append(env, workerenv.Namespace+"="+a.cfg.Namespace)
	}
	var p *proc
	argv := sub.GetArgv()
	dir := ""
	if err == nil {
		err = checkCommand(sub)
	}
	if err == nil {
		argv, dir, err = s.prepare(ctx, sub)
	}
	defer s.cleanup(id)
	if err == nil {
		p, err = startProc(argv, env, dir, logPath)
	}
	if err != nil {
		msg := "cannot start the driver: " + err.Error()
		a.log.Warn("agent: "+msg, "submission", id)
		release()
		s.finish(id, pb.JobInfo_FAILED, -1, msg, LogEnd{LogPath: logPath, Host: a.hostname}, nil)
		return
	}
	a.log.Info("agent: started submission", "submission", id, "pid", p.pid, "argv", argv)
	cctx, cancel = context.WithTimeout(ctx, opTimeout)
	if _, err := updateSubmission(cctx, a.store, id, func(cur *pb.Submission) bool {
		cur.Pid = int32(p.pid)
		return true
	}); err != nil {
		a.log.Warn("agent: record the driver's pid", "submission", id, "err", err)
	}
	cancel()

	pub := &logPublisher{store: a.store, id: id, path: logPath}
	finish := make(chan struct{})
	pubDone := make(chan struct{})
	go func() {
		defer close(pubDone)
		pub.run(finish)
	}()

	var kill <-chan time.Time
	stopReq, agentStop := r.stop, ctx.Done()
	stoppedByAgent := false
	for !p.exited() {
		select {
		case <-p.done:
		case <-stopReq:
			stopReq = nil
			a.log.Info("agent: stopping submission", "submission", id, "pid", p.pid)
			s.archiveDriver(ctx, id) // its task records outlive it (bounded)
			p.signal(syscall.SIGTERM)
			if kill == nil {
				kill = time.After(stopGrace)
			}
		case <-agentStop:
			agentStop = nil
			stoppedByAgent = true
			p.signal(syscall.SIGTERM)
			if kill == nil {
				kill = time.After(stopGrace)
			}
		case <-kill:
			a.log.Warn("agent: driver did not exit after SIGTERM; killing it", "submission", id, "pid", p.pid)
			p.signal(syscall.SIGKILL)
			kill = nil
		}
	}
	close(finish)
	<-pubDone

	code := p.exitCode()
	state, msg := pb.JobInfo_SUCCEEDED, ""
	if code != 0 || p.err != nil {
		state, msg = pb.JobInfo_FAILED, "driver "+p.describe()
	}
	if stoppedByAgent {
		state, msg = pb.JobInfo_STOPPED, "stopped: the head agent was shut down (driver "+p.describe()+")"
	}
	if stopReq == nil {
		state, msg = pb.JobInfo_STOPPED, "stopped by request (driver "+p.describe()+")"
	}
	a.log.Info("agent: submission ended", "submission", id, "state", state, "how", p.describe())
	release() // before the outcome: whoever sees the submission ended sees its certificate gone
	s.finish(id, state, int32(code), msg, LogEnd{Bytes: pub.published, Truncated: pub.truncated, Omitted: pub.omitted, LogPath: logPath, Host: a.hostname}, p)
}

// setsVar reports whether env (KEY=VALUE entries) sets the variable name.
func setsVar(env []string, name string) bool {
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == name {
			return true
		}
	}
	return false
}

// driverCreds gives a submission's driver a certificate of its own on a secure head: a
// driver's (GCS role driver), named sub-<id>, valid for DriverCertValidity (an hour) and
// renewed by the driver at the join endpoint while it runs (workerenv.JoinAddress tells it
// where), in <session>/tls-submissions/<id>. release, called once the driver has exited,
// forgets the certificate (its records and GCS user: releaseDriver) and removes its files
// (once; before the submission's outcome is recorded),
// so that a copy taken during the job opens nothing once the job has ended (the driver's
// ray.Shutdown releases it already). Before, every submitted driver shared the head
// processes' year-long certificate (tls-jobs/). Without TLS: the agent's credentials.
func (s *submissionRunner) driverCreds(ctx context.Context, id string) (env []string, release func(), err error) {
	a := s.a
	if a.ca == nil {
		return a.credentialEnv(), func() {}, nil
	}
	validity := a.cfg.DriverCertValidity
	if validity <= 0 {
		validity = identity.DriverCertValidity
	}
	c, err := a.ca.Issue(identity.Request{Name: "sub-" + id, Role: identity.RoleDriver, Validity: validity})
	if err != nil {
		return nil, func() {}, fmt.Errorf("the driver's certificate: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if err := a.recordCert(cctx, c.Leaf()); err != nil {
		return nil, func() {}, err
	}
	dir := filepath.Join(a.cfg.SessionDir, "tls-submissions", id)
	var once sync.Once
	release = func() {
		once.Do(func() {
			_ = os.RemoveAll(dir)
			rctx, cancel := context.WithTimeout(context.Background(), 2*opTimeout)
			defer cancel()
			if _, err := a.releaseDriver(rctx, c.User(), "its submission "+id+" ended"); err != nil {
				a.log.Warn("agent: forget the certificate of a submission's driver (it expires within the hour)", "submission", id, "err", err)
			}
		})
	}
	files, err := c.Save(dir)
	if err != nil {
		return nil, release, fmt.Errorf("save the driver's certificate: %w", err)
	}
	return []string{workerenv.GCSCA + "=" + files.CA, workerenv.GCSCert + "=" + files.Cert, workerenv.GCSKey + "=" + files.Key,
		workerenv.JoinAddress + "=" + a.JoinAddress()}, release, nil
}

// finish records a submission's outcome and its log end marker in one transaction, so a
// reader that sees the end marker also sees the final state. The job the driver
// registered, if any, is given the same outcome first (settleJob), so that whoever sees
// the submission ended sees the job table agree; then a driver process p (nil: none was
// started) that exited without leaving the cluster is recorded DEAD and its records go
// (driverExited), so that whoever sees the submission ended sees no ALIVE driver either.
func (s *submissionRunner) finish(id string, state pb.JobInfo_State, code int32, msg string, end LogEnd, p *proc) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := settleJob(ctx, s.a.store, id, state, msg); err != nil {
		s.a.log.Warn("agent: give the submission's job its outcome", "submission", id, "state", state, "err", err)
	}
	if p != nil {
		reason := msg
		if reason == "" {
			reason = "driver " + p.describe()
		}
		s.driverExited(ctx, id, p, reason)
	}
	eb, _ := json.Marshal(end)
	_, err := updateSubmission(ctx, s.a.store, id, func(cur *pb.Submission) bool {
		cur.State = state
		cur.ExitCode = code
		cur.Message = msg
		cur.EndUnixMs = time.Now().UnixMilli()
		return true
	}, gcs.Op{Kind: gcs.OpPut, Key: LogEndKey(id), Value: eb})
	if err != nil {
		s.a.log.Warn("agent: record the submission's outcome", "submission", id, "state", state, "err", err)
	}
}

// settleJob gives the job that submission id's driver registered (if it registered one)
// the submission's outcome: for a job run by `rayctl job submit` the submission says how
// it ended, and the job table says the same (one truth). Without it, a stopped driver
// (SIGTERM, no ray.Shutdown) left a STOPPED submission and a job the head later marked
// FAILED (DriverExitedMessage), and a driver that called
// ray.Shutdown and then exited with an error a SUCCEEDED job. It is called once the
// driver's process has exited; failOrphan defers to a submission that ended.
func settleJob(ctx context.Context, store gcs.Store, id string, state pb.JobInfo_State, msg string) error {
	job, err := submissionJob(ctx, store, id)
	if err != nil || job == "" {
		return err
	}
	key := gcs.JobKey(job)
	for attempt := 0; attempt < 10; attempt++ {
		kv, found, err := store.Get(ctx, key)
		if err != nil || !found {
			return err
		}
		info, err := DecodeJob(job, kv.Value)
		if err != nil {
			return err
		}
		if info.GetState() == state && info.GetMessage() == msg {
			return nil
		}
		info.State, info.Message = state, msg
		if info.GetEndUnixMs() == 0 {
			info.EndUnixMs = time.Now().UnixMilli()
		}
		b, err := proto.Marshal(info)
		if err != nil {
			return err
		}
		ok, _, err := store.Txn(ctx, []gcs.Cmp{{Key: key, ModRev: kv.ModRev}}, []gcs.Op{{Kind: gcs.OpPut, Key: key, Value: b}})
		if err != nil || ok {
			return err
		}
	}
	return fmt.Errorf("agent: settle job %s of submission %s: too much contention", job, id)
}

// submissionJob returns the ID of the job submission id's driver registered: the one the
// submission record names, else (not linked yet) the one whose record names the
// submission; "" when there is none.
func submissionJob(ctx context.Context, store gcs.Store, id string) (string, error) {
	sub, err := GetSubmission(ctx, store, id)
	if err != nil {
		return "", err
	}
	if job := sub.GetJobId(); job != "" {
		return job, nil
	}
	kvs, _, err := store.List(ctx, gcs.JobsPrefix)
	if err != nil {
		return "", err
	}
	for _, kv := range kvs {
		job, ok := gcs.TrimKey(gcs.JobsPrefix, kv.Key)
		if !ok || strings.Contains(job, "/") {
			continue // a job's worker records live under its key
		}
		if info, err := DecodeJob(job, kv.Value); err == nil && info.GetSubmissionId() == id {
			return job, nil
		}
	}
	return "", nil
}

// submissionDir is the directory of a submission on the head: its unpacked working
// directory (wd/), removed when the driver ends.
func (s *submissionRunner) submissionDir(id string) string {
	return filepath.Join(s.a.cfg.SessionDir, "submissions", id)
}

// prepare makes what a submission shipped ready to run (package internal/base/ship): the
// working directory, unpacked from its archive in the GCS into <session>/submissions/<id>/wd
// (a new empty directory when none was shipped; the path itself for records that name a
// directory of the head and ship none), and the program, which runs from its path when the
// file there has the same hash, else from this agent's verified cache
// (<session>/bin/<sha256>). Anything left in the submission's directory (an unpack that
// was cut short leaves only a temporary sibling of wd) is removed first: the archive is
// the whole truth. It returns the argv and the directory to start.
func (s *submissionRunner) prepare(ctx context.Context, sub *pb.Submission) (argv []string, dir string, err error) {
	a := s.a
	argv = slices.Clone(sub.GetArgv())
	root := s.submissionDir(sub.GetSubmissionId())
	fctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	switch {
	case sub.GetWorkingDirSha256() != "":
		if err := os.RemoveAll(root); err != nil {
			return nil, "", err
		}
		if err := os.MkdirAll(root, 0o700); err != nil {
			return nil, "", err
		}
		dir = filepath.Join(root, "wd")
		if err := unpackShipped(fctx, a, sub.GetWorkingDirSha256(), root, dir); err != nil {
			return nil, "", fmt.Errorf("the working directory %s shipped as sha256 %s: %w", sub.GetWorkingDir(), sub.GetWorkingDirSha256(), err)
		}
		if !filepath.IsAbs(argv[0]) {
			argv[0] = filepath.Join(dir, argv[0])
		}
	case sub.GetWorkingDir() != "":
		dir = sub.GetWorkingDir()
	default:
		dir = filepath.Join(root, "wd")
		if err := os.RemoveAll(root); err != nil {
			return nil, "", err
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, "", err
		}
	}
	if sum := sub.GetProgramSha256(); sum != "" {
		if got, err := ship.FileSum(argv[0]); err != nil || got != sum {
			cache := ship.Cache{Dir: filepath.Join(a.cfg.SessionDir, "bin"), MaxBytes: a.cfg.BinCacheBytes, Limit: ship.MaxExecutableBytes}
			path, err := cache.Path(fctx, a.store, sum, nil)
			if err != nil {
				return nil, "", fmt.Errorf("the program %s is not on this machine with the same content, and fetching it (sha256 %s) from the GCS failed (it was not run): %w", argv[0], sum, err)
			}
			argv[0] = path
		}
	}
	return argv, dir, nil
}

// unpackShipped fetches a working directory's archive into a file of root, verifies it and
// unpacks it into dir.
func unpackShipped(ctx context.Context, a *Agent, sum, root, dir string) error {
	f, err := os.CreateTemp(root, ".archive-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := ship.Fetch(ctx, a.store, sum, ship.MaxArchiveBytes, f); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	return ship.Unpack(f, dir)
}

// cleanup removes a submission's directory once its driver ended.
func (s *submissionRunner) cleanup(id string) {
	_ = os.RemoveAll(s.submissionDir(id))
}
