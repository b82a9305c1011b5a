package node

import (
	"fmt"
	"os"

	"github.com/ray-go/ray/internal/base/lockdir"
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
const tempDirLock = lockdir.LockName

// makeTempDir removes stale session directories of processes that are gone, then makes a
// new one and locks it: the returned file holds the lock until it is closed (Stop).
func makeTempDir() (string, *os.File, error) {
	removeStaleTempDirs(os.TempDir())
	dir, err := os.MkdirTemp("", tempDirPrefix)
	if err != nil {
		return "", nil, err
	}
	lock, err := lockdir.CreateLock(dir, fmt.Sprintf("%d\n", os.Getpid()))
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, lock, nil
}

// removeStaleTempDirs removes the session directories under tmp whose process is gone. It
// reports the directories it removed (tests).
func removeStaleTempDirs(tmp string) []string {
	return lockdir.RemoveStale(tmp, tempDirPrefix, nil)
}
