// Package netx holds the network checks the runtime shares.
package netx

import (
	"errors"
	"net"
	"syscall"
	"time"
)

// Refused reports whether a new TCP connection to addr is refused: no process listens there
// (a killed process's port, on a machine that is up). A timeout or any other error is not a
// refusal: the peer may be slow or the network cut, not the process dead.
func Refused(addr string, timeout time.Duration) bool {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err == nil {
		conn.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}
