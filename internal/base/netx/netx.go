// Package netx holds the network checks the runtime shares.
package netx

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

// Ports for tests and benchmarks that must name a port before the process that listens on
// it starts (a head agent: its GCS port and the join port after it). A port the kernel
// hands out for ":0" is in the ephemeral range, which every outgoing connection on the
// machine draws from too: between the test closing its probe and the agent listening,
// another process's connection can take it ("port in use", seen under parallel test
// packages). FreePorts picks outside that range.
const (
	freePortLow  = 20000 // below Linux's default ephemeral range (32768-60999)
	freePortHigh = 32000
)

var freePortNext atomic.Uint32

// FreePorts returns a port p on host such that p, p+1, ..., p+n-1 could all be listened
// on a moment ago, chosen below the ephemeral range, starting at a point that differs per
// process and moving on with each call. It fails after trying the whole range.
func FreePorts(host string, n int) (int, error) {
	span := uint32(freePortHigh - freePortLow)
	if freePortNext.Load() == 0 {
		freePortNext.CompareAndSwap(0, uint32(os.Getpid())*7919%span+1)
	}
	for range span {
		p := freePortLow + int(freePortNext.Add(uint32(n))%span)
		if p+n > freePortHigh {
			continue
		}
		ok := true
		for i := 0; i < n && ok; i++ {
			l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p+i)))
			if err != nil {
				ok = false
				continue
			}
			l.Close()
		}
		if ok {
			return p, nil
		}
	}
	return 0, fmt.Errorf("netx: no %d free consecutive ports on %s in %d-%d", n, host, freePortLow, freePortHigh)
}

// MachineID names this machine for as long as it is up: Linux's boot ID, "" where there
// is none. Processes with the same one run on one kernel (containers of one host too: a
// peer's Unix socket path may still not exist here, so its user must fall back).
func MachineID() string {
	machineOnce.Do(func() {
		b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
		if err == nil && len(b) <= 64 {
			machineID = strings.TrimSpace(string(b))
		}
	})
	return machineID
}

var (
	machineOnce sync.Once
	machineID   string
)
