//go:build !linux

package main

import (
	"os/exec"
	"runtime"
)

// allowedCPUs lists the CPUs this process may run on: without sched_getaffinity, the
// first NumCPU.
func allowedCPUs() ([]int, error) {
	cpus := make([]int, runtime.NumCPU())
	for i := range cpus {
		cpus[i] = i
	}
	return cpus, nil
}

// startPinned starts cmd; only GOMAXPROCS (set by the caller) limits it on this system.
func startPinned(cmd *exec.Cmd, _ []int) error { return cmd.Start() }

const pinned = false
