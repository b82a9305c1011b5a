package node

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Local mode's session directory (ray.Init with no address and no WithDir) is a fresh
// $TMPDIR/ray-go-* directory that Stop removes. A process killed before Stop (SIGKILL, an
// unhandled SIGTERM) leaves it behind (its embedded GCS's files, tens of MB), so each new
// one removes those of processes that are gone first. A directory's process is alive while
// it holds an exclusive flock on the directory's tempDirLock file (the kernel drops it when
// the process exits, however it exits); a directory is removed only when it is this user's,
// has that lock file, and the lock can be taken. A directory without the file (made by
// something else, or one being made right now) is never touched.

// tempDirPrefix names local mode's session directories in os.TempDir().
const tempDirPrefix = "ray-go-"

// tempDirLock is the file a live process holds locked in its session directory.
const tempDirLock = "ray-go.lock"

// makeTempDir removes stale session directories of processes that are gone, then makes a
// new one and locks it: the returned file holds the lock until it is closed (Stop).
func makeTempDir() (string, *os.File, error) {
	removeStaleTempDirs(os.TempDir())
	dir, err := os.MkdirTemp("", tempDirPrefix)
	if err != nil {
		return "", nil, err
	}
	lock, err := lockTempDir(dir)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, lock, nil
}

// lockTempDir creates dir's lock file already locked: it is locked under another name and
// renamed into place, so no other process ever sees it unlocked.
func lockTempDir(dir string) (*os.File, error) {
	tmp := filepath.Join(dir, tempDirLock+".new")
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", tmp, err)
	}
	fmt.Fprintf(f, "%d\n", os.Getpid()) // for people reading it; the lock is what counts
	if err := os.Rename(tmp, filepath.Join(dir, tempDirLock)); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// removeStaleTempDirs removes the session directories under tmp whose process is gone. It
// reports the directories it removed (tests). Errors are ignored: a directory it cannot
// read or remove is left as it is.
func removeStaleTempDirs(tmp string) []string {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), tempDirPrefix) { // IsDir: not a symlink
			continue
		}
		dir := filepath.Join(tmp, e.Name())
		if staleTempDir(dir) {
			removed = append(removed, dir)
		}
	}
	return removed
}

// staleTempDir removes dir if it is this user's session directory and its lock can be
// taken (its process is gone); it holds the lock while it removes it.
func staleTempDir(dir string) bool {
	if !ownedByMe(dir) {
		return false
	}
	path := filepath.Join(dir, tempDirLock)
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() || !ownedByMe(path) {
		return false
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return false // alive (EWOULDBLOCK), or cannot tell
	}
	return os.RemoveAll(dir) == nil
}

func ownedByMe(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
