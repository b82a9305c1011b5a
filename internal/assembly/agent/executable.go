package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/ray-go/ray/internal/base/pb"
)

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
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	s := hex.EncodeToString(h.Sum(nil))
	c[path] = hashEntry{size: fi.Size(), mtime: fi.ModTime(), sum: s}
	return s, nil
}

// canRun says why this machine cannot run job's binary, or "" when it can: the platform
// must match, and the executable must exist at the same path with the same content.
func (c hashCache) canRun(job *pb.JobInfo) string {
	if job.GetGoos() != runtime.GOOS || job.GetGoarch() != runtime.GOARCH {
		return fmt.Sprintf("the job's binary is built for %s/%s, this machine is %s/%s",
			job.GetGoos(), job.GetGoarch(), runtime.GOOS, runtime.GOARCH)
	}
	path := job.GetExecutable()
	if path == "" {
		return "the job names no executable"
	}
	if !filepath.IsAbs(path) {
		return fmt.Sprintf("the job's executable %q is not an absolute path", path)
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return fmt.Sprintf("executable %s is not on this machine (%v); install the job's binary at the same path on every node", path, err)
	case !fi.Mode().IsRegular():
		return fmt.Sprintf("executable %s is not a regular file (%v)", path, fi.Mode())
	case fi.Mode().Perm()&0o111 == 0:
		return fmt.Sprintf("executable %s is not executable (mode %v)", path, fi.Mode().Perm())
	}
	sum, err := c.sum(path, fi)
	if err != nil {
		return fmt.Sprintf("executable %s cannot be read: %v", path, err)
	}
	if sum != job.GetSha256() {
		return fmt.Sprintf("executable %s on this machine has sha256 %s, the job's binary has %s (a different build); install the same binary at the same path on every node",
			path, sum, job.GetSha256())
	}
	return ""
}
