// Package workerenv is the contract between a node agent (rayctl start) and the processes
// it starts: the environment variables that put a program into worker mode, or hand a
// submitted driver its job's settings. The agent writes them (Worker.Environ); ray.Init
// reads them (FromEnv). Nothing else should spell these names.
package workerenv

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// The variables.
const (
	// Address is the cluster's GCS: etcd client endpoints, host:port, comma-separated
	// (Ray's RAY_ADDRESS). A driver with it set joins that cluster.
	Address = "RAY_ADDRESS"
	// Mode "worker" selects worker mode: ray.Init joins the cluster as a worker process of
	// Job on the agent's machine, hosts the job's tasks and actors, and never returns.
	Mode = "RAY_GO_MODE"
	// Job is the job a worker process serves.
	Job = "RAY_GO_JOB_ID"
	// Agent is the ID of the node agent that started the process.
	Agent = "RAY_GO_AGENT_ID"
	// Resources is the worker's resources as a JSON object, e.g. {"CPU":2,"accel":1}.
	Resources = "RAY_GO_RESOURCES"
	// ObjectStoreBytes is the worker's object store budget in bytes.
	ObjectStoreBytes = "RAY_GO_OBJECT_STORE_BYTES"
	// Dir is the directory the process keeps its files in (spill files); the agent
	// removes it after the process exits.
	Dir = "RAY_GO_NODE_DIR"
	// Submission is set for a driver started by `rayctl job submit`: its submission ID,
	// recorded in the job it registers.
	Submission = "RAY_GO_SUBMISSION_ID"
	// Namespace is the GCS key namespace of the cluster (default: none).
	Namespace = "RAY_GO_GCS_NAMESPACE"
)

// ModeWorker is the value of Mode that selects worker mode.
const ModeWorker = "worker"

// Worker is what a worker process needs to know.
type Worker struct {
	Address          []string
	Namespace        string
	Job              string
	Agent            string
	Resources        map[string]float64
	ObjectStoreBytes int64
	Dir              string
}

// Environ returns the variables for a worker process (to append to os.Environ()).
func (w Worker) Environ() []string {
	res, _ := json.Marshal(w.Resources)
	env := []string{
		Address + "=" + strings.Join(w.Address, ","),
		Mode + "=" + ModeWorker,
		Job + "=" + w.Job,
		Agent + "=" + w.Agent,
		Resources + "=" + string(res),
		ObjectStoreBytes + "=" + strconv.FormatInt(w.ObjectStoreBytes, 10),
		Dir + "=" + w.Dir,
	}
	if w.Namespace != "" {
		env = append(env, Namespace+"="+w.Namespace)
	}
	return env
}

// FromEnv reads worker mode from an environment (getenv: os.Getenv, which only the root
// package calls): ok is false when Mode is not "worker".
func FromEnv(getenv func(string) string) (w Worker, ok bool, err error) {
	if getenv(Mode) != ModeWorker {
		return Worker{}, false, nil
	}
	w = Worker{
		Address:   SplitAddress(getenv(Address)),
		Namespace: getenv(Namespace),
		Job:       getenv(Job),
		Agent:     getenv(Agent),
		Dir:       getenv(Dir),
	}
	if len(w.Address) == 0 || w.Job == "" {
		return w, true, fmt.Errorf("workerenv: worker mode needs %s and %s", Address, Job)
	}
	if s := getenv(Resources); s != "" {
		if err := json.Unmarshal([]byte(s), &w.Resources); err != nil {
			return w, true, fmt.Errorf("workerenv: %s=%q: %w", Resources, s, err)
		}
	}
	if s := getenv(ObjectStoreBytes); s != "" {
		if w.ObjectStoreBytes, err = strconv.ParseInt(s, 10, 64); err != nil {
			return w, true, fmt.Errorf("workerenv: %s=%q: %w", ObjectStoreBytes, s, err)
		}
	}
	return w, true, nil
}

// SplitAddress splits a comma-separated endpoint list, dropping empty parts and spaces.
func SplitAddress(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
