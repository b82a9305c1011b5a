package shard

import (
	"path/filepath"
	"strconv"
	"syscall"
)

// freeSpace says how many bytes are free for an unprivileged writer on the filesystem of
// dir (or of the nearest parent that exists), for the messages of a failing spill.
func freeSpace(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		var st syscall.Statfs_t
		if err := syscall.Statfs(d, &st); err == nil {
			return strconv.FormatUint(uint64(st.Bavail)*uint64(st.Bsize), 10) + " bytes"
		}
		if parent := filepath.Dir(d); parent == d {
			return "unknown"
		}
	}
}
