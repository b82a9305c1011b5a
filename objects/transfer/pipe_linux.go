//go:build linux

package transfer

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// pipeSupported: on Linux a client on the Unix socket asks for the body through a pipe
// (streamMagicPipe) and a server answers that way (statusPipe); see the package
// documentation.
const pipeSupported = true

// newBodyPipe makes the pipe of one answer, non-blocking and close-on-exec, its capacity
// raised to pipeBufSize where the user's pipe quota allows (else the kernel's default
// stays: slower, not wrong). It returns the read end, to pass to the client, and the
// write end, polled by the runtime (deadlines and Close interrupt a blocked write).
func newBodyPipe() (int, *os.File, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return -1, nil, err
	}
	_, _ = unix.FcntlInt(uintptr(p[1]), unix.F_SETPIPE_SZ, pipeBufSize)
	return p[0], os.NewFile(uintptr(p[1]), "transfer-pipe"), nil
}

// sendHeaderWithFD writes the response header hdr on c with fd passed alongside
// (SCM_RIGHTS). The caller still closes its fd.
func sendHeaderWithFD(c net.Conn, hdr []byte, fd int) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return errors.New("not a Unix socket")
	}
	n, _, err := uc.WriteMsgUnix(hdr, unix.UnixRights(fd), nil)
	if err == nil && n != len(hdr) {
		err = fmt.Errorf("wrote %d of %d header bytes", n, len(hdr))
	}
	return err
}

// vmspliceAll hands data's pages to the pipe w (vmsplice without SPLICE_F_GIFT: the pipe
// refers to the pages, nothing is copied here; the client's read is the only copy). The
// pages must stay unchanged until the client has read them: the caller keeps data
// referenced until the client acknowledges. Each wait for room in the pipe is bounded by
// timeout. Where vmsplice is refused (a seccomp filter, an old kernel), or with copyIn, it
// writes data into the pipe instead (one more copy, here), and after a refusal the
// process writes from then on.
func vmspliceAll(w *os.File, data []byte, timeout time.Duration, copyIn bool) error {
	rc, err := w.SyscallConn()
	if err != nil {
		return err
	}
	for off := 0; off < len(data); {
		_ = w.SetWriteDeadline(time.Now().Add(timeout))
		if copyIn || vmspliceRefused.Load() {
			n, err := w.Write(data[off:min(off+pipeBufSize, len(data))])
			if err != nil {
				return fmt.Errorf("write into the pipe at %d of %d bytes: %w", off, len(data), err)
			}
			off += n
			continue
		}
		var (
			n    int
			serr error
		)
		err := rc.Write(func(fd uintptr) bool {
			iov := []unix.Iovec{{Base: &data[off]}}
			iov[0].SetLen(len(data) - off)
			n, serr = unix.Vmsplice(int(fd), iov, unix.SPLICE_F_NONBLOCK)
			return serr != unix.EAGAIN
		})
		if err == nil && (serr == unix.ENOSYS || serr == unix.EPERM || serr == unix.EINVAL) {
			vmspliceRefused.Store(true)
			continue
		}
		if err == nil {
			err = serr
		}
		if err != nil {
			return fmt.Errorf("vmsplice at %d of %d bytes: %w", off, len(data), err)
		}
		off += n
	}
	return nil
}

// vmspliceRefused is set once vmsplice has been refused in this process.
var vmspliceRefused atomic.Bool

// readHeaderFDs reads the response header into hdr from the Unix connection c, with the
// file descriptors passed alongside it (at most maxPassedFDs are received; the kernel
// closes any beyond). On error every received descriptor is closed.
func readHeaderFDs(c net.Conn, hdr []byte) ([]int, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		_, err := io.ReadFull(c, hdr)
		return nil, err
	}
	var fds []int
	oob := make([]byte, unix.CmsgSpace(4*maxPassedFDs))
	for n := 0; n < len(hdr); {
		m, oobn, _, _, err := uc.ReadMsgUnix(hdr[n:], oob)
		n += m
		if oobn > 0 {
			fds = append(fds, parseRights(oob[:oobn])...)
		}
		if err != nil {
			closeFDs(fds)
			if n > 0 && errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return fds, nil
}

// parseRights returns the descriptors in the SCM_RIGHTS messages of oob.
func parseRights(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for i := range msgs {
		if got, err := unix.ParseUnixRights(&msgs[i]); err == nil {
			fds = append(fds, got...)
		}
	}
	return fds
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
}

// openBodyPipe checks that fd, passed by the server, is the read end of a pipe and
// returns it as a file polled by the runtime (deadlines and Close interrupt a read). It
// closes fd on error.
func openBodyPipe(fd int) (*os.File, error) {
	var st unix.Stat_t
	err := unix.Fstat(fd, &st)
	if err == nil && st.Mode&unix.S_IFMT != unix.S_IFIFO {
		err = fmt.Errorf("the descriptor passed is not a pipe (mode %o)", st.Mode)
	}
	if err == nil {
		var fl int
		if fl, err = unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err == nil && fl&unix.O_ACCMODE != unix.O_RDONLY {
			err = errors.New("the pipe passed is not open for reading only")
		}
	}
	if err == nil {
		err = unix.SetNonblock(fd, true)
	}
	if err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), "transfer-pipe"), nil
}
