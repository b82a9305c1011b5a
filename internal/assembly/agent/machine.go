package agent

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ray-go/ray/tasks/machine"
	"github.com/ray-go/ray/tasks/sched"
)

// maxSocketPath: a Unix socket's path must fit sockaddr_un (108 bytes on Linux, with its
// terminating zero; 104 on some systems).
const maxSocketPath = 100

// serveMachine serves the machine's resource ledger (package tasks/machine) on
// <SessionDir>/machine.sock, or, when that path is too long for a socket, in a new 0700
// directory under the system's temporary directory. Worker processes get its path
// (workerenv.Machine) and obtain their resources there, so the jobs on this machine share
// Config.Resources instead of each counting them as its own, and their object stores
// share Config.ObjectStoreBytes.
func (a *Agent) serveMachine() error {
	total, err := sched.FromMap(a.cfg.Resources)
	if err != nil {
		return fmt.Errorf("agent: resources %v: %w", a.cfg.Resources, err)
	}
	path := filepath.Join(a.cfg.SessionDir, "machine.sock")
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if len(path) > maxSocketPath {
		dir, err := os.MkdirTemp("", "ray-go-m-")
		if err != nil {
			return fmt.Errorf("agent: a directory for the machine ledger's socket: %w", err)
		}
		a.machineDir = dir
		path = filepath.Join(dir, "machine.sock")
	}
	ledger := machine.NewLedger(total)
	// The machine's object store budget, shared by the stores of every worker process
	// (each holds a grant of it, objects/shard Config.Grant), not a budget for each.
	ledger.SetStore(a.cfg.ObjectStoreBytes)
	s, err := machine.Serve(path, ledger, a.log)
	if err != nil {
		return fmt.Errorf("agent: the machine ledger: %w", err)
	}
	a.machine = s
	return nil
}

// stopMachine stops serving the ledger (after the worker processes stopped).
func (a *Agent) stopMachine() {
	if a.machine != nil {
		_ = a.machine.Close()
	}
	if a.machineDir != "" {
		_ = os.RemoveAll(a.machineDir)
	}
}
