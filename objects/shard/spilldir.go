package shard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/ray-go/ray/internal/base/lockdir"
)

// A spill directory the user gives (ray.WithSpillDir, `rayctl start --spill-dir`) may be
// shared: by several processes of the machine, by two agents given the same flag, or it may
// hold other files (/tmp, a scratch disk). A process never writes in it directly: it makes
// a directory of its own there (OpenSpillDir: ray-go-spill-<node ID> for a node,
// ray-go-agent-<agent ID> for a node agent, whose worker processes make theirs in it),
// holds an exclusive flock on its ray-go.lock file while it lives, and removes it when it
// stops (SpillDir.Close). A process killed before (SIGKILL) leaves its directory: a node's
// (a new ID at each start) is removed by the next node that starts in the same spill
// directory once its process is provably gone (RemoveStaleSpillDirs: a ray-go-spill-*
// directory of this user whose ray-go.lock names this machine and whose lock can be
// taken); an agent's (the same ID when it restarts on its session directory) by that agent
// when it starts again. Nothing else there is ever touched: other files, a live process's
// directory, another machine's on a shared filesystem, another agent's.

const (
	// NodeSpillPrefix names a node's own directory in a spill directory.
	NodeSpillPrefix = "ray-go-spill-"
	// AgentSpillPrefix names a node agent's own directory in a spill directory.
	AgentSpillPrefix = "ray-go-agent-"
	spillLockName    = lockdir.LockName
)

// CheckSpillDir checks that dir can hold spill files and returns it absolute (a relative
// path is taken from the current directory). A missing directory is created (0700, with
// its parents). Its errors say what is wrong and what to do: a file, not a directory; a
// read-only filesystem; a directory this user cannot write in.
func CheckSpillDir(dir string) (string, error) {
	if strings.TrimSpace(dir) == "" {
		return "", errors.New("the spill directory is empty: give a directory path")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("spill directory %q: cannot make the path absolute: %v", dir, err)
	}
	if fi, err := os.Stat(abs); err == nil && !fi.IsDir() {
		return "", fmt.Errorf("spill directory %s is a file, not a directory: give a directory (it is created if missing)", abs)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", spillDirError(abs, err)
	}
	// Writable: a probe directory made and removed (access(2) would miss a read-only
	// mount for root, and ACLs).
	probe, err := os.MkdirTemp(abs, ".ray-go-probe-")
	if err != nil {
		return "", spillDirError(abs, err)
	}
	if err := os.Remove(probe); err != nil {
		return "", spillDirError(abs, err)
	}
	return abs, nil
}

// spillDirError says what the error err met on the spill directory dir means.
func spillDirError(dir string, err error) error {
	switch {
	case errors.Is(err, syscall.EROFS):
		return fmt.Errorf("spill directory %s is on a read-only filesystem (%v): give a directory on a writable filesystem", dir, err)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("spill directory %s: a part of the path is a file, not a directory (%v): give a directory path", dir, err)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("spill directory %s is not writable by this user (%v): give a directory you can write in, or change its permissions", dir, err)
	case errors.Is(err, syscall.ENOSPC):
		return fmt.Errorf("spill directory %s: its filesystem is full (%v): free space there or give another directory", dir, err)
	}
	return fmt.Errorf("spill directory %s cannot hold spill files: %w", dir, err)
}

// SpillDir is a process's own directory in a spill directory (OpenSpillDir), locked while
// it is open.
type SpillDir struct {
	// Dir is the directory (absolute).
	Dir  string
	lock *os.File
}

// OpenSpillDir makes the directory name (NodeSpillPrefix or AgentSpillPrefix and an ID) in
// the spill directory parent and locks it. When it exists already (an agent that restarts:
// its previous run was killed), it takes it back if its lock can be taken and empties it,
// and fails if a live process holds it. A node (NodeSpillPrefix) removes the stale node
// directories there first (RemoveStaleSpillDirs).
func OpenSpillDir(parent, name string) (*SpillDir, error) {
	parent, err := CheckSpillDir(parent)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(name, NodeSpillPrefix) {
		RemoveStaleSpillDirs(parent)
	}
	dir := filepath.Join(parent, name)
	err = os.Mkdir(dir, 0o700)
	if err == nil {
		lock, err := lockNewDir(dir)
		if err != nil {
			os.RemoveAll(dir)
			return nil, spillDirError(parent, err)
		}
		return &SpillDir{Dir: dir, lock: lock}, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return nil, spillDirError(parent, err)
	}
	// Ours from a run that was killed, or a live process's.
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() || !lockdir.OwnedByMe(dir) {
		return nil, fmt.Errorf("%s exists and is not this user's directory: remove it, or give another spill directory", dir)
	}
	path := filepath.Join(dir, spillLockName)
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		f, err = lockNewDir(dir)
	} else if err == nil {
		if err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			pid := lockPid(f)
			f.Close()
			return nil, fmt.Errorf("%s is in use by another process (pid %s): each node needs a directory of its own; stop that process first", dir, pid)
		}
		if !lockOfThisHost(f) {
			f.Close()
			return nil, fmt.Errorf("%s is another machine's (its %s names it): give each machine its own spill directory", dir, spillLockName)
		}
		writeLockInfo(f)
	}
	if err != nil {
		return nil, spillDirError(parent, err)
	}
	// What the killed run left: ours (the lock is held), all but the lock file.
	entries, err := os.ReadDir(dir)
	if err != nil {
		f.Close()
		return nil, spillDirError(parent, err)
	}
	for _, e := range entries {
		if e.Name() != spillLockName {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
	return &SpillDir{Dir: dir, lock: f}, nil
}

// Close removes the directory and releases its lock.
func (d *SpillDir) Close() error {
	err := os.RemoveAll(d.Dir)
	d.lock.Close()
	return err
}

// lockNewDir creates dir's lock file already locked, naming this process and machine.
func lockNewDir(dir string) (*os.File, error) {
	return lockdir.CreateLock(dir, lockInfo())
}

// writeLockInfo writes the process's pid (for people reading it; the lock is what counts)
// and the machine's name (a directory on a filesystem other machines share is another
// machine's when its lock file names another, whatever the lock says here).
func writeLockInfo(f *os.File) {
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(lockInfo()), 0)
}

func lockInfo() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%d\n%s\n", os.Getpid(), host)
}

func lockLines(f *os.File) []string {
	b := make([]byte, 512)
	n, _ := f.ReadAt(b, 0)
	return strings.Split(string(b[:n]), "\n")
}

func lockPid(f *os.File) string {
	if l := lockLines(f); l[0] != "" {
		return l[0]
	}
	return "unknown"
}

// lockOfThisHost reports whether the lock file f names this machine.
func lockOfThisHost(f *os.File) bool {
	l := lockLines(f)
	host, err := os.Hostname()
	return err == nil && len(l) >= 2 && l[1] == host
}

// RemoveStaleSpillDirs removes the node directories (NodeSpillPrefix) in the spill
// directory parent whose process is gone, and returns them: this user's, with a lock file
// of this user that names this machine and whose lock can be taken (held while the
// directory is removed). Errors are ignored: a directory it cannot read or remove stays.
func RemoveStaleSpillDirs(parent string) []string {
	return lockdir.RemoveStale(parent, NodeSpillPrefix, lockOfThisHost)
}
