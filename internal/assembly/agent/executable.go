package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/internal/base/ship"
)

// DefaultBinCacheBytes is the default cap of the executables an agent keeps in
// <SessionDir>/bin.
const DefaultBinCacheBytes = 4 << 30

// fetchRetry is how long an agent waits before fetching again an executable whose fetch
// failed (the job stays UNSUPPORTED here meanwhile, with the reason).
const fetchRetry = 10 * time.Second

// hashCache remembers the sha256 of executables by path, size and modification time, so a
// job's binary is hashed once, not at every (re)start of its worker. Owned by the worker
// manager's run loop (no locking).
type hashCache map[string]hashEntry

type hashEntry struct {
	size  int64
	mtime time.Time
	sum   string
}

// sum returns the hex sha256 of the regular file at path.
func (c hashCache) sum(path string, fi os.FileInfo) (string, error) {
	if e, ok := c[path]; ok && e.size == fi.Size() && e.mtime.Equal(fi.ModTime()) {
		return e.sum, nil
	}
	s, err := ship.FileSum(path)
	if err != nil {
		return "", err
	}
	c[path] = hashEntry{size: fi.Size(), mtime: fi.ModTime(), sum: s}
	return s, nil
}

// platformProblem says why this machine cannot run job's binary at all (another OS or
// architecture, no content hash), or "".
func platformProblem(job *pb.JobInfo) string {
	if job.GetGoos() != runtime.GOOS || job.GetGoarch() != runtime.GOARCH {
		return fmt.Sprintf("the job's binary is built for %s/%s, this machine is %s/%s",
			job.GetGoos(), job.GetGoarch(), runtime.GOOS, runtime.GOARCH)
	}
	if !ship.ValidSum(job.GetSha256()) {
		return fmt.Sprintf("the job's executable hash %q is not a sha256", job.GetSha256())
	}
	return ""
}

// local reports whether the job's executable is on this machine at the path the driver
// ran it from, with the same content (the driver's own machine, or one that installed the
// same build at the same path): then no copy is needed.
func (c hashCache) local(job *pb.JobInfo) bool {
	path := job.GetExecutable()
	if path == "" || !filepath.IsAbs(path) {
		return false
	}
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return false
	}
	sum, err := c.sum(path, fi)
	return err == nil && sum == job.GetSha256()
}

// binFetch is the state of one executable this agent resolves through its cache (by
// sha256): fetching (running), fetched and verified (path), or failed (err, retry after
// retryAt).
type binFetch struct {
	running bool
	path    string
	err     error
	retryAt time.Time
}

// binResult is what a fetch goroutine sends back to the run loop.
type binResult struct {
	sum  string
	path string
	err  error
}

// executable returns the path to start job's worker from: its own path when that holds
// the same bytes here, else the file of this agent's cache (<SessionDir>/bin/<sha256>),
// fetched from the GCS and verified by a goroutine of the manager. It returns "" while
// that fetch runs, and why when the fetch failed (the job's worker record says so; the
// fetch is tried again after fetchRetry).
func (m *workerManager) executable(ctx context.Context, job *pb.JobInfo, now time.Time) (path, why string) {
	if m.hashes.local(job) {
		return job.GetExecutable(), ""
	}
	sum := job.GetSha256()
	b := m.bins[sum]
	switch {
	case b == nil, b.err != nil && !now.Before(b.retryAt):
		m.fetch(ctx, sum)
		return "", ""
	case b.running:
		return "", ""
	case b.err != nil:
		return "", fmt.Sprintf("the job's executable is not on this machine at %s, and fetching it from the GCS failed (it was not run): %v",
			job.GetExecutable(), b.err)
	}
	// Fetched and verified: used for one start; the next start checks the cache again
	// (which hashes the file once more).
	delete(m.bins, sum)
	return b.path, ""
}

// fetch starts a goroutine that resolves sum through the cache (a verified cached file, or
// a fetch from the GCS) and reports to the run loop.
func (m *workerManager) fetch(ctx context.Context, sum string) {
	m.bins[sum] = &binFetch{running: true}
	keep := map[string]bool{}
	for _, w := range m.workers {
		if w.p != nil && w.sum != "" {
			keep[w.sum] = true
		}
	}
	cache := ship.Cache{Dir: filepath.Join(m.a.cfg.SessionDir, "bin"), MaxBytes: m.a.cfg.BinCacheBytes, Limit: ship.MaxExecutableBytes}
	m.a.log.Info("agent: fetching a job's executable from the GCS", "sha256", sum)
	m.fetches.Add(1)
	go func() {
		defer m.fetches.Done()
		path, err := cache.Path(ctx, m.a.store, sum, keep)
		select {
		case m.fetched <- binResult{sum: sum, path: path, err: err}:
		case <-ctx.Done():
		}
	}()
}

// fetchDone records a fetch's outcome.
func (m *workerManager) fetchDone(r binResult, now time.Time) {
	if r.err != nil {
		m.a.log.Warn("agent: cannot fetch a job's executable", "sha256", r.sum, "err", r.err)
		m.bins[r.sum] = &binFetch{err: r.err, retryAt: now.Add(fetchRetry)}
		return
	}
	m.a.log.Info("agent: job's executable verified", "sha256", r.sum, "path", r.path)
	m.bins[r.sum] = &binFetch{path: r.path}
}
