//go:build unix

package perf

import (
	"os"
	"strings"
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time (user plus system) this process has used so far.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// LoadAvg returns the machine's load averages ("" where unknown): a busy neighbour on a
// 2-core machine explains a noisy figure.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
