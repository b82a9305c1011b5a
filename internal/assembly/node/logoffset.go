package node

import (
	"io"
	"os"
	"syscall"
)

// stdoutLogOffset returns a function that reads where the file the process's stdout
// appends to ends now, or nil when stdout is not a regular file. A worker process's stdout
// and stderr are its log (the agent opens <session>/logs/worker-<job>.log with O_APPEND
// for both), so the offsets read before and after a task's body delimit the task's output
// there (TaskResult.log_start, log_end; `rayctl logs task` reads that range). One lseek
// per read: no allocation, no lock. SEEK_END, not the descriptor's offset: an O_APPEND
// descriptor's offset stays where it was opened (0) until the process writes once.
func stdoutLogOffset() func() int64 { return logOffset(os.Stdout) }

// logOffset is stdoutLogOffset for f.
func logOffset(f *os.File) func() int64 {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	fd := int(f.Fd())
	return func() int64 {
		off, err := syscall.Seek(fd, 0, io.SeekEnd)
		if err != nil {
			return 0
		}
		return off
	}
}
