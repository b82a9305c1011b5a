package shard

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ray-go/ray/internal/base/ids"
)

// TestSpillKeepsRoom: a spill that would leave less than the reserve free on its
// filesystem (5%, at most 1 GiB) is not written, and fails as a full disk does (ENOSPC,
// saying why); the disk it shares with the head's GCS and the logs keeps room (etcd exits
// when a write finds the disk full: a job's spilling killed the head). With room it is
// written.
func TestSpillKeepsRoom(t *testing.T) {
	defer func(f func(string, *syscall.Statfs_t) error) { statfs = f }(statfs)
	var free uint64
	statfs = func(_ string, st *syscall.Statfs_t) error {
		*st = syscall.Statfs_t{Bsize: 4096, Blocks: 1 << 20, Bavail: free} // a 4 GiB filesystem: reserve 205 MiB
		return nil
	}
	dir := filepath.Join(t.TempDir(), "spill")
	id := ids.PutID(ids.NewRootTaskID(), 1)
	data := make([]byte, 1<<20)

	free = (200 << 20) / 4096 // 200 MiB free: under the reserve
	_, _, err := writeSpill(filepath.Join(dir, "a"), id, data)
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "keeps room") {
		t.Fatalf("a spill into a filesystem short of its reserve: %v, want ENOSPC saying why", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused spill left a file: %v", err)
	}
	var we *spillWriteError
	if !errors.As(err, &we) || we.free == "" {
		t.Fatalf("the refused spill: %#v, want a spillWriteError with the free space", err)
	}

	free = (1 << 30) / 4096 // 1 GiB free
	if _, _, err := writeSpill(filepath.Join(dir, "b"), id, data); err != nil {
		t.Fatalf("a spill with room: %v", err)
	}
}
