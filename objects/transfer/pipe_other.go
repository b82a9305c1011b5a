//go:build !linux

package transfer

import (
	"errors"
	"io"
	"net"
	"os"
	"time"
)

// pipeSupported: elsewhere than on Linux the body always goes through the socket.
const pipeSupported = false

var errNoPipe = errors.New("bodies through a pipe are supported on Linux only")

func newBodyPipe() (int, *os.File, error) { return -1, nil, errNoPipe }

func sendHeaderWithFD(net.Conn, []byte, int) error { return errNoPipe }

func vmspliceAll(*os.File, []byte, time.Duration, bool) error { return errNoPipe }

func readHeaderFDs(c net.Conn, hdr []byte) ([]int, error) {
	_, err := io.ReadFull(c, hdr)
	return nil, err
}

func closeFDs([]int) {}

func openBodyPipe(int) (*os.File, error) { return nil, errNoPipe }
