// Package lockdir keeps directories that belong to a live process: the process holds an
// exclusive flock on the directory's lock file (LockName) while it lives, and the kernel
// drops the lock when the process exits, however it exits (SIGKILL included). Another
// process removes such a directory only once it is stale: this user's, with a regular lock
// file of this user, whose lock it can take (and holds while it removes the directory). A
// directory without the lock file (made by something else, or being made right now) is
// never touched.
//
// Local mode's session directories (internal/assembly/node) and the nodes' own directories
// in a spill directory (objects/shard) both work this way.
package lockdir

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// LockName is the lock file a live process holds locked in its directory.
const LockName = "ray-go.lock"

// CreateLock creates dir's lock file already locked, with the text info (for people
// reading it; the lock is what counts): it is locked under another name and renamed into
// place, so no other process ever sees it unlocked. The returned file holds the lock until
// it is closed.
func CreateLock(dir, info string) (*os.File, error) {
	tmp := filepath.Join(dir, LockName+".new")
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", tmp, err)
	}
	_, _ = f.WriteString(info)
	if err := os.Rename(tmp, filepath.Join(dir, LockName)); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// RemoveStale removes the directories under parent whose names start with prefix and that
// are stale (see the package doc), and returns them. accept, when not nil, must also
// accept the opened lock file (e.g. that it names this machine) before the lock is tried.
// Errors are ignored: a directory it cannot read or remove is left as it is.
func RemoveStale(parent, prefix string, accept func(lock *os.File) bool) []string {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) { // IsDir: not a symlink
			continue
		}
		if dir := filepath.Join(parent, e.Name()); removeIfStale(dir, accept) {
			removed = append(removed, dir)
		}
	}
	return removed
}

func removeIfStale(dir string, accept func(*os.File) bool) bool {
	if !OwnedByMe(dir) {
		return false
	}
	path := filepath.Join(dir, LockName)
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() || !OwnedByMe(path) {
		return false
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if accept != nil && !accept(f) {
		return false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return false // alive (EWOULDBLOCK), or cannot tell
	}
	return os.RemoveAll(dir) == nil
}

// OwnedByMe reports whether path (not followed if a symlink) belongs to this process's user.
func OwnedByMe(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
